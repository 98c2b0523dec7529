"""The `rag` command: index a folder, ask it a question, list its documents.

    rag index [FOLDER] [--rebuild]
    rag ask "question" [--threshold X] [--max-chunks K] [--doc PATH]... [--under FOLDER]... [--json]
    rag status [--json]
    rag eval needles SET | rag eval sweep IN OUT | rag eval beir DIR   (the lab: lab.evaluate, lab.beir)

Settings come from `load_settings()` (rag.toml, RAG_* variables); `--folder`, `--index-dir` and
`--config` override them. The CLI prints what the app shows: the answer, its citations, and the full
retrieval table with each candidate's verdict.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

from rag.engine import Engine, Turn
from rag.deciding.explain import (codes_note, ocr_note, evidence_rule, explain, names_note, paraphrase_note, percent,
                                  refusal_sentence, split_note, unsaid_note)
from rag.settings import Settings, Tuning, load_settings
from rag.deciding.citations import locator
from rag.indexing.scope import Scope, resolve
from rag.reading.extract import SUPPORTED, format_names, ocr_missing


def _engine(args: argparse.Namespace, folder: str | None = None) -> Engine:
    settings = load_settings(args.config, folder=folder or args.folder, index_dir=args.index_dir)
    return Engine(settings)


def _bar(done: int, total: int, name: str) -> None:
    # A terminal redraws one line; a pipe or log file gets the first and last states, one line each.
    tty = sys.stderr.isatty()
    if not tty and done not in (0, total):
        return
    width = 30
    filled = width * done // max(total, 1)
    line = f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {name[:40]}"
    sys.stderr.write(f"\r{line:<{width + 52}}" if tty else line + "\n")
    if tty and done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def cmd_index(args: argparse.Namespace) -> int:
    settings = load_settings(args.config, folder=args.folder_pos or args.folder, index_dir=args.index_dir)
    if args.rebuild and settings.index_path.exists() and not settings.server.chroma_host:
        from rag.indexing.library import HELD_DIR, INDEX_MARKER, is_index_dir

        if not is_index_dir(settings.index_path):  # never delete a folder that is not an index made here
            print(f"rag: refusing to rebuild: {settings.index_path} does not look like an index made by rag (no "
                  f"{INDEX_MARKER} marker, and not just library.sqlite and the index's own files); nothing was "
                  f"deleted. Choose another --index-dir, or delete that folder yourself.", file=sys.stderr)
            return 2
        for child in settings.index_path.iterdir():  # not uploads waiting for a replace-or-keep choice
            if child.name in (HELD_DIR, INDEX_MARKER):
                continue
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
    engine = Engine(settings)
    report = engine.sync(progress=_bar)
    for o in report.outcomes:
        if o.status in ("indexed", "failed", "removed", "skipped"):
            detail = f"{o.chunks} chunks" if o.status == "indexed" else o.reason
            print(f"{o.status:9} {o.path}  {detail}")
    print(report.summary())
    return 0


# An empty folder, said from the command line: where documents go and the command that reads them.
_ADD_HINT = "put documents in the folder and run `rag index`"


def turn_to_json(turn: Turn) -> dict:
    why = explain(turn.gated, lost_hint="", add_hint=_ADD_HINT)
    return {
        "question": turn.question,
        "answer": turn.answer.text,
        "refused": turn.answer.refused,
        "threshold": turn.gated.threshold,
        "threshold_source": turn.threshold.source if turn.threshold else None,
        "threshold_note": turn.threshold.note if turn.threshold else None,
        # A share that never rises has its distances at infinity, which JSON cannot write: null.
        "support_rule": {k: (None if isinstance(v, float) and math.isinf(v) else v)
                         for k, v in dataclasses.asdict(turn.gated.rule).items()},
        "failed_test": turn.gated.failed,
        "missing_words": list(turn.gated.missing),
        "unsaid_words": list(turn.gated.unsaid),  # an answer's: the question's words no kept passage holds
        "closest_distance": turn.gated.closest.distance if turn.gated.closest else None,
        # Why it was refused, as the chat says it: the rule named (`because`), its header, and each line.
        "because": turn.gated.because or None,
        "reason": why.reason or None,
        "needed_threshold": why.needed_threshold,  # rounded up: gating at it keeps the passage it names
        "explanation": {"best": why.best or None, "closest": why.closest or None,
                        "threshold": why.threshold or None, "hint": why.hint or None, "empty": why.empty or None},
        # As the answer quotes them: a sheet's citation names the rows its quoted sentences sit on.
        "citations": [dataclasses.asdict(c) for c in turn.answer.citations or turn.gated.citations],
        "candidates": [dict(dataclasses.asdict(c), verdict=v) for c, v in zip(turn.gated.candidates, turn.gated.verdicts)],
        "mode": turn.answer.mode,
        "searched_as": turn.result.query,
        "joined_tried": turn.result.joined_tried or None,
        "note": turn.answer.note,
        "flags": turn.answer.flags,
        "prompt_tokens": turn.answer.prompt_tokens,
        "timings_ms": turn.result.timings_ms,
    }


def _fmt(x) -> str:
    return "-" if x is None else str(x)


def print_turn(turn: Turn) -> None:
    g, a = turn.gated, turn.answer
    if turn.result.searched_note:
        print(f"({turn.result.searched_note})")
    print(a.text)
    for note in (paraphrase_note(g), unsaid_note(g), split_note(g)):
        if note and not a.refused:
            print(f"\n{note}")
    if a.note:
        print(f"\nnote: {a.note}")
    for flag in a.flags:
        print(f"flag: {flag}")
    if a.prompt_tokens is not None:
        print(f"prompt: {a.prompt_tokens} tokens (tiktoken)")
    if refusal_sentence(g):
        why = explain(g, lost_hint="", add_hint=_ADD_HINT)  # the chat's lines; `rag ask` has no "Why wasn't it found?"
        print("\n" + "\n".join(why.lines[1:] + why.details))
    if g.citations:
        print("\nCitations")
        for c in a.citations or g.citations:  # as the answer quotes them: a sheet's by the rows quoted
            quote = " ".join(c.quote.split())
            across = ("" if c.multilingual_distance is None else
                      f" · in another language: multilingual distance {c.multilingual_distance:.3f}")
            if c.ocr_confidence is not None:
                across += " · " + ocr_note(c.ocr_confidence, c.ocr_lowest, Tuning.ocr_low)
            print(f"[{c.n}] {c.doc_name} · {c.locator} · {c.link} · distance {c.distance:.3f}{across}\n    \"{quote[:300]}\"")
    note = f"; {turn.threshold.note}" if turn.threshold else ""
    rule = g.rule
    print(f"\nRetrieval (threshold {g.threshold:.3f}{note}; {evidence_rule(rule)}; at most {g.max_chunks} kept)")
    if names := names_note(turn.result.unknown_names, turn.result.absent_names):
        print(names)
    if codes := codes_note(g):
        print(codes)
    if turn.result.feedback_note:
        print(turn.result.feedback_note)
    judged = any(c.judge is not None for c in g.candidates)
    head = f"{'judge':>6} {'j#':>3} " if judged else ""
    sided = any(c.side_distance is not None for c in g.candidates)
    multi = f"{'multi':>5} {'mdist':>6} " if sided else ""
    print(f"{head}{'fused':>5} {'dense':>5} {'bm25':>5} {multi}{'dist':>6} {'supp':>5} {'need':>5}  {'verdict':<26} document / section")
    for c, v in zip(g.candidates, g.verdicts):
        lacks = f"  (lacks: {', '.join(c.lacking)})" if c.lacking else ""
        score = (f"{_fmt(c.judge if c.judge is None else f'{c.judge:.2f}'):>6} {_fmt(c.judge_rank):>3} "
                 if judged else "")
        # Rounded up, as the refusal and the diagnosis say it: a need is never printed lower than it is.
        need = "-" if rule.judging else percent(rule.needed_by(c), needed=True)
        side = f"{_fmt(c.side_rank):>5} {_fmt(c.side_distance if c.side_distance is None else f'{c.side_distance:.3f}'):>6} " \
            if sided else ""
        print(f"{score}{c.fused_rank:>5} {_fmt(c.dense_rank):>5} {_fmt(c.bm25_rank):>5} {side}{c.distance:6.3f} "
              f"{percent(c.support):>5} {need:>5}  "
              f"{v:<26} {c.doc_name}{' / ' + where if (where := locator(c) if c.place else c.section) else ''}{lacks}")


def cmd_ask(args: argparse.Namespace) -> int:
    engine = _engine(args)
    if not engine.snapshot.chunks:
        engine.sync()
    t = time.perf_counter()
    # --doc and --under limit the search to those documents (both search sides mask the rest out).
    scope = resolve(Scope.of({"docs": [_in_folder(engine, p) for p in args.doc or ()],
                              "under": [_in_folder(engine, p) for p in args.under or ()]}), engine.documents())
    turn = engine.ask(args.question, threshold=args.threshold, max_chunks=args.max_chunks, doc_ids=scope.doc_ids)
    # A file that could not be read is not searched: say so beside every answer or refusal, since a person who
    # only asks would otherwise never learn that part of the folder is missing.
    # Nor is a file added, changed or removed since `rag index` ran: ask does not index (another process, the
    # app, may be doing it), so it says what the answer could not see.
    failed = [d for d in engine.documents() if d.status == "failed"]
    pending = engine.pending()
    if args.json:
        out = turn_to_json(turn)
        out["failed_documents"] = [{"path": d.path, "reason": d.reason} for d in failed]
        out["pending_files"] = pending
        out["scope"] = dict(scope.scope.as_dict(), searched=list(scope.paths), problems=list(scope.problems)) \
            if scope.scope else None
        print(json.dumps(out, ensure_ascii=False, indent=2))
    else:
        if scope.scope:
            print(scope.searched + "".join(f"\nScope: {p}." for p in scope.problems) + "\n")
        print_turn(turn)
        if scope.scope and turn.answer.refused:
            print("\n" + scope.refusal())
        if failed:
            print(f"\nNot searched: {_files(len(failed))} could not be read ({_names([d.path for d in failed])}); "
                  "`rag status` says why.")
        if pending:
            print(f"\nNot indexed yet: {_files(len(pending))} added, changed or removed since the last `rag index` "
                  f"({_names(pending)}); this answer does not see those changes.")
        print(f"\n({(time.perf_counter() - t) * 1000:.0f} ms)")
    return 0


def _in_folder(engine: Engine, path: str) -> str:
    """A --doc or --under path as the library names it: relative to the folder, whether given relative to
    the folder, relative to here, or absolute."""
    p = Path(path)
    for base in (Path.cwd(), engine.folder):
        full = (base / p).resolve()
        if full.is_relative_to(Path(engine.folder).resolve()) and full.exists():
            return full.relative_to(Path(engine.folder).resolve()).as_posix()
    return p.as_posix().strip("/")


def _files(n: int) -> str:
    return f"{n} file{'s' if n != 1 else ''}"


def _names(paths: Sequence[str], most: int = 5) -> str:
    return ", ".join(paths[:most]) + (f" and {len(paths) - most} more" if len(paths) > most else "")


def cmd_status(args: argparse.Namespace) -> int:
    engine = _engine(args)
    docs = engine.documents()
    if args.json:
        print(json.dumps([dataclasses.asdict(d) for d in docs], ensure_ascii=False, indent=2))
        return 0
    for d in docs:
        stamp = d.stamp.label() if d.stamp else "-"
        extra = d.reason if d.status == "failed" else f"{d.chunks} chunks, {d.truncated} truncated, header {d.header_share:.1%}"
        print(f"{d.status:8} {d.path}  {extra}  [{stamp}]")
    pending = engine.pending()
    for path in pending:  # not in the index as they are now: new, changed, or gone from the folder
        print(f"{'pending':8} {path}  added, changed or removed since the last `rag index`")
    s = engine.stats()
    print(f"{s.documents} documents ({s.indexed} indexed, {s.failed} failed, {s.stale} stale), {s.chunks} chunks, "
          f"model {s.model}" + (f", multilingual side {engine.side.name}" if engine.side else ", multilingual side off")
          + (f"; {_files(len(pending))} pending" if pending else ""))
    print(engine.language_line(s))
    print(f"tuning {engine.settings.tuning.fingerprint} (every value the project tuned; docs/settings.md)")
    print(f"reads {format_names()} ({', '.join(sorted(SUPPORTED))})")
    if missing := ocr_missing():
        print(missing)
    for error in (engine.indexer.side_error, engine.judge_error, engine.model_error):  # a model that did not load
        if error:
            print(error)
    calibration = engine.calibrated()
    for lang in (calibration.languages if calibration else ()):
        print(f"threshold {calibration.languages[lang].describe()}")
    if engine.settings.threshold is not None or engine.settings.language_thresholds:
        print(f"set in the settings (these win): threshold {_fmt(engine.settings.threshold)}, "
              f"language_thresholds {engine.settings.language_thresholds or '-'}")
    return 0


# --- `rag eval ...` ---------------------------------------------------------------------------------
# The measuring lives in the lab (lab/, shipped beside rag/), imported only when `rag eval` runs: the app,
# `rag ask` and `rag index` never load it.

DEFAULT_COMPARE = ("E/hybrid:A/hybrid", "E/hybrid:C/hybrid", "E/hybrid:E/dense", "E/hybrid:E/bm25")


def add_eval_parser(sub) -> None:
    """Register `rag eval needles|sweep|beir` on the CLI's subparsers."""
    pe = sub.add_parser("eval", help="measure retrieval: needle sets, threshold sweep, BEIR benchmarks")
    es = pe.add_subparsers(dest="eval_cmd", required=True)
    pn = es.add_parser("needles", help="Recall@1/4/8/20, MRR, destroyed answers for strategies A-F x modes")
    pn.add_argument("set", help="needle set (JSONL)")
    pn.add_argument("--configs", help="comma-separated STRATEGY/MODE[:DENSE_W:BM25_W] (default: A-F x dense, bm25, hybrid)")
    pn.add_argument("--compare", action="append", metavar="A:B",
                    help="paired sign test between two configurations, e.g. E/hybrid:A/hybrid (repeatable)")
    pn.add_argument("--at", default="4,20", help="k values for the sign tests (default 4,20)")
    pn.add_argument("--json", action="store_true")
    pn.set_defaults(fn=cmd_eval_needles)
    pw = es.add_parser("sweep", help="nearest distances and a threshold sweep of answerable vs refusable questions")
    pw.add_argument("inp", metavar="IN", help="questions (JSONL: needle set format)")
    pw.add_argument("out", metavar="OUT", help="where to write the sweep as JSON")
    pw.add_argument("--budget", type=float, default=0.1, help="bluff rate allowed when suggesting (default 0.1)")
    pw.set_defaults(fn=cmd_eval_sweep)
    pb = es.add_parser("beir", help="nDCG@10, Recall@10/100, MRR@10 on a BEIR folder (temporary index)")
    pb.add_argument("dir", help="folder with corpus.jsonl(.gz), queries.jsonl, qrels/<split>.tsv")
    pb.add_argument("--split", default="test")
    pb.add_argument("--strategy", default="E")
    pb.add_argument("--candidates", type=int, default=1000, help="chunks per side fused for hybrid (default 1000)")
    pb.add_argument("--cache", help="folder to keep vectors in between runs (e.g. bench/out)")
    pb.add_argument("--json", action="store_true")
    pb.set_defaults(fn=cmd_eval_beir)


