"""Text analysis, below every stage: the languages the app reads (`languages`), their word lists (`words`)
and the analyzer that turns text into BM25 terms (`lexical`: folding, stopwords, stemming, language
identification).

In: a string. Out: its language, its terms, its words of a kind. Reading, indexing and searching all use it;
it imports nothing else of rag but the settings' constants.
"""
