"""The retrieval table as data, and the notes above it: pure functions from a search and its gate.

- `retrieval_table()`: the table's rows, columns, column configuration and row colours (`Table`): what a person
  scans first (document, place, a preview, the verdict in one line: `rag.deciding.explain.verdict_line`), the
  numbers after;
- `evidence_line()`: the one line above it; `evidence_caption()`, `fusion_note()`, `unknown_names_note()`: the
  derivation behind that line (its tooltip);
- `retrieval_label()`: the expander's title.

Verdicts are the gate's own constants (`rag.KEPT` is the label "kept"); only their colours are chosen here.
Everything that comes from a document is escaped (`inert.md_escape`) before it reaches Markdown. There is no
Streamlit here: a `Column` names a Streamlit column type by `kind`, and the widget makes it one.

Not here: the rest of a turn (`chat_view`), drawing (`chat_widgets`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import rag
from rag.deciding.explain import names_note, percent, verdict_line
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

# What a person scans comes first (document, place, preview, verdict: in view at 1280 px without scrolling),
# the numbers after: a trial at 1440 px found the right row's document off the right edge, behind ten numbers.
LEAD_COLUMNS = ["document", "place", "preview", "verdict"]
# Their widths in pixels: the four together fit the chat's column at 1280 px with the sidebar open (728 px there).
LEAD_WIDTHS = (130, 110, 180, 260)  # the verdict widest: its one line says what a row lacked
COLUMNS = LEAD_COLUMNS + ["fused", "score", "dense", "BM25", "distance", "margin", "support", "needs", "lacks"]
JUDGE_COLUMNS = ["judge", "judge rank"]  # after the verdict, when the judge read the rows
MODEL_COLUMNS = ["likely"]  # after the verdict, when the support model weighed the rows (a language it reads)
SIDE_COLUMNS = ["multilingual", "multi distance"]  # after BM25's, when the multilingual side was searched
COLUMN_KINDS = ("number", "text", "progress")
NO_RANK = "–"  # a side that did not return the row (a null cell would read "None")

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
        "place": one_line(rag.deciding.citations.locator(c)
                            + (f" · OCR {c.ocr_confidence:.0f}%" if c.ocr_confidence is not None else ""), 60),
        "preview": one_line(c.content, 110),
        "verdict": verdict_line(gated, c, verdict),  # the gate's label, then what it lacked or needs
    }


def retrieval_table(gated: rag.Gated, result: rag.SearchResult) -> Table:
    """The table of every candidate with its ranks, distance, support and verdict. The judge's columns
    come first when the judge read the rows, and are left out when it did not (judge off)."""
    judged = any(c.judge is not None for c in gated.candidates)
    weighed = any(c.supported is not None for c in gated.candidates)
    at = len(LEAD_COLUMNS)
    columns = COLUMNS[:at] + (JUDGE_COLUMNS if judged else []) + (MODEL_COLUMNS if weighed else []) + COLUMNS[at:]
    if any(c.side_distance is not None for c in gated.candidates):
        at = columns.index("BM25") + 1
        columns = columns[:at] + SIDE_COLUMNS + columns[at:]
    rows = [{k: full[k] for k in columns}
            for full in (_row(c, verdict, gated) for c, verdict in zip(gated.candidates, gated.verdicts))]
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
        "document": Column("text", "document", dict(width=LEAD_WIDTHS[0])),
        "place": Column("text", "place", dict(
            width=LEAD_WIDTHS[1], help="Where the passage sits: its heading, page, slide, message or a sheet's cells")),
        "preview": Column("text", "preview", dict(width=LEAD_WIDTHS[2])),
        "verdict": Column("text", "verdict", dict(
            width=LEAD_WIDTHS[3],
            help=f"The gate's verdict, then what the row lacked and what would let it through: kept (at most {gated.max_chunks}) / under threshold, over cap / over threshold / "
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


def evidence_line(gated: rag.Gated, result: rag.SearchResult) -> str:
    """Above the table, in one line: what a row needed to be kept, and the words looked for. The rule's
    derivation (close shares, the rise, where the calibrated distances come from) and the fusion's weights
    are `evidence_caption`'s and `fusion_note`'s, in its tooltip.

    >>> result = rag.SearchResult("q", "q", [], {"dense": 0.6, "bm25": 0.4}, terms=("index", "stored"))
    >>> print(evidence_line(rag.gate(result, 0.5, 4, rag.SupportRule(0.5)), result))
    Evidence: cosine distance ≤ 0.500 and enough of the question's own words. Words looked for: index\\, stored
    """
    rule = gated.rule
    test = ("the judge's score" if rule.judging else "the support model's probability" if rule.modelling else
            "enough of the question's own words")
    return (f"Evidence: cosine distance ≤ {gated.threshold:.3f} and {test}. Words looked for: "
            + (md_escape(", ".join(result.terms)) or "none"))


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
