"""The conversation store (app/conversations.py) at 1,000 conversations of 20 turns: how long the sidebar's
list takes to open and to filter, and one conversation to open.

    .venv/bin/python bench/bench_conversations.py                       # 1,000 x 20 turns in bench/out/
    .venv/bin/python bench/bench_conversations.py --conversations 100 --turns 5 --repeat 10

Each turn is shaped as the app stores it: a real `rag.SearchResult` of 20 candidates, each ~480 characters of
the sample folder's own sentences (a passage as the chunker cuts it), gated, with an extractive answer of
its kept passages and what the screen showed. Timed, each `--repeat` times (median and worst):

- opening the store (a new process's first `Store(...)`: the schema read), then the list as the sidebar
  asks it (`list(limit=16)`) and the whole list;
- filtering it by words as *Find* does: a word in about a tenth of the conversations, two words, a word in
  none (every conversation's words read);
- loading one conversation (20 turns decoded), which the page then draws without searching.

Nothing is asserted: the figures go to docs/benchmarks.md (target: list and filter within 200 ms).
"""

from __future__ import annotations

import argparse
import math
import platform
import random
import re
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import rag  # noqa: E402
from app import conversations as conv  # noqa: E402
from rag.deciding.citations import CitationCheck  # noqa: E402


def sentences() -> list[str]:
    text = " ".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "data").rglob("*.md")))
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", re.sub(r"[#|*`>-]+", " ", text)) if len(s.split()) > 5]


def a_turn(rng: random.Random, said: list[str], topic: str) -> dict:
    cands = []
    for i in range(20):
        content = ""
        while len(content) < 480:
            content += rng.choice(said) + " "
        cands.append(rag.Candidate(f"c{rng.randrange(10**9)}", f"d{i % 7}", f"notes/doc-{i % 7}.md", "Doc", "Section",
                                   content.strip(), 0, len(content), None, None, "md", i + 1, 1.0 / (i + 1),
                                   0.3 + i * 0.02, i + 1, i + 2, 2.0, support=1.0 if i < 3 else 0.2,
                                   missing=() if i < 3 else ("word",), lang="en", version="v1"))
    question = f"What does the {topic} say about {rng.choice(said).split()[2].lower()}?"
    result = rag.SearchResult(question, question, cands, {"dense": 0.6, "bm25": 0.4}, {"embed": 20.0},
                              searched_chunks=5000, terms=(topic,))
    rule = rag.SupportRule(0.5, rise_from=math.inf)
    gated = rag.gate(result, 0.6, 4, rule)
    ans = rag.Answer(" ".join(f"{c.quote[:160]} [{c.n}]" for c in gated.citations), False, "extractive",
                     citations=gated.citations, check=CitationCheck((1, 2, 3), (1, 2, 3), (), (), False))
    turn = {"id": f"t{rng.randrange(10**12)}", "question": question, "result": result, "n": 20, "threshold": 0.6,
            "max_chunks": 4, "mode": "extractive", "rule": rule, "asked_at": time.time(),
            "answers": {("extractive", None, tuple(c.chunk_id for c in gated.citations)): (ans, 90.0)}}
    turn["shown"] = conv.shown_of(gated, ans)
    return turn


def timed(fn, repeat: int) -> tuple[float, float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return statistics.median(out), max(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--conversations", type=int, default=1000)
    p.add_argument("--turns", type=int, default=20)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--dir", default=str(ROOT / "bench" / "out" / "conversations"))
    args = p.parse_args()
    where = Path(args.dir)
    shutil.rmtree(where, ignore_errors=True)
    rng, said = random.Random(65), sentences()
    topics = [f"topic{k}" for k in range(10)]

    store = conv.Store(where)
    t0, proto = time.perf_counter(), [a_turn(rng, said, t) for t in topics]
    for i in range(args.conversations):
        chat_id = f"c{i:05d}"
        for j in range(args.turns):
            turn = dict(proto[(i + j) % 10] if j else proto[i % 10], id=f"{chat_id}-{j}")
            if j == 0:
                turn["question"] = f"Conversation {i} on subject{i % 10}: " + turn["question"]
            store.save_turn(chat_id, turn, folder="/data")
    written = time.perf_counter() - t0
    store.close()
    size = sum(f.stat().st_size for f in where.iterdir())

    opened = timed(lambda: conv.Store(where).close(), args.repeat)
    store = conv.Store(where)
    middle = f"c{args.conversations // 2:05d}"
    rows = [
        ("open the store", opened),
        ("list, as the sidebar (16 newest)", timed(lambda: store.list(limit=16), args.repeat)),
        ("list, all", timed(lambda: store.list(), args.repeat)),
        ("find one word (a tenth of them hold it)", timed(lambda: store.list("subject3", limit=16), args.repeat)),
        ("find two words", timed(lambda: store.list("subject3 conversation", limit=16), args.repeat)),
        ("find a word no conversation holds", timed(lambda: store.list("zeppelin", limit=16), args.repeat)),
        (f"open one conversation ({args.turns} turns)", timed(lambda: store.load(middle), args.repeat)),
    ]
    assert len(store.list()) == args.conversations and len(store.list("subject3")) == len(range(3, args.conversations, 10))
    assert len(store.load(middle).turns) == args.turns
    print(f"{args.conversations} conversations x {args.turns} turns: written in {written:.0f} s, "
          f"{size / 2**20:.0f} MB on disk; {platform.processor() or platform.machine()}, Python "
          f"{platform.python_version()}, SQLite {conv.sqlite3.sqlite_version}, {args.repeat} runs each\n")
    print("| what | median ms | worst ms |\n|---|---|---|")
    for name, (med, worst) in rows:
        print(f"| {name} | {med:.1f} | {worst:.1f} |")


if __name__ == "__main__":
    main()
