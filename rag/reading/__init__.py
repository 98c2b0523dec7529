"""Reading: a file's bytes into the canonical text the rest of the app cites.

In: a file (its bytes and name). Out: `Extracted` (`document`): the canonical text, its title, its sections,
and a map from offsets back to the format's own places (a PDF's pages and character boxes), or an
`ExtractionError` with a reason a person can read. `extract` picks the reader by the file's kind; `pdf` reads
PDFs; `viewer` asks the same reader to show a place again, so a citation opens at its quote.

Does not chunk, embed or store anything: that is indexing.
"""
