"""Which of the library's documents a question is asked of: chosen documents, subfolders and formats.

A `Scope` is what a person chose (paths as the library names them, folders, format kinds such as "pdf");
`resolve()` turns it into the document ids a search masks by (`Engine.search(doc_ids=...)`, which both
dense sides and BM25 apply before ranking) and into words: what the scope is ("the 2 chosen documents
(a.md, b.md)") and what went wrong with it (a chosen document deleted since, one that failed to be read,
a folder holding nothing indexed).

A document is in scope when it is chosen or sits under a chosen folder (every document when neither is
chosen) and, when formats are chosen, is of one of them. Only searchable documents (indexed or stale, as
search reads them) give ids; when none does, the ids are an empty tuple, which searches nothing: a scope
never widens to the whole folder by itself.

Not here: searching (rag.searching.search), the gate or its words; calibration ignores scopes (its
threshold is the folder's, whatever part of it is asked).

>>> from rag.indexing.library import DocRecord
>>> docs = [DocRecord("d1", "a.md", "md", "indexed"), DocRecord("d2", "notes/b.pdf", "pdf", "indexed"),
...         DocRecord("d3", "notes/c.md", "md", "failed", reason="not UTF-8")]
>>> r = resolve(Scope(docs=("a.md", "notes/c.md", "gone.md")), docs)
>>> r.doc_ids, r.label
(('d1',), 'the 3 chosen documents (a.md, notes/c.md, gone.md)')
>>> r.problems
('notes/c.md could not be read (not UTF-8): it is not searched', 'gone.md is no longer in the folder')
>>> resolve(Scope(under=("notes",), kinds=("pdf",)), docs).doc_ids
('d2',)
>>> resolve(Scope(docs=("a.md",)), docs).refusal()
'The chosen document (a.md) does not answer this; the rest of the folder was not searched. Clear the scope to ask the whole folder.'

>>> resolve(Scope(), docs).doc_ids is None
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from rag.indexing.library import DocRecord

SEARCHED = ("indexed", "stale")  # the states a search reads (rag.indexing.snapshot)


@dataclass(frozen=True)
class Scope:
    """What a person chose to ask: document paths (relative to the folder), folders, format kinds."""

    docs: tuple[str, ...] = ()
    under: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.docs or self.under or self.kinds)

    def as_dict(self) -> dict:
        return {"docs": list(self.docs), "under": list(self.under), "kinds": list(self.kinds)}

    @classmethod
    def of(cls, data: dict | None) -> "Scope":
        """From `as_dict`'s form (None or {}: no scope); folders lose their slashes at either end."""
        data = data or {}
        return cls(tuple(str(d) for d in data.get("docs") or ()),
                   tuple(str(u).strip("/") for u in data.get("under") or () if str(u).strip("/")),
                   tuple(str(k) for k in data.get("kinds") or ()))


@dataclass(frozen=True)
class Resolved:
    scope: Scope
    doc_ids: tuple[str, ...] | None  # None: the whole folder
    paths: tuple[str, ...]  # the searchable documents in scope
    problems: tuple[str, ...]  # chosen documents deleted or unreadable, folders holding nothing searchable

    @property
    def label(self) -> str:
        """The scope in a few words: "the 2 chosen documents (a.md, b.md)", "the folder notes/ (3 documents)"."""
        s, parts = self.scope, []
        if s.docs:
            many = f"{len(s.docs)} chosen documents" if len(s.docs) > 1 else "chosen document"
            parts.append(f"the {many} ({_names(s.docs)})")
        if s.under:
            parts.append(("the folder" if len(s.under) == 1 else "the folders") + " " +
                         ", ".join(u + "/" for u in s.under))
        text = " and ".join(parts)
        if s.kinds:
            text = (text + ", " if text else "the ") + " and ".join(s.kinds) + " files" + (" of them" if parts else "")
        if not s.docs:
            text += f" ({_count(len(self.paths), 'document')})"
        return text

    @property
    def searched(self) -> str:
        """What the retrieval table and an answer say: "" for the whole folder."""
        return f"Asked of {self.label} only." if self.doc_ids is not None else ""

    def refusal(self) -> str:
        """What a refusal adds: that nothing in the scope answers, and that the rest was not searched."""
        if self.doc_ids is None:
            return ""
        alone = len(self.scope.docs) == 1 and not self.scope.under
        if not self.doc_ids:
            who = f"{self.label[0].upper()}{self.label[1:]} cannot" if alone else f"None of {self.label} can"
            return f"{who} be searched: clear the scope or choose others."
        says = f"{self.label[0].upper()}{self.label[1:]} does not answer" if alone else f"None of {self.label} answers"
        return f"{says} this; the rest of the folder was not searched. Clear the scope to ask the whole folder."

def resolve(scope: Scope, documents: Sequence[DocRecord]) -> Resolved:
    """The ids, paths and problems of `scope` over the library's `documents` (see the module's doc)."""
    if not scope:
        return Resolved(scope, None, tuple(d.path for d in documents if d.status in SEARCHED), ())
    by_path = {d.path: d for d in documents}
    problems: list[str] = []
    for path in scope.docs:
        d = by_path.get(path)
        if d is None:
            problems.append(f"{path} is no longer in the folder")
        elif d.status == "failed":
            problems.append(f"{path} could not be read ({d.reason or 'no reason given'}): it is not searched")
        elif d.status not in SEARCHED:
            problems.append(f"{path} is {d.status}: it is not searched until it is indexed")
    chosen = set(scope.docs)
    picked = [d for d in documents if (not chosen and not scope.under) or d.path in chosen
              or any(d.path.startswith(u + "/") for u in scope.under)]
    if scope.kinds:
        picked = [d for d in picked if d.kind in scope.kinds]
    for u in scope.under:
        if not any(d.path.startswith(u + "/") and d.status in SEARCHED for d in picked):
            problems.append(f"the folder {u}/ holds no searchable document" + (" of those formats" if scope.kinds else ""))
    live = [d for d in picked if d.status in SEARCHED]
    return Resolved(scope, tuple(d.doc_id for d in live), tuple(d.path for d in live), tuple(problems))


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _names(paths: Sequence[str], most: int = 4) -> str:
    shown = ", ".join(paths[:most])
    return shown + (f" and {len(paths) - most} more" if len(paths) > most else "")
