"""What the chat page draws for a turn, as data: pure functions from a search, its gate and its answer.

A turn is a question's `rag.SearchResult`, the `rag.Gated` the gate made of it at the settings shown, and
(when it was answered) its `rag.Answer`. From them this module computes everything the page puts on screen:

- `retrieval_table()`, `evidence_line()` and the notes behind it: `chat_table`'s (named here too);
- `refusal_lines()`: a refusal's header, its sentence and its best candidate, and its details one click away;
- `answer_notes()`: what the citation check and the generator say beside an answer (`Note`s);
- `citation_cards()`: each source card's header, link, anchor and quote (`Card`), a sheet's rows as a table;
- `sources_heading()`, `timing_caption()`, `chosen_markdown()`, `threshold_caption()` (and its tooltip,
  `threshold_help()`), `empty_chat_note()`: the page's other lines.

Everything that comes from a document or a generator is escaped (`inert.md_escape`) before it reaches
Markdown. There is no Streamlit here; the page decides where each piece goes.

Not here: searching, gating or answering (the engine's, `rag`), the turns and their settings
(`chat_session`), drawing (`app/pages/chat.py`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import rag
from rag.deciding.explain import ocr_note, paraphrase_note, split_note, unsaid_note
from app.inert import md_escape
# The retrieval table and its notes are `chat_table`'s; named here too, so the page reads one presenter.
from app.chat_table import (COLUMNS, FUSED_HELP, LEAD_COLUMNS, MARKDOWN, VERDICT_COLOUR, Column,  # noqa: F401
                            Table, across_note, evidence_caption, evidence_line, fusion_note, retrieval_label,
                            retrieval_table, unknown_names_note)
from rag.reading.canonical import sheet_table
from rag.reading.document import rows_span


REFUSED_BADGE = ":orange-badge[:material/block: refused]"
LLM_REFUSED = f"{REFUSED_BADGE} the LLM found no answer in the sources it read"
NO_LLM_SERVER = ("No LLM server is configured, so answers stay extractive. Set `llm_base_url` in rag.toml "
                 "(or the `RAG_LLM_BASE_URL` variable) to an OpenAI-compatible server, e.g. "
                 "`http://127.0.0.1:11434/v1` for Ollama.")
# The sidebar's help texts, by widget.
HELP = {
    "threshold": "A passage is evidence only when its cosine distance to the question is at or under this, and "
                 "it holds the question's own words. Lower is stricter: fewer answers, fewer bluffs. By default "
                 "it is calibrated on this folder for the question's language.",
    "max_chunks": "At most this many passages under the threshold are used as evidence.",
    "candidates": "How many passages the search returns (dense and BM25, fused). Changing it searches the last "
                  "question again.",
    "answer_mode": "extractive: the best sentences of the kept passages, each with its [n]; works offline. llm: a "
                   "local OpenAI-compatible server writes the answer from the same passages, citing them by "
                   "number.",
}
STILL_INDEXING = ("Files you added are still being indexed: this answer comes from what was indexed before; "
                  "ask again once the sidebar shows them indexed.")


@dataclass(frozen=True)
class Note:
    """One line the page draws: `kind` is the element ("caption", "info", "warning"), `text` its Markdown
    (already escaped), `icon` a Material icon name or None (a caption takes none)."""

    kind: str
    text: str
    icon: str | None = None


@dataclass(frozen=True)
class Refusal:
    """A refusal as drawn: `header` (Markdown, with its badge), `text` (the gate's sentence, plain text),
    `lines` (Markdown: its best candidate, the search's first row, or what an empty folder says) and
    `details` (Markdown, one click away: the closest row, the threshold that would let a passage through or
    why none would, the hint to ask in another language)."""

    header: str
    text: str
    lines: list[str]
    details: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Card:
    """One citation card: `uncited` (a caption, or None), `anchor` (the HTML target of the answer's [n]
    links: our own id, nothing else), `header` (Markdown), the `link` caption and its `link_help`, the
    viewer link's `label`, and the `quote` (plain text: for a sheet, only the rows the answer quotes, the rows
    its range names, which `table` shows under their header)."""

    citation: rag.Citation
    uncited: str | None
    anchor: str
    header: str
    link: str
    link_help: str
    label: str
    quote: str
    # A sheet's quote as a table: (header, rows), each cell escaped for Markdown (st.table renders it); None else.
    table: tuple[list[str], list[list[str]]] | None = None


# --- a refusal ------------------------------------------------------------------------------------------

def refusal_lines(gated: rag.Gated, indexing: int) -> Refusal:
    """What a refusal shows: its header and the gate's sentence, then its best candidate (the search's first
    row) with what it lacked and what would let it through; the rest one click away (`Refusal.details`). The words are `rag.deciding.explain`'s, the same the CLI
    prints; the chat adds only its marks (`MARKDOWN`). `indexing`: files still being indexed (at start-up
    the folder is still being read: the refusal says so, not "empty")."""
    e = rag.explain(gated, indexing=indexing, markup=MARKDOWN)
    return Refusal(header=f"{REFUSED_BADGE} {e.reason}", text=e.refusal, lines=list(e.lines[1:]),
                   details=list(e.details))


# --- an answer ------------------------------------------------------------------------------------------

def llm_refused(ans: rag.Answer) -> bool:
    """The LLM read the sources and wrote the refusal sentence: shown as a refusal, with the sources read."""
    return ans.refused and ans.mode == "llm"


def answer_notes(ans: rag.Answer, gated: rag.Gated, mode: str) -> list[Note]:
    """What is said under an answer, in order: the generator's note (a warning when the LLM asked for
    could not answer), the citation check's flags, the close-paraphrase or unsaid-words caution, the
    split-documents caution, and an LLM prompt's token count."""
    notes: list[Note] = []
    if ans.note:
        fell_back = mode == "llm" and ans.mode != "llm"
        notes.append(Note("warning", md_escape(ans.note), ":material/cloud_off:") if fell_back else
                     Note("info", md_escape(ans.note), ":material/info:"))
    if ans.flags:
        notes.append(Note("warning", "Citation check:\n" + "\n".join(f"- {md_escape(f)}" for f in ans.flags),
                          ":material/rule:"))
    for note in (paraphrase_note(gated), unsaid_note(gated)):  # at most one of them is said
        if note and not ans.refused:
            notes.append(Note("caption", ":material/help: " + md_escape(note)))
    if (split := split_note(gated)) and not ans.refused:
        notes.append(Note("warning", md_escape(split), ":material/call_split:"))
    if ans.prompt_tokens is not None:
        notes.append(Note("caption", f"prompt {ans.prompt_tokens} tokens (tiktoken)"))
    return notes


