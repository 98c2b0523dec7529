"""The chat: ask the folder, see the evidence or the reason for a refusal, move the threshold live.

Each question is searched once (`engine.search`, with the conversation's earlier queries, so a follow-up
such as "and for PDFs?" is searched in its standalone form, shown as "Searched as: ...", or alone when
only that finds its own words, shown as "Searched on its own: ..."); its
`SearchResult` is kept with the turn in `st.session_state`. Every rerun re-gates the last turn with the
sidebar's threshold and chunk cap (`rag.gate`), so moving the slider changes verdicts, the answer and its
citations without searching again. Answers are remembered per turn by answer mode and kept passages:
a slider move that keeps the same passages shows the remembered answer (an LLM is not asked again), one
that changes them writes a new answer. Earlier turns keep the settings they were last shown with.
Changing the number of candidates does search the last question again (it changes what is retrieved).

Beside each answer: its [n] markers as links to the citation cards below it (numbers that are not
sources stay plain), the citation check's flags, the note (a fallback, sources left out), the prompt's
token count for an LLM answer, and in the retrieval details the sentences an extractive answer chose,
with their scores. An LLM answer streams into its place while it is written.

Everything that comes from a document or a generator (answers, quotes, names, sections, flags) renders
as inert text: escaped Markdown, `st.text`, or cells of `st.dataframe`.

The threshold slider follows the folder's calibration for the question's language until the person moves
it (then it is theirs, on every page, until "Use the calibrated threshold"). The folder box, the uploader
and the indexing queue are the app's shared sidebar (`streamlit_app.py`).
"""

from __future__ import annotations

import time
import uuid

import math

import pandas as pd
import streamlit as st

import rag
import ui
import ui_files
from rag import diagnosis

VERDICT_LABEL = {rag.KEPT: "kept", rag.CAPPED: "under threshold, over cap", rag.OVER: "over threshold",
                 rag.UNSUPPORTED: "lacks the question's words", rag.OFF_SUBJECT: "lacks the earlier question's subject",
                 rag.JUDGED_OUT: "judged not to answer"}
VERDICT_COLOUR = {rag.KEPT: "background-color: #e3f1e6", rag.CAPPED: "background-color: #fbf0d9", rag.OVER: "",
                  rag.UNSUPPORTED: "background-color: #f6e3e3", rag.OFF_SUBJECT: "background-color: #f6e3e3",
                  rag.JUDGED_OUT: "background-color: #f6e3e3"}


# --- sidebar: this page's controls --------------------------------------------------------------------

ws = ui.workspace()
engine = ws.engine
defaults = engine.settings
turns: list[dict] = st.session_state["turns"]  # this chat's, kept across reloads (ui.restore_chat)

# Read first, so that files attached in the chat are indexed (and reported) before the question is asked.
prompt = st.chat_input("Ask a question about your documents (you can attach files too)",
                       accept_file="multiple", key="chat")  # any type: see ui_files.add_documents
prompt_text = ((prompt if isinstance(prompt, str) else prompt.text) or "").strip() if prompt is not None else ""
prompt_files = [] if prompt is None or isinstance(prompt, str) else list(prompt.files or [])

# The threshold the engine would choose for the question on screen (the one being asked, else the last):
# the settings' value when a person set one, else the folder's calibration for the question's language.
# Until the person moves the slider, the slider follows it; once moved, the slider is their choice.
choice = engine.threshold_choice(prompt_text or (turns[-1]["question"] if turns else ""))
st.session_state.setdefault("max_chunks", int(defaults.max_chunks))
st.session_state.setdefault("candidates", int(defaults.candidates))
st.session_state.setdefault("answer_mode", defaults.answer_mode)

