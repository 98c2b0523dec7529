"""A chat's turns and the settings each is shown with: pure Python, no Streamlit.

`ChatSession` wraps the list of turns a chat keeps (in `st.session_state`, and in the server's memory so a
reload finds it: `ui.restore_chat`). Each turn is a plain dict, so the list outlives any class here:

    id, question, result (its rag.SearchResult), n (the number of candidates it was searched with),
    live (the last turn, shown at the sidebar's settings), and once frozen: threshold, max_chunks, mode and
    rule (the settings it was last shown with); answers and why (remembered answers and diagnoses).

What it decides:

- `ask()`: a new turn; every earlier turn not yet frozen is frozen at the settings shown now, so moving the
  slider later changes only the last turn.
- `shown()`: the settings a turn is drawn with: the sidebar's for the last turn, its frozen ones for the
  others (a turn another run appended without freezing it is frozen now).
- `due_search()` / `searched_again()`: the last question is searched again when the number of candidates
  changed, or when it was asked before anything was indexed and something now is (`stale`).
- `redraw()`: whether files that landed during this run moved the threshold the slider follows, so the
  page must be drawn again.
- `answer()` / `remember_answer()` / `answer_key()`: answers remembered per turn by what they depend on;
  `diagnosis()`: the "Why wasn't it found?" result, remembered for one sentence and gate state.

Not here: searching, gating or answering (the engine's), what is drawn (`chat_view`), drawing
(`app/pages/chat.py`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Callable

import rag

MODES = ("extractive", "llm")


@dataclass(frozen=True)
class Controls:
    """The sidebar's answering settings on this run.

    >>> Controls(0.5, 4, "abstractive")
    Traceback (most recent call last):
    ...
    ValueError: unknown answer mode 'abstractive'; valid: extractive, llm
    """

    threshold: float
    max_chunks: int
    mode: str

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown answer mode {self.mode!r}; valid: {', '.join(MODES)}")


@dataclass(frozen=True)
class Shown:
    """The settings one turn is drawn with; `live` for the last turn (it follows the sidebar)."""

    threshold: float
    max_chunks: int
    mode: str
    rule: rag.SupportRule
    live: bool


@dataclass(frozen=True)
class Research:
    """The last question is due to be searched again: `stale` when it was asked before anything was
    indexed (else the number of candidates changed)."""

    question: str
    stale: bool


class ChatSession:
    """The turns of one chat. `rule_for(question)` is the support test the engine picks for a question
    now (`engine.threshold_choice(question).rule`): a turn is frozen with it.

    >>> turns = []
    >>> chat = ChatSession(turns, rule_for=lambda q: rag.SupportRule(0.5))
    >>> first = chat.ask("Where is the index?", rag.SearchResult("Where is the index?", "Where is the index?", [], {}), 20,
    ...                  Controls(0.6, 4, "extractive"))
    >>> chat.shown(0, Controls(0.7, 4, "extractive")).threshold  # the last turn follows the sidebar
    0.7
    >>> _ = chat.ask("And PDFs?", rag.SearchResult("And PDFs?", "And PDFs?", [], {}), 20, Controls(0.7, 4, "extractive"))
    >>> chat.shown(0, Controls(0.2, 1, "llm")).threshold, turns[0]["live"]  # frozen as it was last shown
    (0.7, False)
    """

    def __init__(self, turns: list[dict], rule_for: Callable[[str], rag.SupportRule]):
        self.turns = turns
        self._rule_for = rule_for

    def __len__(self) -> int:
        return len(self.turns)

    @property
    def last(self) -> dict | None:
        return self.turns[-1] if self.turns else None

    def history(self, upto: int | None = None) -> list[str]:
        """The searched queries of the turns before `upto` (all by default), oldest first: a follow-up is
        searched with them."""
        return [t["result"].query for t in self.turns[:upto]]

    def last_question(self) -> str:
        return self.turns[-1]["question"] if self.turns else ""

    # --- asking and freezing -------------------------------------------------------------------------------

    def ask(self, question: str, result: rag.SearchResult, candidates: int, now: Controls) -> dict:
        """Append a turn for `question`, searched as `result` with `candidates` candidates. Every turn not
        yet frozen is frozen at `now`, not only the last: two runs of one chat can overlap (a second tab, or
        a reconnecting browser, on the same chat), and a turn another run appended meanwhile must not be
        left without its settings."""
        for earlier in self.turns:
            if "threshold" not in earlier:
                self.freeze(earlier, now)
        turn = {"id": uuid.uuid4().hex, "question": question, "result": result, "n": int(candidates),
                "live": True}
        self.turns.append(turn)
        return turn

    def freeze(self, turn: dict, now: Controls) -> None:
        """Keep a turn at the settings it was last shown with: a new question makes it an earlier turn."""
        turn.update(live=False, threshold=now.threshold, max_chunks=int(now.max_chunks), mode=now.mode,
                    rule=self._rule_for(turn["question"]))

    def shown(self, index: int, now: Controls) -> Shown:
        """The settings turn `index` is drawn with: the last turn follows `now` (the sidebar), with the
        support test for its question's language; an earlier one keeps the settings it was frozen at (one
        never frozen, see `ask`, is frozen at `now`)."""
        turn = self.turns[index]
        if index == len(self.turns) - 1 and index >= 0:
            return Shown(now.threshold, int(now.max_chunks), now.mode, self._rule_for(turn["question"]), True)
        if "threshold" not in turn:
            self.freeze(turn, now)
        return Shown(turn["threshold"], turn["max_chunks"], turn["mode"], turn["rule"], False)

    # --- searching the last question again --------------------------------------------------------------

    def due_search(self, candidates: int, indexed: bool) -> Research | None:
        """Whether the last question must be searched again: a different number of candidates retrieves
        differently; and a question asked before anything was indexed (its refusal said "nothing
        indexed") is searched again once something is (`indexed`: the folder has chunks now)."""
        last = self.last
        if last is None:
            return None
        stale = not last["result"].searched_chunks and indexed
        if last.get("n") != int(candidates) or stale:
            return Research(last["question"], stale)
        return None

    def searched_again(self, result: rag.SearchResult, candidates: int) -> None:
        """The last turn, searched again: its remembered answers are for other passages."""
        self.turns[-1].update(result=result, n=int(candidates), answers={})

    @staticmethod
    def redraw(files_landed: bool, person_set: bool, shown: float, now: Callable[[], float]) -> bool:
        """Whether the page must be drawn again: files that landed during this run (`files_landed`) changed
        the threshold the slider follows (it showed `shown`; `now()` is the engine's choice now), and no
        person set one. The first files of a folder give it its calibration: without a redraw the answer
        is judged at the value chosen before they were indexed (seen in a trial: an answer refused "under
        0.675" while the folder's calibration was 0.800). The turn is kept; nothing is searched again.

        >>> ChatSession.redraw(True, False, 0.675, lambda: 0.8), ChatSession.redraw(True, True, 0.675, lambda: 0.8)
        (True, False)
        """
        return files_landed and not person_set and now() != shown

    # --- remembered answers and diagnoses ---------------------------------------------------------------

    @staticmethod
    def answer_key(gated: rag.Gated, mode: str, server: tuple | None = None) -> tuple:
        """What an answer depends on once the question is searched: the mode (and its server, for "llm")
        and the kept passages. The threshold and the cap matter only through the passages they keep, so
        two slider positions that keep the same passages share one answer."""
        return mode, (server if mode == "llm" else None), tuple(c.chunk_id for c in gated.citations)

    @staticmethod
    def answer(turn: dict, key: tuple) -> Any | None:
        """The answer remembered for `key` in this turn (with its time), or None."""
        return turn.get("answers", {}).get(key)

    @staticmethod
    def remember_answer(turn: dict, key: tuple, value: Any) -> Any:
        turn.setdefault("answers", {})[key] = value
        return value

    @staticmethod
    def diagnosis(turn: dict, key: tuple, compute: Callable[[], Any]) -> Any:
        """The "Why wasn't it found?" result for `key` (the sentence and the gate's state), computed once:
        a slider move that changes neither does not redo it (the extraction check reads every document
        again). Only the last key is kept."""
        memo = turn.setdefault("why", {})
        if key not in memo:
            memo.clear()
            memo[key] = compute()
        return memo[key]
