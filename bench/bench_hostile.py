"""Benchmark: hostile inputs load in time linear in their size (the CPU bounds the tests do not assert).

tests/test_hardening.py checks what these inputs load to and that the load stays within a memory bound; the
time each costs is printed here, against the target it once missed (Python's own parser took 16 s on the
6 MB SDK repr; 5 MB of escaped quotes took 12-66 s). Times are CPU seconds of this process (on a shared
machine, other processes' load does not count); ``--scale`` multiplies every input's size.

    python bench/bench_hostile.py [--scale 1.0] [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from compactscope.core.loaders import load  # noqa: E402


def nested_corrupt_lines(scale: float) -> tuple[str, str]:
    first = json.dumps({"type": "user", "uuid": "u0", "parentUuid": None, "sessionId": "s",
                        "message": {"role": "user", "content": "x"}})
    bad = '{"type":"user","uuid":"u","sessionId":"s","message":' + '{"a":' * int(40_000 * scale)
    return "s.jsonl", first + "\n" + bad + "\n" + bad + "\n"


def escaped_quotes(scale: float) -> tuple[str, str]:
    return "q.json", json.dumps({"messages": [{"role": "user", "content": '"' * int(2_500_000 * scale)},
                                              {"role": "assistant", "content": "\\" * int(1_000_000 * scale)}]},
                                indent=2)


def sdk_repr(scale: float) -> tuple[str, str]:
    blocks = "[" + ", ".join(["TextBlock(citations=None, text='ab', type='text')"] * int(120_000 * scale)) + "]"
    return "t.jsonl", (json.dumps({"role": "user", "content": "hi"}) + "\n"
                       + json.dumps({"role": "assistant", "content": blocks}) + "\n")


CASES = [("a never-closed nested line, twice", nested_corrupt_lines, 3.0),
         ("escaped quotes in pretty JSON", escaped_quotes, 6.0),
         ("an SDK repr of text blocks", sdk_repr, 12.0)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for title, make, target in CASES:
            name, text = make(args.scale)
            p = Path(tmp) / name
            p.write_text(text)
            best = float("inf")
            for _ in range(args.repeat):
                t0 = time.process_time()
                load(p)
                best = min(best, time.process_time() - t0)
            bound = target * args.scale
            print(f"{title:<36} {len(text) / 1e6:6.1f} MB  {best:6.2f} s of CPU  "
                  f"(target {bound:.1f} s: {'met' if best <= bound else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