def _lab(name: str):
    """The lab's module `lab.<name>`; without the lab, a ValueError that `main` prints as one line (exit 2)."""
    import importlib
    import sys

    # The lab is not in the wheel: in a checkout it sits beside rag/, and the console script does not put the
    # checkout on the path.
    checkout = str(Path(__file__).resolve().parent.parent)
    if (Path(checkout) / "lab" / "__init__.py").is_file() and checkout not in sys.path:
        sys.path.append(checkout)
    try:
        return importlib.import_module(f"lab.{name}")
    except ModuleNotFoundError as exc:
        if exc.name not in ("lab", f"lab.{name}"):
            raise  # the lab is there but something it needs is not: the full error says what
        raise ValueError("`rag eval` needs the project's lab (the `lab` package beside `rag`), which this "
                         "installation lacks: run it from the project's checkout") from None


def _settings(args) -> Settings:
    return load_settings(args.config, folder=args.folder, index_dir=args.index_dir)


def _pairs(specs: Sequence[str]) -> list[tuple[str, str]]:
    out = []
    for spec in specs:
        # Configurations hold ':' themselves (weights): split between the two STRATEGY/ names.
        m = re.match(r"^([A-F]/[^/]+?):([A-F]/.+)$", spec)
        if not m:
            raise ValueError(f"--compare {spec!r}: write A:B, e.g. E/hybrid:A/hybrid")
        out.append((m.group(1), m.group(2)))
    return out