with st.sidebar:
    st.subheader("Answering")
    threshold = ui.threshold_slider(
        choice.value, label="Threshold (cosine distance)", min_value=0.0, max_value=1.5, step=0.005,
        format="%.3f",
        help="A passage is evidence only when its cosine distance to the question is at or under this, and it "
             "holds the question's own words. Lower is stricter: fewer answers, fewer bluffs. By default it "
             "is calibrated on this folder for the question's language.")
    if ui.threshold_set() is not None:
        following = (f"calibrated: {choice.calibrated:.3f}" if choice.calibrated is not None else choice.note)
        st.caption(f"Set by you (overrides the {'settings' if choice.source != 'calibrated' else 'calibration'}; "
                   f"{ui.md_escape(following)})")
        st.button("Use the calibrated threshold", icon=":material/restart_alt:", on_click=ui.set_threshold,
                  args=(None,), key="threshold_reset")
    else:
        st.caption(ui.md_escape(choice.note[:1].upper() + choice.note[1:]))
    max_chunks = st.number_input("Max chunks", 1, 20, key="max_chunks",
                                 help="At most this many passages under the threshold are used as evidence.")
    candidates = st.number_input("Candidates N", 1, 100, key="candidates",
                                 help="How many passages the search returns (dense and BM25, fused). "
                                      "Changing it searches the last question again.")
    settings = ui.session_settings()
    modes = ["extractive", "llm"]
    mode = st.selectbox("Answer mode", modes, key="answer_mode",
                        help="extractive: the best sentences of the kept passages, each with its [n]; works "
                             "offline. llm: a local OpenAI-compatible server writes the answer from the same "
                             "passages, citing them by number.")
    if mode == "llm" and not settings.llm_base_url:
        st.info("No LLM server is configured, so answers stay extractive. Set `llm_base_url` in rag.toml "
                "(or the `RAG_LLM_BASE_URL` variable) to an OpenAI-compatible server, e.g. "
                "`http://127.0.0.1:11434/v1` for Ollama.", icon=":material/info:")
    # A new chat gets a new id (and URL): the old one stays reachable by its own URL until it is dropped.
    st.button("New chat", icon=":material/add_comment:", width="stretch", key="new_chat", on_click=ui.start_chat,
              kwargs={"folder": st.session_state.get("folder")})
    st.divider()

attached = ui_files.handle_uploads(ws, prompt_files, source="chat") if prompt_files else []


# --- one turn -----------------------------------------------------------------------------------------

def answer_key(gated: rag.Gated, mode_name: str) -> tuple:
    """What an answer depends on once the question is searched: the mode (and its server) and the kept
    passages. The threshold and the cap matter only through the passages they keep, so two slider
    positions that keep the same passages share one answer."""
    server = (settings.llm_base_url, settings.llm_model) if mode_name == "llm" else None
    return mode_name, server, tuple(c.chunk_id for c in gated.citations)


def make_generator(mode_name: str) -> tuple[rag.Generator, str]:
    """The generator for the chosen mode, and a note when it cannot be the one asked for."""
    try:
        return rag.make_generator(settings.replace(answer_mode=mode_name), engine.embedder), ""
    except ValueError as exc:  # an llm_base_url that is not an http(s) URL: say so, answer extractively
        return (rag.make_generator(settings.replace(answer_mode="extractive"), engine.embedder),
                f"{exc}; showing the extractive answer")


def answer_for(turn: dict, gated: rag.Gated, mode_name: str, slot) -> tuple[rag.Answer, float]:
    """The answer for this set of kept passages, streamed into `slot` while it is written; remembered
    in the turn (in session_state), so reruns and slider moves that keep the same passages show it
    again without asking the generator (an LLM server) again."""
    key = answer_key(gated, mode_name)
    memo = turn.setdefault("answers", {})
    if key not in memo:
        generator, problem = make_generator(mode_name)
        pieces: list[str] = []

        def on_text(piece: str) -> None:
            pieces.append(piece)
            slot.markdown(ui.md_escape("".join(pieces)) + " ▌")

        t0 = time.perf_counter()
        # A server that cannot be reached is answer()'s business: it falls back to the extractive answer
        # and says why in `note`.
        ans = engine.answer(gated, generator, standalone=turn["result"].query, on_text=on_text)
        if problem:
            ans.note = "; ".join(x for x in (problem, ans.note) if x)
        memo[key] = (ans, (time.perf_counter() - t0) * 1000)
    return memo[key]


def anchor(turn_no: int, n: int) -> str:
    return f"cite-{turn_no}-{n}"


