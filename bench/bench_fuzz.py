"""The long fuzz campaign (issue 13): 100,000 mutated inputs of every format through every loader, the
checker, every strategy (defaults and aggressive parameters), ``run --json`` and ``replay``.

Each input is a corpus-like seed (tests/fuzzlib.py: Claude Code sessions with compactions, sidechains and
subagent progress, Anthropic lists/bodies/JSONL with SDK reprs, API traces, OpenAI bodies, SWE-agent
trajectories, Hermes snapshots and state.db, Gemini CLI sessions, Inspect logs as JSON and as .eval zips,
Compactscope recordings, proxy logs, and pieces of the real corpus when it is there) with structural
mutations (values of the wrong type, lone surrogates, NaN, 1e400, huge integers, deep nesting, long
strings, duplicated or dropped items) and byte mutations (cuts, joined lines, invalid UTF-8, stray
brackets). A failure is anything but the documented outcomes (see tests/fuzzlib.py); each kind is printed
once with its traceback, and with --keep its first input is saved.

    python bench/bench_fuzz.py [--inputs 100000] [--seed 1] [--workers 2] [--keep DIR]

Prints the count of inputs, how many loaded, the strategy runs, the failures (the campaign's target: 0)
and the time per input.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

CHUNK = 250


def _chunk(args) -> dict:
    n, seed, keep, cli = args
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import fuzzlib
    with tempfile.TemporaryDirectory(prefix="compactscope-fuzz-") as tmp:
        runner = fuzzlib.Runner(Path(tmp) / "run", time_limit=60, cli=cli)
        stats = fuzzlib.campaign(n, seed, Path(tmp), runner=runner,
                                 keep_failures=Path(keep) / f"chunk-{seed}" if keep else None)
    return stats


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inputs", type=int, default=100_000, help="how many inputs (default 100,000)")
    ap.add_argument("--seed", type=int, default=1, help="the campaign's seed (each chunk derives its own)")
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1), help="processes (default 2)")
    ap.add_argument("--keep", metavar="DIR", help="save the first input of each kind of failure here")
    ap.add_argument("--no-cli", action="store_true", help="skip the CLI (run --json, replay, check) per input")
    args = ap.parse_args(argv)
    sizes = [CHUNK] * (args.inputs // CHUNK) + ([args.inputs % CHUNK] if args.inputs % CHUNK else [])
    jobs = [(n, args.seed * 1_000_003 + k, args.keep, not args.no_cli) for k, n in enumerate(sizes)]
    total = {"inputs": 0, "loaded": 0, "conversations": 0, "runs": 0, "failures": 0, "slowest": 0.0}
    groups: dict = {}
    t0 = time.perf_counter()
    print(f"fuzzing {args.inputs:,} inputs in {len(jobs)} chunks on {args.workers} process(es)", flush=True)
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        futures = [pool.submit(_chunk, j) for j in jobs]
        for done, fut in enumerate(as_completed(futures), 1):
            st = fut.result()
            for k in ("inputs", "loaded", "conversations", "runs", "failures"):
                total[k] += st[k]
            total["slowest"] = max(total["slowest"], st["slowest"])
            for key, g in st["groups"].items():
                have = groups.setdefault(key, dict(g, count=0))
                have["count"] += g["count"]
            if done % max(1, len(jobs) // 20) == 0 or done == len(jobs):
                dt = time.perf_counter() - t0
                print(f"  {total['inputs']:>9,} inputs, {total['failures']:,} failing, {dt:,.0f} s "
                      f"({dt / max(total['inputs'], 1) * 1000:.1f} ms per input)", flush=True)
    dt = time.perf_counter() - t0
    for key, g in sorted(groups.items(), key=lambda kv: -kv[1]["count"]):
        print(f"\nFAILURE x{g['count']} {key} (seed {g['seed']}): {g['error']}\n{g['detail'][-3000:]}")
    print(f"\nfuzzed {total['inputs']:,} inputs: {total['loaded']:,} loaded, {total['conversations']:,} conversations, "
          f"{total['runs']:,} strategy runs; {total['failures']:,} failing input(s) in {len(groups)} kind(s); "
          f"{dt:,.0f} s ({dt / max(total['inputs'], 1) * 1000:.1f} ms per input), slowest input "
          f"{total['slowest']:.1f} s")
    return 1 if total["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
