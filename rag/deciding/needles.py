"""Needle sets: questions with the sentence that answers them (or none, for a question the folder must
refuse), and the rule that says whether a passage holds that sentence.

The calibration page reads and appends the person's own questions (`questions.jsonl` beside the index)
with `load_questions` and `save_question`; `rag.deciding.sweep` and `rag.deciding.diagnosis` judge passages with `contains`.
The lab's needle sets (`bench/sample_needles.jsonl`) are in the same format: one JSON object a line,
{question, needle, document, lang, style} or {question, refuse: true, lang}.

What it does not do: search, gate or measure anything (`rag.deciding.sweep` gates, the lab's `lab.evaluate` ranks).

>>> q = Question("How long does set-up take?", needle="Set-up takes two commands.", lang="en")
>>> q.answerable, q.to_json()
(True, {'question': 'How long does set-up take?', 'needle': 'Set-up takes two commands.', 'lang': 'en'})
>>> Question("Who won the 1998 cup?", refuse=True, lang="en").to_json()
{'question': 'Who won the 1998 cup?', 'refuse': True, 'lang': 'en'}
>>> contains("Set-up takes\\ntwo commands.", "takes two commands")
True
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from rag.text.languages import question_language


@dataclass(frozen=True)
class Question:
    question: str
    needle: str | None = None  # the sentence that answers it; None for a question the folder must refuse
    document: str | None = None
    lang: str = ""
    style: str = ""  # "echo" (words of the needle) or "paraphrase" (a person's own words)
    refuse: bool = False
    kind: str = ""  # e.g. "answerable", "off-folder", "near-miss" (public sets label their questions)

    @property
    def answerable(self) -> bool:
        return not self.refuse

    def to_json(self) -> dict:
        if self.refuse:
            return {"question": self.question, "refuse": True, "lang": self.lang} | ({"kind": self.kind} if self.kind else {})
        d = {"question": self.question, "needle": self.needle, "document": self.document, "lang": self.lang,
             "style": self.style}
        return {k: v for k, v in d.items() if v not in (None, "")} | {"needle": self.needle}


def load_questions(path: str | Path) -> list[Question]:
    """Read a needle set; `ValueError` names the line and what is wrong with it."""
    out: list[Question] = []
    p = Path(path)
    if not p.is_file():
        return out
    for no, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{p}:{no}: not JSON ({exc.msg})") from None
        if not isinstance(d, dict) or not str(d.get("question", "")).strip():
            raise ValueError(f"{p}:{no}: needs a non-empty \"question\"")
        refuse = bool(d.get("refuse", False))
        needle = d.get("needle")
        if refuse == bool(needle):
            raise ValueError(f"{p}:{no}: give either a \"needle\" (the expected sentence) or \"refuse\": true")
        out.append(Question(question=str(d["question"]).strip(), needle=needle.strip() if needle else None,
                            document=d.get("document"), lang=d.get("lang") or question_language(d["question"]),
                            style=d.get("style", ""), refuse=refuse, kind=str(d.get("kind", ""))))
    return out


def save_question(path: str | Path, q: Question) -> None:
    """Append one question to a JSONL file (the calibration page's questions, beside the index)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(q.to_json(), ensure_ascii=False) + "\n")


def _squash(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).split())


def contains(content: str, needle: str) -> bool:
    """The whole needle is in the content, white space compared loosely (PDF text joins lines)."""
    return _squash(needle) in _squash(content)