def show_answer(turn_no: int, ans: rag.Answer, gated: rag.Gated, mode_name: str, slot) -> None:
    """The answer with its [n] linked to the citation cards below, then what the check and the generator
    have to say about it."""
    # Each [n] opens its document at the passage (the viewer, in a new tab); the cards below say the same.
    slot.markdown(ui.linkify(ans, gated.citations, href=ui.viewer_url, escape=ui.md_escape))
    if ans.note:
        fell_back = mode_name == "llm" and ans.mode != "llm"
        (st.warning if fell_back else st.info)(ui.md_escape(ans.note),
                                               icon=":material/cloud_off:" if fell_back else ":material/info:")
    if ans.flags:
        st.warning("Citation check:\n" + "\n".join(f"- {ui.md_escape(f)}" for f in ans.flags),
                   icon=":material/rule:")
    for note in (gated.paraphrase_note, gated.unsaid_note):  # at most one of them is said
        if note and not ans.refused:
            st.caption(":material/help: " + ui.md_escape(note))
    if gated.split_note and not ans.refused:
        st.warning(ui.md_escape(gated.split_note), icon=":material/call_split:")
    if ans.prompt_tokens is not None:
        st.caption(f"prompt {ans.prompt_tokens} tokens (tiktoken)")


def chosen_sentences(ans: rag.Answer, slot) -> None:
    """Which sentences the extractive answer chose, and why: their similarity to the question. A list of
    escaped lines (one table per answer is the retrieval table's place)."""
    ranks = {c: i + 1 for i, c in enumerate(sorted(ans.chosen, key=lambda c: -c.score))}
    lines = [f"- similarity **{c.score:.3f}** (rank {ranks[c]}) · source **[{c.n}]** · "
             f"{ui.md_escape(' '.join(c.text.split()))}" for c in ans.chosen]
    which = "the sentence" if len(ans.chosen) == 1 else f"the {len(ans.chosen)} sentences"
    slot.markdown(f"**Sentences chosen for the answer**: {which} of the kept passages "
                "closest in meaning to the question (cosine similarity with the same embedding model), no "
                "repeats, in source order\n\n" + "\n".join(lines))


