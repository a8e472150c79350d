"""Replay speed: a generated session of N model calls, replayed with a strategy and the
offline summarizer. The target (issue 5): 2,000 calls with s08 in at most 1 s.

    python bench/bench_replay.py [--calls 2000] [--strategy s08] [--repeat 3]
    python bench/bench_replay.py --scaling 250,500,1000 [--repeat 3]

``--scaling``: every strategy (s08, claude_code, hermes) at each number of calls, interleaved so a
busy machine slows them alike; per call the best CPU time of this process (and the wall time), the
ratio of each strategy to s08 and how the time per call grows from the smallest to the largest
session. Targets (issue 12): hermes within 3x of s08 per call, and linear (the time per call at
1,000 calls within 1.5x of that at 250). ``--scaling 20,40`` is the small smoke size.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from compactscope.core.model.conversation import Conversation, MessageMeta  # noqa: E402
from compactscope.core.pipeline.engine import Engine  # noqa: E402
from compactscope.core.replay import replay  # noqa: E402
from compactscope.core.files.workspace import Workspace  # noqa: E402


def make_session(calls: int, seed: int = 1) -> Conversation:
    """A coding session: a user request every ~25 calls, otherwise tool calls (1-3 in
    parallel) with results of 50-6,000 chars, now and then a 120,000-char one; one
    timestamp per message, a minute apart, with a 2-hour break before a user message every 400 calls."""
    rng = random.Random(seed)
    msgs, meta = [], []
    t = 1_700_000_000.0
    tools = ("Read", "Bash", "Grep", "Edit")

    def add(m, dt=30.0):
        nonlocal t
        t += dt
        msgs.append(m)
        meta.append(MessageMeta(timestamp=t))

    add({"role": "user", "content": "Please refactor the retry logic in the client and add tests."})
    for k in range(calls):
        if k % 25 == 24:
            add({"role": "assistant", "content": [{"type": "text", "text": f"Step {k} done. " * 20}]})
            add({"role": "user", "content": f"Good, now continue with part {k // 25 + 1}."},
                7200.0 if k % 400 == 399 else 30.0)     # the user comes back after a 2-hour break
            continue
        n = rng.choice((1, 1, 1, 2, 3))
        uses, results = [{"type": "text", "text": "Let me look at that. " * rng.randint(1, 6)}], []
        for i in range(n):
            tid = f"toolu_{k:05d}_{i}"
            name = rng.choice(tools)
            uses.append({"type": "tool_use", "id": tid, "name": name,
                         "input": {"file_path": f"src/mod_{rng.randint(0, 60)}.py"} if name in ("Read", "Edit")
                         else {"command": f"grep -rn retry src/ | head -{rng.randint(5, 90)}"}})
            size = 120_000 if rng.random() < 0.004 else rng.randint(50, 6000)
            results.append({"type": "tool_result", "tool_use_id": tid, "content": ("line of output %d\n" % k) *
                            (size // 18 + 1)})
        add({"role": "assistant", "content": uses})
        add({"role": "user", "content": results})
    return Conversation(msgs, meta=meta, title=f"generated {calls} calls", source="generated")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--strategy", default="s08")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--check", action="store_true", help="run the API checker on every step too")
    ap.add_argument("--scaling", metavar="N,N,...", help="each strategy at each number of calls (see above)")
    args = ap.parse_args(argv)
    if args.scaling:
        return scaling([int(x) for x in args.scaling.split(",")], args.repeat)
    conv = make_session(args.calls)
    best = None
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeat):
            eng = Engine(args.strategy, workspace=Workspace(Path(tmp) / f"run{r}"))
            t0 = time.perf_counter()
            res = replay(conv, engine=eng, check=args.check)
            dt = time.perf_counter() - t0
            best = dt if best is None else min(best, dt)
    tot = res.totals()
    print(f"replay {args.strategy}: {len(res.calls):,} calls over {len(conv.messages):,} messages, "
          f"best of {args.repeat}: {best:.3f} s ({best / max(1, len(res.calls)) * 1e6:.0f} us/call)"
          f"{' with the checker' if args.check else ''}")
    print(f"  compactions {tot['compactions']:,}, summaries {tot['summaries']:,}, peak {tot['peak_tokens']:,} tokens, "
          f"total input {tot['total_input_tokens']:,} tokens (raw {tot['raw_total_input_tokens']:,})")
    print(f"  layer firings: {tot['layer_firings']}")
    print(f"  target 2,000 calls <= 1 s: {'met' if args.calls >= 2000 and best <= 1.0 else 'NOT met' if args.calls >= 2000 else 'n/a'}")
    return 0


def scaling(sizes: list[int], repeat: int, strategies=("s08", "claude_code", "hermes")) -> int:
    convs = {n: make_session(n) for n in sizes}
    cpu: dict = {}
    wall: dict = {}
    calls: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(repeat):                       # interleaved: each round runs everything once
            for n in sizes:
                for s in strategies:
                    eng = Engine(s, workspace=Workspace(Path(tmp) / f"{s}-{n}-{r}"))
                    c0, t0 = time.process_time(), time.perf_counter()
                    res = replay(convs[n], engine=eng)
                    c, w = time.process_time() - c0, time.perf_counter() - t0
                    calls[s, n] = len(res.calls)
                    cpu[s, n] = min(cpu.get((s, n), c), c)
                    wall[s, n] = min(wall.get((s, n), w), w)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"replay scaling, best of {repeat} (CPU time of this process; wall in brackets); load average "
          f"{load:.1f} on {os.cpu_count()} cores")
    print(f"{'calls':>7}" + "".join(f"{s + ' us/call':>24}" for s in strategies) +
          "".join(f"{s + '/s08':>16}" for s in strategies[1:]))
    for n in sizes:
        row = f"{calls['s08', n]:>7,}"
        for s in strategies:
            row += f"{cpu[s, n] / calls[s, n] * 1e6:>13,.0f} [{wall[s, n] / calls[s, n] * 1e6:>7,.0f}]"
        for s in strategies[1:]:
            row += f"{(cpu[s, n] / calls[s, n]) / (cpu['s08', n] / calls['s08', n]):>15.2f}x"
        print(row)
    lo, hi = sizes[0], sizes[-1]
    for s in strategies:
        g = (cpu[s, hi] / calls[s, hi]) / (cpu[s, lo] / calls[s, lo])
        print(f"  {s}: time per call at {hi:,} calls = {g:.2f}x that at {lo:,} calls "
              f"({'linear' if g <= 1.5 else 'NOT linear'}: target <= 1.5x)")
    worst = max((cpu['hermes', n] / calls['hermes', n]) / (cpu['s08', n] / calls['s08', n]) for n in sizes)
    print(f"  hermes per call: at most {worst:.2f}x s08 ({'met' if worst <= 3 else 'NOT met'}: target <= 3x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
