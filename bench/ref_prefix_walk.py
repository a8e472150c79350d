"""The reference of the replay benchmark (issue 27): a prefix-sum walk over the same calls.

The minimum any replay must do over a recorded conversation, defined precisely:

1. every message is measured once: its size is ``len(repr(message))`` (the figure the s08 strategy decides on,
   the cheapest figure any built-in strategy needs), computed once per message, never again;
2. the model calls are the assistant messages, in order (plus one pending call when messages follow the last
   one, as the replay does);
3. before each call, the running sum of the sizes of what that call sent (every message before it) is the sum
   before the previous call plus the sizes of the messages between the two calls: one addition per message;
4. that sum is compared to the threshold (s08's ``context_limit``, 50,000 chars, by default), and the calls
   over it are counted. Nothing is compacted: the sum is never reset (a replay that compacts does more).

So the walk costs O(messages) in all, a constant per call and per message: the floor under any replay's cost.
``walk(messages)`` returns the per-call sums and the count of calls over the threshold.

    python bench/ref_prefix_walk.py [--calls 4000] [--repeat 5] [--threshold 50000]

prints the CPU time of the walk over a generated session (``bench_replay.make_session``) and per call.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def walk(messages: list, threshold: int = 50_000) -> tuple[list[int], int]:
    """Per model call the running sum of the message sizes it sent, and how many calls were over ``threshold``."""
    sizes = [len(repr(m)) for m in messages]            # each message measured once
    sums: list[int] = []
    over = 0
    total = 0
    last = 0
    for j, m in enumerate(messages):
        if isinstance(m, dict) and m.get("role") == "assistant":
            for i in range(last, j):                     # the messages new to this call
                total += sizes[i]
            last = j
            sums.append(total)
            over += total > threshold
    if last < len(messages) - 1 or (not sums and messages):  # a pending call after the last answer
        for i in range(last, len(messages)):
            total += sizes[i]
        sums.append(total)
        over += total > threshold
    return sums, over


def main(argv=None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_replay import make_session
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=4000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threshold", type=int, default=50_000)
    a = ap.parse_args(argv)
    conv = make_session(a.calls)
    best = None
    for _ in range(a.repeat):
        c0 = time.process_time()
        sums, over = walk(conv.messages, a.threshold)
        c = time.process_time() - c0
        best = c if best is None else min(best, c)
    assert best is not None
    print(f"prefix-sum walk: {len(sums):,} calls over {len(conv.messages):,} messages, {over:,} over "
          f"{a.threshold:,}: best of {a.repeat} {best * 1e3:.1f} ms CPU ({best / max(1, len(sums)) * 1e6:.1f} us/call)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