def retrieval_table(gated: rag.Gated, result: rag.SearchResult) -> None:
    rows = [{
        "judge": c.judge,
        "judge rank": c.judge_rank,
        "fused": c.fused_rank,
        "score": c.fused_score,
        "dense": c.dense_rank,
        "BM25": c.bm25_rank,
        "distance": c.distance,
        "margin": gated.threshold - c.distance,
        # Whole percents, rounded down: "29%", not "29.24%" beside "100%", and 49.9% (refused for holding
        # under 50%) reads "49%", not "50%".
        "support": rag.floored(c.support),
        # By its distance: less when close, more far out; rounded up, so 66.7% needed never reads "66%".
        "needs": rag.ceiled(gated.rule.needed_by(c)),
        "lacks": ", ".join(c.lacking),
        "document": c.doc_name,
        "section": ui.one_line(c.section or c.title, 60),
        "preview": ui.one_line(c.content, 110),
        "verdict": VERDICT_LABEL[v],
    } for c, v in zip(gated.candidates, gated.verdicts)]
    judged = any(c.judge is not None for c in gated.candidates)  # judge off: no judge columns
    frame = pd.DataFrame(rows, columns=(["judge", "judge rank"] if judged else []) + ["fused", "score", "dense", "BM25", "distance", "margin", "support", "needs",
                                        "lacks", "document", "section", "preview", "verdict"])
    for col in (("judge rank",) if judged else ()) + ("dense", "BM25"):  # a side that did not return the row: a dash (a null cell would read "None")
        frame[col] = [str(int(r)) if pd.notna(r) else "–" for r in frame[col]]
    colours = [VERDICT_COLOUR[v] for v in gated.verdicts]
    styled = frame.style.apply(lambda col: colours, axis=0,
                               subset=["verdict", "distance", "margin"] + (["judge"] if gated.rule.judging else ["support"]))
    top = max([1.0] + [c.distance for c in gated.candidates])
    cut = gated.rule.judge_cut
    st.dataframe(styled, hide_index=True, width="stretch", column_config={
        "judge": st.column_config.NumberColumn(
            f"judge (≥ {cut:.2f})" if cut is not None else "judge", format="%.2f", width="small",
            help="The judge's score: a model that reads the question and the passage together (over 0: more "
                 "likely to answer than not; blank: not read). "
                 + (f"It decides here: {cut:.2f} or more passes." if cut is not None else
                    "It orders the rows; the word tests decide for this question's language.")),
        "judge rank": st.column_config.TextColumn("judge rank", width="small",
                                                  help="Rank by the judge's score: the order of the rows"),
        "fused": st.column_config.NumberColumn("fused", help="Rank after fusing the dense and BM25 sides "
                                               "(the order before the judge)", width="small"),
        "score": st.column_config.NumberColumn("score", format="%.3f", width="small",
                                               help=FUSED_HELP.get(result.fusion, "The fused score")),
        "dense": st.column_config.TextColumn("dense", width="small",
                                             help="Rank by cosine distance (–: not in the dense top N)"),
        "BM25": st.column_config.TextColumn("BM25", width="small",
                                            help="Rank by BM25 keyword score (–: not in BM25's top N)"),
        "distance": st.column_config.ProgressColumn(
            f"distance (≤ {gated.threshold:.3f} passes)", min_value=0.0, max_value=top, format="%.3f",
            help=f"Cosine distance to the question (0 = same meaning). Threshold {gated.threshold:.3f}."),
        "margin": st.column_config.NumberColumn(
            "margin", format="%+.3f", help="Threshold minus distance: at or above 0 passes the threshold"),
        "support": st.column_config.ProgressColumn(
            f"support (≥ {gated.rule.min_support:.0%})", min_value=0.0, max_value=1.0, format="percent",
            help="Share of the question's own words (weighted by rarity in the folder) the passage holds. "
                 f"Needs {gated.rule.min_support:.0%}"
                 + (f", or {gated.rule.relaxation} unless the question names something the folder never mentions"
                    if gated.rule.relaxation else "")
                 + (f"; {gated.rule.ramp}" if gated.rule.ramp else "")
                 + (f"; {gated.rule.rising}" if gated.rule.rising else "")
                 + ". A question naming something the folder never mentions fails every passage."),
        "needs": st.column_config.NumberColumn(
            "needs", format="percent", width="small",
            help="The support this row needs at its distance: less when very close, more far out"),
        "lacks": st.column_config.TextColumn("lacks", help="The question's words this passage does not hold"),
        "document": st.column_config.TextColumn("document"),
        "section": st.column_config.TextColumn("section"),
        "preview": st.column_config.TextColumn("preview", width="large"),
        "verdict": st.column_config.TextColumn(
            "verdict", help=f"kept (at most {gated.max_chunks}) / under threshold, over cap / over threshold / "
                            "judged not to answer (the judge's score under its cut) / "
                            "lacks the question's words (the support test) / lacks the earlier question's "
                            "subject (a follow-up's passage holding none of the words of the question it follows)"),
    })


def evidence_caption(gated: rag.Gated, result: rag.SearchResult) -> str:
    """What a passage needed to be kept, in one line above the table: the judge's cut where it decides,
    else the word share."""
    rule = gated.rule
    if rule.judging:
        return (f"Evidence: cosine distance ≤ {gated.threshold:.3f}; {ui.md_escape(rag.evidence_rule(rule))}. "
                "The rows are in the judge's order." + unknown_names_note(result))
    if rule.relaxation:
        ramp = f"; then {rule.ramp}" if rule.ramp else ""
        rising = f"; {rule.rising}, where unrelated questions start to find passages" if rule.rising else ""
        close = f" ({rule.relaxation}, nearer than any unrelated question comes to this folder{ramp}{rising})"
    else:
        close = " (no lower share for close passages until the folder is calibrated)"
    judged = " The judge does not read this language well: the word tests decide." if result.judged else ""
    return (f"Evidence: cosine distance ≤ {gated.threshold:.3f} and support ≥ {rule.min_support:.0%} of "
            f"the question's words{close}.{judged} Words looked for: "
            + (ui.md_escape(", ".join(result.terms)) or "none") + unknown_names_note(result))


def unknown_names_note(result: rag.SearchResult) -> str:
    if not result.unknown_names:
        return ""
    names = ", ".join(f'"{n}"' for n in result.unknown_names)
    if result.absent_names:
        return (f". The question names {ui.md_escape(names)}, which the folder never mentions: no passage is "
                "evidence for it")
    return (f". The question names {ui.md_escape(names)}, which the folder never mentions: every passage needs "
            "the full support, however close")