def cmd_eval_needles(args) -> int:
    from rag.indexing.embed import load_embedder
    from rag.deciding.needles import load_questions

    ev = _lab("evaluate")
    settings = _settings(args)
    questions = load_questions(args.set)
    if not questions:
        raise ValueError(f"no questions in {args.set}")
    problems = ev.check_needles(questions, settings.folder)
    for p in problems:
        print(f"warning: {p}")
    configs = [c.strip() for c in args.configs.split(",")] if args.configs else None
    compare = _pairs(args.compare or DEFAULT_COMPARE)
    configs = list(dict.fromkeys((configs or [f"{s}/{m}" for s in ev.STRATEGIES for m in ev.MODES])
                                 + [c for pair in compare for c in pair]))
    at = [int(k) for k in args.at.split(",")]
    embedder = load_embedder(settings.tuning.model, settings.tuning.embed_batch_size, settings.tuning.model_languages)
    run = ev.evaluate_needles(questions, settings.folder, embedder, settings, configs)
    if args.json:
        print(json.dumps(run.to_json(compare, at), ensure_ascii=False, indent=1))
    else:
        print(f"{settings.folder}: {len(run.questions)} answerable questions; chunks per strategy {run.chunks}")
        print(run.table(compare, at))
    return 0


def cmd_eval_sweep(args) -> int:
    from rag.indexing.embed import load_embedder
    from rag.deciding.needles import load_questions
    from rag.deciding.sweep import sweep

    ev = _lab("evaluate")
    settings = _settings(args)
    questions = load_questions(args.inp)
    if not questions:
        raise ValueError(f"no questions in {args.inp}")
    embedder = load_embedder(settings.tuning.model, settings.tuning.embed_batch_size, settings.tuning.model_languages)
    # A temporary index of the folder with the person's settings: their own index is never written to.
    with tempfile.TemporaryDirectory(prefix="rag-sweep-") as tmp:
        engine, _ = ev.open_engine(settings.folder, Path(tmp), embedder, settings)
        try:
            sw = sweep(engine, questions, budget=args.budget)
        finally:
            engine.close()
    Path(args.out).write_text(json.dumps(sw.to_json(), ensure_ascii=False, indent=1), encoding="utf-8")
    for group in sw.rows:
        print(ev.sweep_table(sw, group) + "\n")
    print(f"written: {args.out}")
    return 0


