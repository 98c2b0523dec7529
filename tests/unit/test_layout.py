"""The house's layout, counted from the code's own imports: stages in order, no import running back up, no
import circle, modules of a readable size.

Every import is counted, at the top of a module, inside a function (a late import is still a dependency) or
under `if TYPE_CHECKING:`.
The stages, lowest first: the settings' constants; text analysis; reading; indexing; searching; deciding;
answering; the front door (`rag`, `rag.engine`, `rag.cli`); the app. A module may import its own stage or a
lower one, never a higher one.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

STAGES = ("rag.settings", "rag.text", "rag.reading", "rag.indexing", "rag.searching", "rag.deciding",
          "rag.answering", "rag", "app")

# Modules over 500 lines, each one idea (why it is not split).
ONE_IDEA = {
    "rag.indexing.indexer": "the indexer's one loop: read, chunk, embed, write and publish a batch of files",
    "rag.reading.pdf": "one format's reader: PDF pages into text, columns, tables and footnotes",
    "rag.engine": "the front door: the one object the app and the CLI hold",
    "rag.deciding.explain": "every sentence a verdict is explained with, in one place",
    "rag.searching.search": "one search: both sides, the fusion, the feedback and the candidates",
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    out = {}
    for top in ("rag", "app"):
        for p in (ROOT / top).rglob("*.py"):
            if "pages" not in p.relative_to(ROOT).parts:
                out[module_name(p)] = p
    return out


def imports(path: Path, known: set[str]) -> set[str]:
    """The project's modules this file imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
        else:
            continue
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    return found


def stage(module: str) -> int:
    best = max((s for s in STAGES if module == s or module.startswith(s + ".")), key=len)
    if best == "rag" and module not in ("rag", "rag.engine", "rag.cli"):
        raise AssertionError(f"{module} sits in no stage: put it in one of {', '.join(STAGES[1:-2])}")
    return STAGES.index(best)


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    g = {m: imports(p, known) - {m} for m, p in mods.items()}
    # A package's __init__ runs when any of its modules is imported: its own modules do not depend on it.
    return {m: {t for t in ts if not m.startswith(t + ".")} for m, ts in g.items()}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, on, stack, out = {}, {}, set(), [], []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle():
    assert cycles(graph()) == []


def test_no_import_runs_back_up():
    up = sorted(f"{m} imports {t}" for m, ts in graph().items() for t in ts if stage(t) > stage(m))
    assert up == []


def test_every_stage_is_a_package_with_its_say():
    for s in STAGES[1:-2]:
        init = ROOT / Path(*s.split(".")) / "__init__.py"
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and "In:" in doc and "Out:" in doc, f"{init} says what goes in and what comes out"


def test_modules_are_of_a_readable_size():
    long = {m: len(p.read_text(encoding="utf-8").splitlines()) for m, p in modules().items()}
    assert {m: n for m, n in long.items() if n > 500 and m not in ONE_IDEA} == {}
    chat = ROOT / "app" / "pages" / "chat.py"
    assert len(chat.read_text(encoding="utf-8").splitlines()) <= 200


def test_the_checks_catch_a_circle_and_an_upward_import():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert stage("rag.text.lexical") < stage("rag.searching.search") < stage("rag.engine") < stage("app.ui")


def test_test_file_names_are_unique_across_the_tiers():
    names = [p.name for p in (ROOT / "tests").rglob("test_*.py")]
    assert sorted(n for n in set(names) if names.count(n) > 1) == []