FUSED_HELP = {
    "zscore": "Each side's score as standard deviations above that side's mean over its candidates, weighted "
              "and added (a side that did not return the passage counts as its lowest)",
    "minmax": "Each side's score scaled to 0..1 over its candidates, weighted and added",
    "rrf": "Reciprocal rank fusion: the sum over both sides of weight / (k + rank)",
}
FUSION_NAME = {"zscore": "z-scores", "minmax": "min-max scaled scores", "rrf": "reciprocal ranks"}


def fusion_note(result: rag.SearchResult) -> str:
    """How this question's two rankings were fused, with the weights it got (they follow its language)."""
    w = result.weights
    k = f", k = {settings.rrf_k}" if result.fusion == "rrf" else ""
    note = (f"Fused: {FUSION_NAME.get(result.fusion, result.fusion)}{k}, weights dense {w['dense']:g} · "
            f"BM25 {w['bm25']:g}")
    if w["dense"] < w["bm25"]:
        note += (" (the embedding model does not read this question's language, and the folder holds text in it: "
                 "BM25 decides, the dense side breaks near-ties)")
    if result.feedback_note:
        note += ". " + result.feedback_note
    return note


def citation_cards(turn_no: int, gated: rag.Gated, numbers: set[int] | None = None,
                   cited: set[int] | None = None) -> None:
    for c in gated.citations:
        if numbers is not None and c.n not in numbers:
            continue
        with st.container(border=True):
            if cited is not None and c.n not in cited:
                # A trial read a source listed under an answer that never cites it as part of the answer.
                st.caption(f"[{c.n}] passed the tests, but the answer does not cite it")
            # The target of the answer's [n] links; only our own id goes through HTML here.
            st.markdown(f'<span id="{anchor(turn_no, c.n)}"></span>', unsafe_allow_html=True)
            st.markdown(f"**[{c.n}]** {ui.md_escape(c.doc_name)} · {ui.md_escape(c.locator)} · "
                        f"cosine distance **{c.distance:.3f}**")
            st.caption(f"link: {ui.md_escape(c.link)}",
                       help=ui.md_escape((engine.folder / c.doc_name).resolve().as_uri() + c.fragment))
            st.page_link(ui.VIEWER_PAGE, label=f"[{c.n}] Open {c.doc_name} at the passage ({c.fragment})",
                         icon=":material/open_in_new:", query_params=ui.viewer_params(c))
            st.text(rag.unwrap(c.quote))  # a PDF's wrapped lines as prose; its words exactly