def cmd_eval_beir(args) -> int:
    from rag.indexing.embed import load_embedder

    beir = _lab("beir")
    settings = _settings(args)
    embedder = load_embedder(settings.tuning.model, settings.tuning.embed_batch_size, settings.tuning.model_languages)
    run = beir.run_beir(args.dir, embedder, settings, split=args.split, strategy=args.strategy,
                        candidates=args.candidates, cache=Path(args.cache) if args.cache else None)
    if args.json:
        print(json.dumps({k: v for k, v in vars(run).items() if k != "per_query"}, indent=1))
    else:
        print(run.table())
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="rag", description="Chat with your folder: evidence or an explained refusal.")
    p.add_argument("--config", help="settings file (TOML); default rag.toml or $RAG_CONFIG")
    p.add_argument("--folder", help="the document folder (default: settings, else ./data)")
    p.add_argument("--index-dir", help="where the index lives (default: FOLDER/.rag-index)")
    sub = p.add_subparsers(dest="cmd", required=True)
    pi = sub.add_parser("index", help="index new and changed files, remove deleted ones")
    pi.add_argument("folder_pos", nargs="?", metavar="FOLDER")
    pi.add_argument("--rebuild", action="store_true", help="delete the index and build it again from the folder")
    pi.set_defaults(fn=cmd_index)
    pa = sub.add_parser("ask", help="ask the folder a question")
    pa.add_argument("question")
    pa.add_argument("--threshold", type=float,
                    help="cosine distance a chunk must be under (default: calibrated on the folder per language)")
    pa.add_argument("--max-chunks", type=int)
    pa.add_argument("--doc", action="append", metavar="PATH", help="ask only this document (repeatable)")
    pa.add_argument("--under", action="append", metavar="FOLDER", help="ask only the documents under this folder")
    pa.add_argument("--json", action="store_true")
    pa.set_defaults(fn=cmd_ask)
    ps = sub.add_parser("status", help="list documents with status, reason, chunks and stamp")
    ps.add_argument("--json", action="store_true")
    ps.set_defaults(fn=cmd_status)
    add_eval_parser(sub)
    args = p.parse_args(argv)
    try:
        code = args.fn(args)
        sys.stdout.flush()  # here, not at exit, so that a closed pipe is caught below
        return code
    except ValueError as exc:
        print(f"rag: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # `rag ask ... | head`: the reader went away. Not an error of ours; stop quietly (and keep Python from
        # complaining again when it flushes stdout at exit).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
