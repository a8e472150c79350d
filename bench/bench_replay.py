"""Replay speed: a generated session of N model calls, replayed with a strategy and the
offline summarizer. The target (issue 5): 2,000 calls with s08 in at most 1 s.

    python bench/bench_replay.py [--calls 2000] [--strategy s08] [--repeat 3]
"""
from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from compactscope.core.conversation import Conversation, MessageMeta  # noqa: E402
from compactscope.core.pipeline import Engine  # noqa: E402
from compactscope.core.replay import replay  # noqa: E402
from compactscope.core.workspace import Workspace  # noqa: E402


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
    args = ap.parse_args(argv)
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


if __name__ == "__main__":
    sys.exit(main())
