"""Replay near the limit (issue 27): every strategy against a prefix-sum walk over the same calls.

    python bench/bench_replay_limit.py [--sizes 250,1000,4000] [--repeat 3] [--strategies s08,claude_code,...]
                                       [--no-usage]

Each strategy (default: every built-in one, ``compactscope strategies``) replays a generated coding session
(``bench_replay.make_session``: tool calls with results of 50-6,000 chars, a user turn every 25 calls) of each
size in model calls, with the offline summarizer; each assistant message carries a recorded usage (the tokens of
what its call sent, as a real recording has; ``--no-usage`` leaves it out), so the estimators that anchor on
recorded usage (Claude Code, Inspect, Codex, Gemini CLI) take their anchored paths. Each run gets a freshly
generated session (no per-message figure is cached from an earlier run).

The reference, measured in the same run and interleaved with the replays (A B A B), is the prefix-sum walk of
``bench/ref_prefix_walk.py`` over the same session: each message measured once (``len(repr(m))``), per call the
running sum of what it sent compared to the threshold: the minimum any replay must do.

Printed, per strategy: the CPU time per call (this process, best of ``--repeat``) at each size; the ratio to
the walk at the largest size (target <= 5x); the growth of the time per call from the smallest to the largest
size (target <= 1.2x: flat). Small size (the smoke test): ``--sizes 20,40 --repeat 1``.
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_replay import make_session  # noqa: E402
from ref_prefix_walk import walk  # noqa: E402

from compactscope.core.files.workspace import Workspace  # noqa: E402
from compactscope.core.model.conversation import Conversation, Usage  # noqa: E402
from compactscope.core.pipeline.engine import Engine  # noqa: E402
from compactscope.core.replay import replay  # noqa: E402

STRATEGIES = ("s08", "claude_code", "hermes", "inspect_edit", "inspect_trim", "inspect_summary", "codex",
              "gemini_cli")
RATIO_TARGET = 5.0
GROWTH_TARGET = 1.2


def session(calls: int, usage: bool) -> Conversation:
    """A fresh generated session; with ``usage``, each assistant message records the tokens its call sent
    (chars/4 of the messages before it, plus a fixed 3,000 of system prompt and tools)."""
    conv = make_session(calls)
    if usage:
        total = 0
        for m, meta in zip(conv.messages, conv.meta):
            if m.get("role") == "assistant":
                meta.usage = Usage(input_tokens=3000 + total // 4, output_tokens=200)
            total += len(repr(m))
    return conv


def timed(fn, *args, **kw) -> tuple[float, object]:
    gc.collect()
    c0 = time.process_time()
    out = fn(*args, **kw)
    return time.process_time() - c0, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="250,1000,4000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--no-usage", action="store_true", help="sessions without recorded usage")
    a = ap.parse_args(argv)
    sizes = [int(x) for x in a.sizes.split(",")]
    strats = [s for s in a.strategies.split(",") if s]
    usage = not a.no_usage
    ref: dict = {}
    cpu: dict = {}
    calls: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.repeat):                   # interleaved: each round runs everything once
            for n in sizes:
                for s in strats:
                    conv = session(n, usage)
                    c, _ = timed(walk, conv.messages)
                    ref[n] = min(ref.get(n, c), c)
                    conv = session(n, usage)
                    eng = Engine(s, workspace=Workspace(Path(tmp) / f"{s}-{n}-{r}"))
                    c, res = timed(replay, conv, engine=eng)
                    calls[s, n] = len(res.calls)
                    cpu[s, n] = min(cpu.get((s, n), c), c)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lo, hi = sizes[0], sizes[-1]
    print(f"replay against a prefix-sum walk (bench/ref_prefix_walk.py), best of {a.repeat}, CPU time of this "
          f"process; sessions {'with' if usage else 'without'} recorded usage; load average {load:.1f} on "
          f"{os.cpu_count()} cores")
    print("  prefix-sum walk: " + ", ".join(f"{n:,} calls {ref[n] / calls[strats[0], n] * 1e6:.1f} us/call"
                                             for n in sizes))
    print(f"{'strategy':>16}" + "".join(f"{f'{n:,} calls':>14}" for n in sizes) +
          f"{f'x walk @{hi:,}':>16}{f'growth {lo:,}->{hi:,}':>22}")
    bad = 0
    for s in strats:
        per = {n: cpu[s, n] / calls[s, n] for n in sizes}
        ratio = cpu[s, hi] / ref[hi]
        growth = per[hi] / per[lo]
        ok_r, ok_g = ratio <= RATIO_TARGET, growth <= GROWTH_TARGET
        bad += (not ok_r) + (not ok_g)
        print(f"{s:>16}" + "".join(f"{per[n] * 1e6:>9,.0f} us/c" for n in sizes) +
              f"{ratio:>10.1f}x {'OK' if ok_r else 'MISS':>4}{growth:>16.2f}x {'OK' if ok_g else 'MISS':>4}")
    print(f"  targets: at most {RATIO_TARGET:g}x the walk at {hi:,} calls, growth per call at most "
          f"{GROWTH_TARGET:g}x from {lo:,} to {hi:,} calls; {bad} miss(es)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