def render_turn(turn_no: int, turn: dict, live: bool) -> None:
    with st.chat_message("user"):
        st.markdown(ui.md_escape(turn["question"]))
    if not live and "threshold" not in turn:  # never frozen (see `ask`): it keeps the settings shown now
        freeze(turn)
    t_threshold = threshold if live else turn["threshold"]
    t_max = int(max_chunks) if live else turn["max_chunks"]
    t_mode = mode if live else turn["mode"]
    # The support test for the question's language (its close distance comes from the calibration).
    rule = engine.threshold_choice(turn["question"]).rule if live else turn["rule"]
    gated = rag.gate(turn["result"], t_threshold, t_max, rule)
    ans = None
    with st.chat_message("assistant"):
        if turn["result"].searched_note:  # a follow-up, searched with what it refers to (or tried so)
            st.caption(ui.md_escape(turn["result"].searched_note))
        # Fixed places, whatever the state: the answer (or the refusal), then the sources. When the
        # slider turns an answer into a refusal, an empty element takes the sources' place, so their
        # cards go at once instead of lingering until the rest of the page is drawn.
        head = st.container()
        if gated.refusal is not None:
            with head:
                st.markdown(f":orange-badge[:material/block: refused] {gated.reason}")
                st.text(gated.refusal)
                if gated.closest is not None:
                    c = gated.closest
                    where = rag.locator(c)
                    lacks = (f" That passage does not mention: {ui.md_escape(', '.join(c.lacking))}."
                             if c.lacking and not rule.passes(c) else "")
                    st.markdown(f"Closest candidate: **{ui.md_escape(c.doc_name)}** · {ui.md_escape(where)} "
                                f"at cosine distance **{c.distance:.3f}**.{lacks}")
                    s = gated.closest_supported
                    if s is not None:
                        need = math.ceil(s.distance * 1000) / 1000  # rounded up, so it really passes
                        st.markdown(f"A threshold of **{need:.3f}** would let **{ui.md_escape(s.doc_name)}** through "
                                    + ("(the nearest passage the judge says answers)." if rule.judging else
                                       "(the nearest passage that holds the question's words)."))
                    elif any(c.wordless for c in gated.candidates):
                        st.markdown("No threshold would let a passage through: the question has no word of its own "
                                    "that a passage could hold.")
                    elif turn["result"].absent_names:
                        st.markdown(f"No threshold would let a passage through: the folder never mentions "
                                    f"{ui.md_escape(rag.quoted(turn['result'].absent_names))}.")
                    elif rule.judging:
                        st.markdown("No threshold would let a passage through: the judge, which reads the question "
                                    "with each passage, found none that answers it. If your documents say it in other "
                                    "words, ask again with their words; *Why wasn't it found?* below tells where a "
                                    "sentence you expected was lost.")
                    else:
                        # Not a dead end: the likeliest cause is a paraphrase, which the person can mend.
                        st.markdown("No threshold would let a passage through: none of the candidates holds enough "
                                    "of the question's words (and the names it writes, and a follow-up's subject). "
                                    "If your documents say it in other words, ask again with their words; "
                                    "*Why wasn't it found?* below tells where a sentence you expected was lost.")
                elif engine.indexing():  # at start-up the folder is still being read: say so, not "empty"
                    st.markdown(f"Nothing is indexed yet: {engine.indexing()} file(s) are still being indexed "
                                "(see the sidebar). Ask again once they are.")
                else:
                    st.markdown("The folder has nothing indexed yet: add documents in the sidebar.")
            st.empty()
            ms = None
        else:
            with head:
                badge, slot = st.empty(), st.empty()
                ans, ms = answer_for(turn, gated, t_mode, slot)
                llm_refused = ans.refused and ans.mode == "llm"
                if llm_refused:
                    badge.markdown(":orange-badge[:material/block: refused] the LLM found no answer in the sources it read")
                show_answer(turn_no, ans, gated, t_mode, slot)
            with st.container():
                read = set(ans.check.given) if ans.check is not None else None
                title = "Sources the LLM read" if llm_refused else "Sources"
                st.markdown(f"**{title}** · threshold {gated.threshold:.3f} · {len(gated.citations)} of "
                            f"{len(gated.candidates)} candidates kept")
                cited = set(ans.check.cited) if ans.check is not None and not ans.refused else None
                citation_cards(turn_no, gated, read if llm_refused else None, cited)
        timing = turn["result"].timings_ms
        search_ms = sum(timing.values())
        answered = f" · {ans.mode} answer {ms:.0f} ms" if ans is not None else ""
        st.caption(f"search {search_ms:.0f} ms ({', '.join(f'{k} {v:.0f}' for k, v in timing.items())}){answered} · "
                   f"{turn['result'].searched_chunks} chunks searched"
                   + ("" if live else f" · answered at threshold {t_threshold:.3f}"))
        kept = sum(1 for v in gated.verdicts if v == rag.KEPT)
        with st.expander(f"Retrieval: {len(gated.candidates)} candidates, {kept} kept", expanded=live):
            st.caption(evidence_caption(gated, turn["result"]))
            if gated.codes_note:
                st.caption(ui.md_escape(gated.codes_note))
            st.caption(fusion_note(turn["result"]))
            retrieval_table(gated, turn["result"])
            chosen = st.empty()  # in every state, so a list from an earlier answer never lingers
            if ans is not None and ans.chosen:
                chosen_sentences(ans, chosen)
        why_not_found(turn, gated)


def why_not_found(turn: dict, gated: rag.Gated) -> None:
    """Paste the sentence you expected; the app says where it was lost (extraction, chunking, ranks,
    threshold, cap) or that it was in fact cited."""
    with st.expander("Why wasn't it found?"):
        expected = st.text_input("The sentence you expected the answer to come from", key=f"why-{turn['id']}",
                                 placeholder="Paste it as it stands in your document")
        if expected.strip():
            # Computed once per sentence and gate state: a slider move that changes neither does not redo it
            # (the extraction check reads every document again).
            key = (expected, gated.threshold, gated.max_chunks, tuple(gated.verdicts), len(engine.snapshot.chunks))
            memo = turn.setdefault("why", {})
            if key not in memo:
                memo.clear()
                memo[key] = diagnosis.why_not_found(engine, turn["result"], gated, expected)
            d = memo[key]
            st.markdown(f"**{ui.md_escape(d.verdict)}**: {ui.md_escape(d.message)}")
            if d.straddles:
                st.caption("It falls across these two chunks:")
                for part in d.straddles:
                    st.text(part)


