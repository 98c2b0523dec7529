"""What the chat page draws for a turn, as data: pure functions from a search, its gate and its answer.

A turn is a question's `rag.SearchResult`, the `rag.Gated` the gate made of it at the settings shown, and
(when it was answered) its `rag.Answer`. From them this module computes everything the page puts on screen:

- `retrieval_table()`: the retrieval table's rows, columns, column configuration and row colours (`Table`);
- `evidence_caption()`, `fusion_note()`, `unknown_names_note()`: the notes above the table;
- `refusal_lines()`: a refusal's header, its text and the lines that say what would let a passage through;
- `answer_notes()`: what the citation check and the generator say beside an answer (`Note`s);
- `citation_cards()`: each source card's header, link, anchor and quote (`Card`);
- `sources_heading()`, `timing_caption()`, `retrieval_label()`, `chosen_markdown()`,
  `threshold_caption()`, `empty_chat_note()`: the page's other lines.

Verdicts are the gate's own constants (`rag.KEPT` is the label "kept"); only their colours are chosen here.
Everything that comes from a document or a generator is escaped (`inert.md_escape`) before it reaches
Markdown. There is no Streamlit here: a `Column` names a Streamlit column type by `kind`, and the page makes
it one; the page decides where each piece goes.

Not here: searching, gating or answering (the engine's, `rag`), the turns and their settings
(`chat_session`), drawing (`app/pages/chat.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import rag
from rag.deciding.explain import names_note, ocr_note, paraphrase_note, percent, split_note, unsaid_note
from app.inert import md_escape, one_line


# The chat's marks on rag.deciding.explain's lines: document text escaped, what to look at in bold.
MARKDOWN = rag.Markup(value=md_escape, strong=lambda text: f"**{md_escape(text)}**",
                      tool=lambda text: f"*{md_escape(text)}*")


# The background of a row's verdict cells, by the gate's verdict.
VERDICT_COLOUR = {rag.KEPT: "background-color: #e3f1e6", rag.CAPPED: "background-color: #fbf0d9", rag.OVER: "",
                  rag.UNSUPPORTED: "background-color: #f6e3e3", rag.OFF_SUBJECT: "background-color: #f6e3e3",
                  rag.JUDGED_OUT: "background-color: #f6e3e3", rag.WEIGHED_OUT: "background-color: #f6e3e3"}

FUSED_HELP = {
    "zscore": "Each side's score as standard deviations above that side's mean over its candidates, weighted "
              "and added (a side that did not return the passage counts as its lowest)",
    "minmax": "Each side's score scaled to 0..1 over its candidates, weighted and added",
    "rrf": "Reciprocal rank fusion: the sum over both sides of weight / (k + rank)",
}
FUSION_NAME = {"zscore": "z-scores", "minmax": "min-max scaled scores", "rrf": "reciprocal ranks"}

COLUMNS = ["fused", "score", "dense", "BM25", "distance", "margin", "support", "needs", "lacks", "document",
           "section", "preview", "verdict"]
JUDGE_COLUMNS = ["judge", "judge rank"]  # first, when the judge read the rows
MODEL_COLUMNS = ["likely"]  # first, when the support model weighed the rows (a language it reads)
SIDE_COLUMNS = ["multilingual", "multi distance"]  # after BM25's, when the multilingual side was searched
COLUMN_KINDS = ("number", "text", "progress")
NO_RANK = "–"  # a side that did not return the row (a null cell would read "None")

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
class Column:
    """A table column's configuration: `kind` is one of `COLUMN_KINDS` (Streamlit's NumberColumn,
    TextColumn, ProgressColumn), `options` its keyword arguments (help, format, width, bounds)."""

    kind: str
    label: str
    options: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in COLUMN_KINDS:
            raise ValueError(f"unknown column kind {self.kind!r}; valid: {', '.join(COLUMN_KINDS)}")


@dataclass
class Table:
    """The retrieval table: one row per candidate, in fused (or the judge's) order. `colours` holds one CSS
    background per row, painted on the `coloured` columns."""

    rows: list[dict]
    columns: list[str]
    config: dict[str, Column]
    colours: list[str]
    coloured: list[str]


@dataclass(frozen=True)
class Refusal:
    """A refusal as drawn: `header` (Markdown, with its badge), `text` (the gate's sentence, plain text)
    and `lines` (Markdown: the closest candidate, and the threshold that would let a passage through, or
    why none would)."""

    header: str
    text: str
    lines: list[str]


@dataclass(frozen=True)
class Card:
    """One citation card: `uncited` (a caption, or None), `anchor` (the HTML target of the answer's [n]
    links: our own id, nothing else), `header` (Markdown), the `link` caption and its `link_help`, the
    viewer link's `label`, and the `quote` (plain text)."""

    citation: rag.Citation
    uncited: str | None
    anchor: str
    header: str
    link: str
    link_help: str
    label: str
    quote: str


# --- the retrieval table --------------------------------------------------------------------------------

def _rank(r: int | None) -> str:
    return NO_RANK if r is None else str(int(r))


def _row(c: rag.Candidate, verdict: str, gated: rag.Gated) -> dict:
    return {
        # As text, like the ranks: a row the judge did not read (below `judge_top`) reads "–", where a null
        # in a number column reads "None" (Streamlit shows no Styler's na_rep there).
        "judge": NO_RANK if c.judge is None else f"{c.judge:.2f}",
        "judge rank": _rank(c.judge_rank),
        "likely": c.supported,
        "fused": c.fused_rank,
        "score": c.fused_score,
        "dense": _rank(c.dense_rank),
        "BM25": _rank(c.bm25_rank),
        "multilingual": _rank(c.side_rank),
        "multi distance": c.side_distance,
        "distance": c.distance,
        "margin": gated.threshold - c.distance,
        # Whole percents, as `percent` prints them on every other surface (numbers here, for the column to
        # sort): held rounded down, "29%", not "29.24%" beside "100%", and 49.9% (refused for holding under
        # 50%) reads "49%", not "50%"; needed (by its distance: less when close, more far out) rounded up, so
        # a need of 24.5% reads "25%" here as in the refusal, never "24%".
        "support": rag.floored(c.support),
        "needs": rag.ceiled(gated.rule.needed_by(c)),
        "lacks": ", ".join(c.lacking),
        "document": c.doc_name,
        # A sheet's range, a slide or a message when the format has places ("Budget!A14:F16"), else the heading.
        "section": one_line((rag.deciding.citations.locator(c) if c.place else c.section or c.title)
                            + (f" · OCR {c.ocr_confidence:.0f}%" if c.ocr_confidence is not None else ""), 60),
        "preview": one_line(c.content, 110),
        "verdict": verdict,  # the gate's constants are the labels
    }


def retrieval_table(gated: rag.Gated, result: rag.SearchResult) -> Table:
    """The table of every candidate with its ranks, distance, support and verdict. The judge's columns
    come first when the judge read the rows, and are left out when it did not (judge off)."""
    judged = any(c.judge is not None for c in gated.candidates)
    weighed = any(c.supported is not None for c in gated.candidates)
    columns = (JUDGE_COLUMNS if judged else []) + (MODEL_COLUMNS if weighed else []) + COLUMNS
    if any(c.side_distance is not None for c in gated.candidates):
        at = columns.index("BM25") + 1
        columns = columns[:at] + SIDE_COLUMNS + columns[at:]
    rows = [{k: v for k, v in _row(c, verdict, gated).items() if k in columns}
            for c, verdict in zip(gated.candidates, gated.verdicts)]
    coloured = ["verdict", "distance", "margin"] + (["judge"] if gated.rule.judging else
                                                    ["likely"] if gated.rule.modelling else ["support"])
    return Table(rows=rows, columns=columns, config=_columns(gated, result),
                 colours=[VERDICT_COLOUR[v] for v in gated.verdicts], coloured=coloured)


def _columns(gated: rag.Gated, result: rag.SearchResult) -> dict[str, Column]:
    rule, cut, across = gated.rule, gated.rule.judge_cut, gated.across_cut
    top = max([1.0] + [c.distance for c in gated.candidates])
    return {
        "judge": Column("text", f"judge (≥ {cut:.2f})" if cut is not None else "judge", dict(
            width="small",
            help="The judge's score: a model that reads the question and the passage together (over 0: more "
                 "likely to answer than not; –: not read, and so not evidence: it reads the first rows only). "
                 + (f"It decides here: {cut:.2f} or more passes." if cut is not None else
                    "It orders the rows; the word tests decide for this question's language."))),
        "judge rank": Column("text", "judge rank", dict(
            width="small", help="Rank by the judge's score: the order of the rows")),
        "likely": Column("progress", f"likely (≥ {rule.model_cut:.2f})" if rule.modelling else "likely", dict(
            min_value=0.0, max_value=1.0, format="%.2f", width="small",
            help="The support model's probability that the passage answers: it weighs the passage's closeness in "
                 "meaning (the multilingual model reads this language), its BM25 score and the share of the "
                 "question's words it holds, each against the best row. "
                 + (f"It decides here: {rule.model_cut:.2f} or more passes (calibrated on this folder)."
                    if rule.modelling else "The judge decides for this question."))),
        "fused": Column("number", "fused", dict(
            help="Rank after fusing the dense and BM25 sides (the order before the judge)", width="small")),
        "score": Column("number", "score", dict(
            format="%.3f", width="small", help=FUSED_HELP.get(result.fusion, "The fused score"))),
        "dense": Column("text", "dense", dict(
            width="small", help="Rank by cosine distance (–: not in the dense top N)")),
        "BM25": Column("text", "BM25", dict(
            width="small", help="Rank by BM25 keyword score (–: not in BM25's top N)")),
        "multilingual": Column("text", "multilingual", dict(
            width="small", help="Rank by the multilingual model's cosine distance (–: not in its top N). It weighs "
                                "most for a passage in another language than the question's")),
        "multi distance": Column("number", "multi distance" + (f" (≤ {across:.3f}: another language)"
                                                              if across is not None else ""), dict(
            format="%.3f", width="small",
            help="Cosine distance by the multilingual model. A passage in another language than the question's "
                 "is judged by it, not by its cosine distance above: "
                 + (f"at most {across:.3f} (calibrated on this folder like the threshold, or the threshold where "
                    "that is lower), and the names the question writes." if across is not None else
                    "not calibrated yet."))),
        "distance": Column("progress", f"distance (≤ {gated.threshold:.3f} passes)", dict(
            min_value=0.0, max_value=top, format="%.3f",
            help=f"Cosine distance to the question (0 = same meaning). Threshold {gated.threshold:.3f}.")),
        "margin": Column("number", "margin", dict(
            format="%+.3f", help="Threshold minus distance: at or above 0 passes the threshold")),
        "support": Column("progress", f"support (≥ {percent(rule.min_support, needed=True)})", dict(
            min_value=0.0, max_value=1.0, format="percent",
            help="Share of the question's own words (weighted by rarity in the folder) the passage holds. "
                 f"A passage needs: {rag.evidence_rule(rule)}. A question naming something the folder never "
                 "mentions gets no lower share for close passages, and fails every passage when it writes that "
                 "name as a word.")),
        "needs": Column("number", "needs", dict(
            format="percent", width="small",
            help="The support this row needs at its distance: less when very close, more far out")),
        "lacks": Column("text", "lacks", dict(help="The question's words this passage does not hold")),
        "document": Column("text", "document"),
        "section": Column("text", "section"),
        "preview": Column("text", "preview", dict(width="large")),
        "verdict": Column("text", "verdict", dict(
            help=f"kept (at most {gated.max_chunks}) / under threshold, over cap / over threshold / "
                 "judged not to answer (the judge's score under its cut) / "
                 "unlikely to answer (the support model's probability under its cut) / "
                 "lacks the question's words (the support test) / lacks the earlier question's "
                 "subject (a follow-up's passage holding none of the words of the question it follows)")),
    }


# --- the notes above the table ---------------------------------------------------------------------------

def evidence_caption(gated: rag.Gated, result: rag.SearchResult) -> str:
    """What a passage needed to be kept, in one line above the table: the rule in force in the gate's own
    words (`rag.evidence_rule`: the judge's cut where it decides, else the word share), then what this table
    adds to it: where the calibrated distances come from, the words looked for, the multilingual cut in force.

    >>> result = rag.SearchResult("q", "q", [], {"dense": 0.6, "bm25": 0.4}, terms=("index", "stored"))
    >>> print(evidence_caption(rag.gate(result, 0.5, 4, rag.SupportRule(0.5)), result))
    Evidence: cosine distance ≤ 0.500; support at least 50\\%. No lower share for close passages until the folder is calibrated. Words looked for: index\\, stored
    """
    rule = gated.rule
    said = f"Evidence: cosine distance ≤ {gated.threshold:.3f}; {md_escape(rag.evidence_rule(rule))}."
    if rule.modelling:
        return (f"{said} The support model weighs each row (column \"likely\"): its closeness in meaning, its BM25 "
                f"score and the question's words it holds.{across_note(gated)} Words looked for: "
                + (md_escape(", ".join(result.terms)) or "none") + unknown_names_note(result))
    if rule.judging:
        return (f"{said} The rows the judge read come first, ordered by its ranks fused with retrieval's; a row it "
                f"did not read (–) cannot be cited.{across_note(gated)}" + unknown_names_note(result))
    # Where the rule's calibrated distances come from: the caption's own, not the rule's.
    why = ([f"the close distance, {rule.close:.3f}, is nearer than any unrelated question comes to this folder"]
           if rule.relaxes else []) + ([f"past {rule.rise_from:.3f} unrelated questions start to find passages"]
                                       if rule.rises else [])
    said_why = "; ".join(why)
    calibrated = (f" {said_why[:1].upper()}{said_why[1:]}." if why else
                  " No lower share for close passages until the folder is calibrated.")
    judged = (" The rows the judge read come first, ordered by its ranks fused with retrieval's; the word tests "
              "decide." if result.judged else "")
    return (f"{said}{calibrated}{judged}{across_note(gated)} Words looked for: "
            + (md_escape(", ".join(result.terms)) or "none") + unknown_names_note(result))


def across_note(gated: rag.Gated) -> str:
    """A sentence of the evidence caption when some candidate is in another language than the question's: the
    multilingual cut in force for this table (the rule's calibrated cut, or the threshold where lower).

    >>> row = rag.Candidate("c1", "d1", "x.md", "", "", "", 0, 9, None, None, "text", 1, 0.1, 0.7, 1, 1, 1.0,
    ...                     side_distance=0.5, across=True)
    >>> rule = rag.SupportRule(0.5, across_cut=0.55)
    >>> across_note(rag.gate(rag.SearchResult("q", "q", [row], {}), 0.52, 4, rule))
    " Rows in another language than the question's are judged by their multilingual distance, not their cosine distance: at most 0.520 here (the threshold, lower than the cut calibrated on this folder)."
    """
    cut = gated.across_cut
    if cut is None or not any(gated.rule.reads_across(c) for c in gated.candidates):
        return ""
    bound = ("the threshold, lower than the cut calibrated on this folder" if cut < gated.rule.across_cut
             else "the cut calibrated on this folder")
    return (" Rows in another language than the question's are judged by their multilingual distance, not their "
            f"cosine distance: at most {cut:.3f} here ({bound}).")


def unknown_names_note(result: rag.SearchResult) -> str:
    """The end of the evidence caption when the question names something the folder never mentions.

    >>> result = rag.SearchResult("q", "q", [], {}, unknown_names=("ppp",))
    >>> print(unknown_names_note(result))
    . The question names \\"ppp\\", which the folder never mentions: every passage needs the full support, however close
    """
    note = names_note(result.unknown_names, result.absent_names, MARKDOWN)
    return f". {note}" if note else ""


def fusion_note(result: rag.SearchResult, rrf_k: int, across_weight: float = 1.0) -> str:
    """How this question's rankings were fused, with the weights it got (they follow its language; a row in
    another language weighs the multilingual side `across_weight`).

    >>> fusion_note(rag.SearchResult("q", "q", [], {"dense": 0.6, "bm25": 0.4}, fusion="zscore"), 60)
    'Fused: z-scores, weights dense 0.6 · BM25 0.4'
    >>> fusion_note(rag.SearchResult("q", "q", [], {"dense": 1, "bm25": 1}, fusion="rrf"), 60)
    'Fused: reciprocal ranks, k = 60, weights dense 1 · BM25 1'
    """
    w = result.weights
    k = f", k = {rrf_k}" if result.fusion == "rrf" else ""
    note = (f"Fused: {FUSION_NAME.get(result.fusion, result.fusion)}{k}, weights dense {w['dense']:g} · "
            f"BM25 {w['bm25']:g}")
    if w["dense"] < w["bm25"]:
        note += (" (the embedding model does not read this question's language, and the folder holds text in it: "
                 "BM25 decides, the dense side breaks near-ties)")
    if any(c.side_rank is not None for c in result.candidates):
        across = sum(1 for c in result.candidates if c.across)
        note += (f" · multilingual {w.get('multilingual', 0):g}"
                 + (f"; {across} rows in another language than the question's weigh the multilingual side "
                    f"{across_weight:g}" if across else ""))
    if result.feedback_note:
        note += ". " + result.feedback_note
    return note


def retrieval_label(gated: rag.Gated) -> str:
    """The retrieval expander's title."""
    kept = sum(1 for v in gated.verdicts if v == rag.KEPT)
    return f"Retrieval: {len(gated.candidates)} candidates, {kept} kept"


# --- a refusal ------------------------------------------------------------------------------------------

def refusal_lines(gated: rag.Gated, indexing: int) -> Refusal:
    """What a refusal shows: its header and the gate's sentence, then the closest candidate and what
    would let a passage through, or why no threshold would. The words are `rag.deciding.explain`'s, the same the CLI
    prints; the chat adds only its marks (`MARKDOWN`). `indexing`: files still being indexed (at start-up
    the folder is still being read: the refusal says so, not "empty")."""
    e = rag.explain(gated, indexing=indexing, markup=MARKDOWN)
    lines = [line for line in (e.closest, e.threshold, e.empty) if line]
    return Refusal(header=f"{REFUSED_BADGE} {e.reason}", text=e.refusal, lines=lines)


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
        cards.append(Card(
            citation=c, uncited=uncited,
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
            quote=rag.unwrap(c.quote)))  # a PDF's wrapped lines as prose; its words exactly
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
    """Under the slider: where its value comes from (`choice`: the engine's `ThresholdChoice`)."""
    if person_set:
        following = f"calibrated: {choice.calibrated:.3f}" if choice.calibrated is not None else choice.note
        return (f"Set by you (overrides the {'settings' if choice.source != 'calibrated' else 'calibration'}; "
                f"{md_escape(following)})")
    return md_escape(choice.note[:1].upper() + choice.note[1:])


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
