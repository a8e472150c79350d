"""Load times of the logs the real packages write (Inspect .eval/.json, hermes-agent state.db), a replay
over each, and how fast a 2.7 MB zip bomb is refused. Prints figures; asserts nothing.

    python bench/bench_logs.py [--repeat N]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from compactscope.core.loaders import LoadError, load  # noqa: E402
from compactscope.core.replay import replay  # noqa: E402
from helpers import deflated_zeros, deflated_zip  # noqa: E402  (tests/helpers.py: the zip builder)

CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"
FILES = ["inspect_ai/react-compaction-edit.eval", "inspect_ai/react-compaction-edit.json",
         "inspect_ai/react-compaction-summary.eval", "inspect_ai/react-compaction-trim.eval",
         "hermes-agent/rotation/state.db", "hermes-agent/inplace/state.db"]


def _bomb(path: Path, members: int = 30, mb: int = 90) -> None:
    data, crc = deflated_zeros(mb)
    path.write_bytes(deflated_zip([(f"samples/{k}_epoch_1.json", data, crc, mb << 20) for k in range(members)]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    print(f"{'file':<42}{'load ms (median)':>17}{'messages':>10}{'segments':>10}{'replay ms':>11}")
    for f in FILES:
        p = CORPUS / f
        if not p.exists():
            print(f"{f:<42} (not in the corpus)")
            continue
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            r = load(p)
            times.append((time.perf_counter() - t0) * 1000)
        c = r.main
        t0 = time.perf_counter()
        replay(c, "hermes" if "hermes" in f else "s08")
        rt = (time.perf_counter() - t0) * 1000
        print(f"{f:<42}{statistics.median(times):>17.1f}{len(c.messages):>10}{len(c.segments):>10}{rt:>11.1f}")
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "bomb.eval"
        _bomb(p)
        tracemalloc.start()
        t0 = time.perf_counter()
        try:
            load(p)
            print("zip bomb: LOADED (the cap did not hold)")
        except LoadError as e:
            ms = (time.perf_counter() - t0) * 1000
            peak = tracemalloc.get_traced_memory()[1]
            print(f"zip bomb ({p.stat().st_size:,} bytes, 30 x 90 MB declared): refused in {ms:.1f} ms, "
                  f"peak {peak / 1e6:.1f} MB traced: {e.message}")
        finally:
            tracemalloc.stop()


if __name__ == "__main__":
    main()