def freeze(turn: dict) -> None:
    """Keep a turn at the settings it was last shown with: a new question makes it an earlier turn."""
    turn.update(live=False, threshold=threshold, max_chunks=int(max_chunks), mode=mode,
                rule=engine.threshold_choice(turn["question"]).rule)


def ask(question: str) -> None:
    result = ui.search(ws, question, int(candidates), [t["result"].query for t in turns], session_for_search())
    # Every turn not yet frozen, not only the last: two runs of one chat can overlap (a second tab, or a
    # reconnecting browser, on the same chat), and a turn another run appended meanwhile must not be left
    # without its settings.
    for earlier in turns:
        if "threshold" not in earlier:
            freeze(earlier)
    turns.append({"id": uuid.uuid4().hex, "question": question, "result": result, "n": int(candidates),
                  "live": True})


def session_for_search() -> rag.Settings:
    """This session's settings with its answer mode: a follow-up is rewritten by the LLM only when the
    person chose the LLM mode and a server is configured."""
    return settings.replace(answer_mode=mode)


# --- the page -----------------------------------------------------------------------------------------

st.title("Chat with your folder")
st.caption(f"Folder: {ui.md_escape(str(engine.folder))} · answers come only from passages under the threshold "
           "that hold the question's own words; every answer shows its evidence, every refusal its reason.")
ui_files.indexing_note(ws)
ui_files.conflicts_note(ws)

if prompt_text:
    # A question asked with its attachment, or just after files were dropped in the sidebar, is most likely
    # about them: wait (up to 20 s) for this session's files still being indexed before searching.
    waiting = list(dict.fromkeys(attached + ui_files.unfinished_uploads(ws)))
    waited = bool(waiting) and ui_files.wait_for(ws, waiting)
    if waiting and not waited:
        st.info("Files you added are still being indexed: this answer comes from what was indexed before; "
                "ask again once the sidebar shows them indexed.", icon=":material/hourglass_top:")
    ask(prompt_text)
    if waited and ui.threshold_set() is None and engine.threshold_choice(prompt_text).value != choice.value:
        # The files it waited for changed the threshold the slider follows (the first files of a folder
        # give it its calibration): draw the page again, so the answer and the slider show the new value
        # rather than the one chosen before they were indexed. The turn is kept; the question is not re-sent.
        st.rerun()

# Search the last question again when a different N would retrieve differently, or when it was asked
# before anything was indexed (the folder's first files still on their way) and something is now: its
# refusal said "nothing indexed", which is no longer true. The page redraws when the queue empties.
stale = bool(turns) and not turns[-1]["result"].searched_chunks and bool(engine.snapshot.chunks)
if turns and (turns[-1].get("n") != int(candidates) or stale):
    last = turns[-1]
    last.update(result=ui.search(ws, last["question"], int(candidates), [t["result"].query for t in turns[:-1]],
                                 session_for_search()),
                n=int(candidates), answers={})
    if stale and ui.threshold_set() is None and engine.threshold_choice(last["question"]).value != choice.value:
        # The first files landed after this run chose the slider's value (the default: nothing was indexed):
        # draw again so the answer is judged at the calibrated value, not at the default (seen in a trial:
        # an answer refused "under 0.675" while the folder's calibration was 0.800).
        st.rerun()

if not turns:
    stats = engine.counts()
    if stats.chunks == 0 and engine.indexing():
        # The first start indexes the folder: "no indexed documents yet, drop files" read as an empty folder.
        st.info("Indexing the folder's files. You can ask already: a question asked now is answered once "
                "they are indexed.", icon=":material/hourglass_top:")
    elif stats.chunks == 0:
        st.info("The folder has no indexed documents yet. Drop Markdown, text or PDF files in the sidebar.")
    else:
        st.info(f"{stats.indexed} documents, {stats.chunks} passages. Ask a question below.")

for i, turn in enumerate(turns):
    render_turn(i + 1, turn, live=(i == len(turns) - 1))
