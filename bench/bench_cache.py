"""The workspace cache after identical runs: five ``compactscope run`` of one file whose summary fires
(each writes a transcript as large as its input) leave the cache the size of one run.

    python bench/bench_cache.py [--messages 20000] [--runs 5] [--strategy s08]
    python bench/bench_cache.py --messages 300 --runs 2          # the small smoke size

Writes a Claude Code session (bench_memory's generator) into a temporary folder, points the user cache
there (XDG_CACHE_HOME), runs ``compactscope run FILE --strategy S`` N times, each in a fresh process
with a threshold low enough for the summary to fire, and prints after each run what ``compactscope
cache`` reports (the bytes on disk, every file once: hard links counted once), then that figure after
the last run against the first. Then ``compactscope cache --clear`` and the size left. Target (issue 12):
five identical runs leave the cache the size of one. Prints figures; asserts nothing.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_memory import write_session  # noqa: E402

# a threshold each strategy's summary fires under on the generated session (and writes its transcript)
FIRES = {"s08": ["--set", "context_limit=2000"], "claude_code": ["--set", "window=8000"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--messages", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--strategy", default="s08", choices=sorted(FIRES))
    args = ap.parse_args()
    from compactscope.core.files import cache
    with tempfile.TemporaryDirectory(prefix="bench-cache-") as d:
        tmp = Path(d)
        path = tmp / "session.jsonl"
        size = write_session(path, args.messages)
        env = {**os.environ, "XDG_CACHE_HOME": str(tmp / "cache")}
        env.pop(cache.ENV_MAX, None)
        root = Path(subprocess.run([sys.executable, "-c", "from compactscope.core.files.cache import cache_root; "
                                    "print(cache_root())"], env=env, capture_output=True, text=True,
                                   check=True).stdout.strip())
        print(f"{args.messages:,} messages, file {size / 1e6:.1f} MB; cache {root}; strategy {args.strategy}, "
              f"{args.runs} identical runs")
        sizes = []
        for k in range(1, args.runs + 1):
            res = subprocess.run([sys.executable, "-m", "compactscope", "run", str(path), "--strategy", args.strategy,
                                  *FIRES[args.strategy]], env=env, capture_output=True, text=True, cwd=tmp)
            if res.returncode != 0:
                print(f"  run {k} failed ({res.returncode}): {res.stderr.strip()[-600:]}")
                return 1
            u = cache.usage(root)
            fired = "transcript saved" in res.stdout
            sizes.append(u.bytes)
            print(f"  after run {k}: {cache.human(u.bytes)} ({u.bytes:,} bytes) in {u.sessions} session folder(s), "
                  f"{u.objects} object(s){'' if fired else '  (no transcript was written)'}")
        if sizes and sizes[0]:
            print(f"  the cache after {args.runs} runs / after one: {sizes[-1] / sizes[0]:.2f}x "
                  "(target 1x)")
        res = subprocess.run([sys.executable, "-m", "compactscope", "cache", "--clear"], env=env,
                             capture_output=True, text=True)
        said = (res.stdout.strip() or res.stderr.strip()).splitlines()
        print(f"  compactscope cache --clear: {said[0] if said else res.returncode}")
        print(f"  left: {cache.human(cache.usage(root).bytes)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
