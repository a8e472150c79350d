"""Benchmark: load a ~100 MB Claude Code session.

Builds the session by scaling the corpus sessions (../shared/corpus/entireio-cli
and claude-code-viewer): copies are chained one after another with fresh uuids
and message ids, so the result is one long session with many compactions.
Prints the load time against parsing every line with orjson alone (target:
no more than 2x), and the peak memory of the load (target: within 3x the file
size), measured in a fresh process (ru_maxrss minus the process's size before
loading) and with tracemalloc (Python allocations only).

    python bench/bench_load.py [--mb 100] [--out /tmp/compactscope-bench.jsonl] [--keep]
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CORPUS = ROOT.parent / "shared" / "corpus"
SOURCES = ["entireio-cli/b0-2936744f3b-0-full.jsonl", "entireio-cli/44-785715c3f5-2-full.jsonl",
           "entireio-cli/b8-659b3a4dd4-0-full.jsonl", "entireio-cli/fc-99c919b212-0-full.jsonl",
           "entireio-cli/4b-7d5121b42a-0-full.jsonl", "claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"]


def _clock() -> float:
    """CPU time of this process: on a shared machine, other processes' load does not count."""
    return time.process_time()


def build(out: Path, target_bytes: int) -> tuple[int, int]:
    """Write a session of about target_bytes; returns (bytes, lines)."""
    sources = []
    for s in SOURCES:
        p = CORPUS / s
        if p.exists():
            recs = []
            for line in p.read_bytes().splitlines():
                try:
                    recs.append(orjson.loads(line))
                except orjson.JSONDecodeError:
                    continue
            sources.append(recs)
    if not sources:
        sys.exit(f"no corpus sessions found under {CORPUS}")
    written = lines = 0
    prev_leaf = None
    k = 0
    with out.open("wb") as f:
        while written < target_bytes:
            recs = sources[k % len(sources)]
            own = {r.get("uuid") for r in recs if isinstance(r, dict) and r.get("uuid")}
            leaf = prev_leaf
            for r in recs:
                if not isinstance(r, dict):
                    continue
                r = dict(r)
                for key in ("uuid", "parentUuid", "logicalParentUuid"):
                    v = r.get(key)
                    if isinstance(v, str):
                        r[key] = f"{v}-{k}" if v in own else prev_leaf
                if r.get("parentUuid") is None and r.get("type") != "system" and prev_leaf and not r.get("isSidechain"):
                    r["parentUuid"] = prev_leaf
                m = r.get("message")
                if isinstance(m, dict) and isinstance(m.get("id"), str):
                    r["message"] = {**m, "id": f"{m['id']}-{k}"}
                if r.get("type") in ("user", "assistant") and not r.get("isSidechain") and r.get("uuid"):
                    leaf = r["uuid"]
                data = orjson.dumps(r) + b"\n"
                f.write(data)
                written += len(data)
                lines += 1
            prev_leaf = leaf
            k += 1
    return written, lines


def parse_only(path: Path) -> float:
    t = _clock()
    with path.open("rb") as f:
        for line in f:
            if line.strip():
                orjson.loads(line)
    return _clock() - t


def parse_keep(path: Path) -> float:
    gc.collect()
    t = _clock()
    with path.open("rb") as f:
        records = [orjson.loads(line) for line in f if line.strip()]
    dt = _clock() - t
    del records
    return dt


def load_once(path: Path) -> tuple[float, object]:
    from compactscope.core.loaders import load
    t = _clock()
    r = load(path)
    return _clock() - t, r


def _child(path: str) -> None:
    """Run in a fresh process: peak RSS growth while loading."""
    import resource
    from compactscope.core.loaders import load
    import compactscope.core.loaders.claude_code  # noqa: F401  (imports are not part of the load)
    gc.collect()
    before = _rss_now()
    r = load(path)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"before": before, "peak": peak, "messages": len(r.main.messages)}))


def _rss_now() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=100)
    ap.add_argument("--out", default="/tmp/compactscope-bench.jsonl")
    ap.add_argument("--keep", action="store_true", help="keep the generated file")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args.child)
        return 0
    out = Path(args.out)
    t = _clock()
    size, lines = build(out, int(args.mb * 1024 * 1024))
    print(f"built {out}: {size / 1e6:.1f} MB, {lines:,} lines in {_clock() - t:.1f}s")
    print(f"times: CPU seconds of this process (time.process_time), best of {args.repeat}")
    try:
        import compactscope.core.loaders.claude_code  # noqa: F401  (imports are not part of the load)
        bases, keeps, times = [], [], []
        for _ in range(args.repeat):       # interleaved, so a busy machine slows all three alike
            bases.append(parse_only(out))
            keeps.append(parse_keep(out))
            gc.collect()
            dt, r = load_once(out)
            times.append(dt)
            counts = (len(r.main.messages), len(r.main.events), len(r.main.segments))
            del r
            gc.collect()
        base, keep, best = min(bases), min(keeps), min(times)
        print(f"orjson per line only : {base:.2f}s  (parse and drop each record)")
        print(f"orjson, keep records : {keep:.2f}s  (parse into a list)")
        print(f"compactscope load    : {best:.2f}s  ({counts[0]:,} messages, "
              f"{counts[1]} compactions, {counts[2]} segments)")
        print(f"ratio                : {best / base:.2f}x the parse-only time, {best / keep:.2f}x parse-and-keep "
              f"(target <= 2x)")
        res = subprocess.run([sys.executable, __file__, "--child", str(out)], capture_output=True, text=True,
                             cwd=str(ROOT))
        if res.returncode == 0:
            d = json.loads(res.stdout.strip().splitlines()[-1])
            grown = d["peak"] - d["before"]
            print(f"peak RSS growth      : {grown / 1e6:.0f} MB = {grown / size:.2f}x the file "
                  f"(process peak {d['peak'] / 1e6:.0f} MB; target <= 3x)")
        else:
            print("memory child failed:", res.stderr[-500:])
        import tracemalloc
        tracemalloc.start()
        from compactscope.core.loaders import load
        r = load(out)
        cur, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"tracemalloc peak     : {peak / 1e6:.0f} MB = {peak / size:.2f}x the file "
              f"(kept after load: {cur / 1e6:.0f} MB = {cur / size:.2f}x)")
        del r
    finally:
        if not args.keep:
            out.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