def chosen_markdown(ans: rag.Answer) -> str:
    """Which sentences the extractive answer chose, and why: their similarity to the question. A list of
    escaped lines (one table per answer is the retrieval table's place)."""
    ranks = {c: i + 1 for i, c in enumerate(sorted(ans.chosen, key=lambda c: -c.score))}
    lines = [f"- similarity **{c.score:.3f}** (rank {ranks[c]}) · source **[{c.n}]** · "
             f"{md_escape(' '.join(c.text.split()))}" for c in ans.chosen]
    which = "the sentence" if len(ans.chosen) == 1 else f"the {len(ans.chosen)} sentences"
    return (f"**Sentences chosen for the answer**: {which} of the kept passages "
            "closest in meaning to the question (cosine similarity with the same embedding model), no "
            "repeats, in source order\n\n" + "\n".join(lines))


def sources_heading(gated: rag.Gated, refused_by_llm: bool) -> str:
    """The line above the citation cards."""
    title = "Sources the LLM read" if refused_by_llm else "Sources"
    return (f"**{title}** · threshold {gated.threshold:.3f} · {len(gated.citations)} of "
            f"{len(gated.candidates)} candidates kept")


def anchor(turn_no: int, n: int) -> str:
    """The id of citation [n]'s card in turn `turn_no` (1-based).

    >>> anchor(2, 3)
    'cite-2-3'
    """
    return f"cite-{turn_no}-{n}"


def citation_cards(turn_no: int, gated: rag.Gated, folder: Path, numbers: set[int] | None = None,
                   cited: set[int] | None = None, ocr_bar: float = rag.settings.Tuning.ocr_low,
                   ans: rag.Answer | None = None) -> list[Card]:
    """The kept passages' cards, as the answer `ans` quotes them (a sheet's at the rows quoted), else the gate's; only
    `numbers` if given (the sources an LLM read); one not in `cited` says so; an OCR'd quote, how sure (`ocr_note`)."""
    cards = []
    for c in (ans.citations if ans is not None and ans.citations else gated.citations):
        if numbers is not None and c.n not in numbers:
            continue
        # A trial read a source listed under an answer that never cites it as part of the answer.
        uncited = (f"[{c.n}] passed the tests, but the answer does not cite it"
                   if cited is not None and c.n not in cited else None)
        quote = rag.unwrap(c.quote)  # a PDF's wrapped lines as prose; its words exactly
        table = None
        if c.rows:  # a sheet's rows: those the answer quotes, under their header
            spans = [(x.start, x.end) for x in (ans.chosen if ans is not None else []) if x.n == c.n]
            span = rows_span(c.rows, min(s for s, _ in spans), max(e for _, e in spans), len(c.quote)) \
                if spans else None
            quote = c.quote[span[0]:span[1]] if span else c.quote
            head, rows = sheet_table(quote)
            if rows:
                table = ([md_escape(h) for h in head], [[md_escape(x) for x in r] for r in rows])
        cards.append(Card(
            citation=c, uncited=uncited, table=table,
            anchor=f'<span id="{anchor(turn_no, c.n)}"></span>',
            header=(f"**[{c.n}]** {md_escape(c.doc_name)} · {md_escape(c.locator)} · "
                    + (f"in another language: multilingual distance **{c.multilingual_distance:.3f}** "
                       f"(cosine distance {c.distance:.3f})" if c.multilingual_distance is not None else
                       f"cosine distance **{c.distance:.3f}**")
                    + (" · " + md_escape(ocr_note(c.ocr_confidence, c.ocr_lowest, ocr_bar))
                       if c.ocr_confidence is not None else "")),
            link=f"link: {md_escape(c.link)}",
            link_help=md_escape((Path(folder) / c.doc_name).resolve().as_uri() + c.fragment),
            label=f"[{c.n}] Open {c.doc_name} at the passage ({c.fragment})",
            quote=quote))
    return cards


