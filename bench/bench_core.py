"""Per-layer time and memory of the s08 pipeline at 1k, 10k and 100k messages.

    python bench/bench_core.py [--sizes 1000,10000,100000]

Prints, for each size: each layer's own time (the pure function), the step's bookkeeping
(size, tokens, checker), the cost of sizing a list that shares all but a few messages with
the previous one, and the extra memory a full trace takes relative to the input.
Targets (issue 2): each deterministic layer within 20 ms at 10k messages; re-sizing costs in
proportion to the changed messages; a trace within 1.5x the input's memory.
"""
from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from compactscope.core.layers.s08 import LAYERS  # noqa: E402
from compactscope.core.pipeline.engine import Engine  # noqa: E402
from compactscope.core.pipeline.size import SizeMeter  # noqa: E402
from compactscope.core.summarizers import FixedSummarizer  # noqa: E402
from compactscope.core.files.workspace import Workspace  # noqa: E402


def conversation(n: int) -> list:
    msgs = [{"role": "user", "content": "Refactor the payment module and keep the tests green."}]
    k = 0
    while len(msgs) < n - 1:
        k += 1
        if k % 5 == 0:
            msgs.append({"role": "assistant", "content": [{"type": "text", "text": f"Step {k} done. " * 8}]})
            msgs.append({"role": "user", "content": f"Continue with step {k + 1}."})
            continue
        ids = [f"toolu_{k:06d}_{j}" for j in range(1 + k % 3)]
        msgs.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": i, "name": "read_file", "input": {"path": f"src/mod_{k}_{j}.py"}}
            for j, i in enumerate(ids)]})
        msgs.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": i, "content": f"line {k}\n" * (20 + (k * 7) % 200)}
            for i in ids]})
    msgs.append({"role": "assistant", "content": [{"type": "text", "text": "All steps done."}]})
    return msgs


def bench(n: int) -> None:
    msgs = conversation(n)
    tmp = tempfile.mkdtemp(prefix="cs-bench-")
    eng = Engine("s08", {}, workspace=Workspace(tmp), summarizer=FixedSummarizer("summary"))
    ctx = eng.context()
    print(f"\n== {len(msgs):,} messages ==")
    for name in ("tool_result_budget", "snip_compact", "micro_compact", "compact_history"):
        fn = LAYERS[name].fn
        best = best_cpu = float("inf")
        for _ in range(3):
            t0, c0 = time.perf_counter(), time.process_time()
            fn(msgs, ctx)
            best = min(best, time.perf_counter() - t0)
            best_cpu = min(best_cpu, time.process_time() - c0)
        # wall time, and this process's CPU time (on a shared machine others' load inflates the wall time)
        print(f"  {name:<20} layer {best * 1000:8.2f} ms  (CPU {best_cpu * 1000:.2f} ms)")
    # full pipeline with bookkeeping (sizes cached after the first run)
    eng.meter.clear()
    t0 = time.perf_counter()
    trace = eng.run(msgs)
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    trace = eng.run(msgs)
    warm = time.perf_counter() - t0
    print(f"  whole pipeline incl. sizes+tokens+checker: cold {cold * 1000:.1f} ms, warm {warm * 1000:.1f} ms")
    for s in trace.steps:
        print(f"    {s.layer:<20} step {s.seconds * 1000:8.2f} ms  changed={s.changed}")
    # incremental size
    meter = SizeMeter()
    t0 = time.perf_counter()
    meter.size(msgs)
    full = time.perf_counter() - t0
    grown = msgs + [{"role": "user", "content": "one more"}]
    t0 = time.perf_counter()
    meter.size(grown)
    incr = time.perf_counter() - t0
    t0 = time.perf_counter()
    len(str(grown))
    naive = time.perf_counter() - t0
    print(f"  size: first {full * 1000:.2f} ms, after appending 1 message {incr * 1000:.2f} ms "
          f"(len(str()) from scratch {naive * 1000:.2f} ms, {naive / max(incr, 1e-9):.0f}x slower)")
    # memory: input vs the trace's extra
    del trace
    gc.collect()
    tracemalloc.start()
    base0 = tracemalloc.get_traced_memory()[0]
    msgs2 = conversation(n)
    inp = tracemalloc.get_traced_memory()[0] - base0
    eng2 = Engine("s08", {}, workspace=Workspace(tmp), summarizer=FixedSummarizer("summary"), check=True)
    before = tracemalloc.get_traced_memory()[0]
    trace = eng2.run(msgs2)
    extra = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    print(f"  memory: input {inp / 1e6:.1f} MB, full trace adds {extra / 1e6:.1f} MB "
          f"({extra / inp:.2f}x the input; target <= 1.5x)")
    del trace


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000")
    args = ap.parse_args()
    for n in map(int, args.sizes.split(",")):
        bench(n)


if __name__ == "__main__":
    main()