def timing_caption(result: rag.SearchResult, ans: rag.Answer | None, ms: float | None,
                   frozen_at: float | None = None) -> str:
    """How long the search (by step) and the answer took, and how many chunks were searched; an earlier
    turn also says the threshold it was answered at (`frozen_at`).

    >>> result = rag.SearchResult("q", "q", [], {}, timings_ms={"embed": 12.4, "dense": 3.0}, searched_chunks=40)
    >>> timing_caption(result, None, None, frozen_at=0.5)
    'search 15 ms (embed 12, dense 3) · 40 chunks searched · answered at threshold 0.500'
    """
    timing = result.timings_ms
    answered = f" · {ans.mode} answer {ms:.0f} ms" if ans is not None else ""
    return (f"search {sum(timing.values()):.0f} ms ({', '.join(f'{k} {v:.0f}' for k, v in timing.items())})"
            f"{answered} · {result.searched_chunks} chunks searched"
            + ("" if frozen_at is None else f" · answered at threshold {frozen_at:.3f}"))


# --- the page's other lines -----------------------------------------------------------------------------

def threshold_caption(choice, person_set: bool) -> str:
    """Under the slider, in a line or two: where its value comes from (`choice`: the engine's
    `ThresholdChoice`), its first clause only; the whole derivation is `threshold_help`'s tooltip.

    >>> from types import SimpleNamespace as C
    >>> note = ("calibrated for English: 0.713, where 20 of 400 unrelated questions would pass (budget 5% for each "
    ...         "kind: everyday, general knowledge); held at the floor")
    >>> print(threshold_caption(C(value=0.713, note=note, source="calibrated", calibrated=0.713), False))
    Calibrated for English\\: 0\\.713
    >>> print(threshold_caption(C(value=0.64, note="no question yet, so the strictest calibrated value: " + note,
    ...                           source="calibrated", calibrated=0.64), False))
    No question yet\\: 0\\.640
    """
    if person_set:
        return (f"Set by you (overrides the {'settings' if choice.source != 'calibrated' else 'calibration'}"
                + (f"; calibrated: {choice.calibrated:.3f})" if choice.calibrated is not None else ")"))
    first = re.split(r", where |, so |; | \(", choice.note, maxsplit=1)[0]
    if f"{choice.value:.3f}" not in first:
        first = f"{first}: {choice.value:.3f}"
    return md_escape(first[:1].upper() + first[1:])


def threshold_help(choice, person_set: bool) -> str:
    """The slider's derivation in full, for the caption's tooltip (`threshold_caption`)."""
    note = choice.note[:1].upper() + choice.note[1:]
    return md_escape(f"{HELP['threshold']}\n\nIn force now: {note}." if not person_set else
                     f"{HELP['threshold']}\n\nSet by you; the calibration says: {note}.")


def intro_caption(folder: Path) -> str:
    """Under the page's title."""
    return (f"Folder: {md_escape(str(folder))} · answers come only from passages under the threshold "
            "that hold the question's own words; every answer shows its evidence, every refusal its reason.")


def empty_chat_note(chunks: int, documents: int, indexing: int) -> Note:
    """What an empty chat says: indexing under way (the first start), an empty folder, or its size.

    >>> empty_chat_note(120, 8, 0).text
    '8 documents, 120 passages. Ask a question below.'
    """
    if chunks == 0 and indexing:
        # The first start indexes the folder: "no indexed documents yet, drop files" read as an empty folder.
        return Note("info", "Indexing the folder's files. You can ask already: a question asked now is "
                            "answered once they are indexed.", ":material/hourglass_top:")
    if chunks == 0:
        return Note("info", "The folder has no indexed documents yet. Drop your documents, slides, sheets, "
                            "web pages or e-mail in the sidebar.")
    return Note("info", f"{documents} documents, {chunks} passages. Ask a question below.")
