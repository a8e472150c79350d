"""Per-message cost of every built-in strategy's layers at two sizes, and re-sizing after one appended message.

    python bench/bench_layers.py                                   # 10k and 100k messages, every strategy
    python bench/bench_layers.py --sizes 10000,100000 --strategies s08,hermes --repeat 5
    python bench/bench_layers.py --sizes 150,300 --repeat 1        # the smoke size

The session is bench_memory.py's generated Claude Code session (JSONL as Claude Code writes it: envelopes,
assistant turns with text and tool calls and usage, tool results with their toolUseResult), written for each
size and loaded as the CLI loads it (``app.cli_common.load_file``: the loaders, then the transcript frozen out
of the cyclic GC).

1. Layers. For each strategy (``compactscope strategies``; plus ``s08+nosnip``, s08 with its snip off, so that
   micro_compact and compact_history see the whole session instead of 51 messages; ``gemini_cli+force``) one engine run per size gives
   each layer its input and the pipeline state before it; each layer's pure function is then timed on that input
   as the engine calls it (``engine.call_layer``: the same LayerContext, the same GC treatment), best of
   ``--repeat`` runs, CPU time of this process, the sizes interleaved (every session is loaded first, so both
   are timed in the same heap and under the same load). Printed per layer: its input's length, the CPU time, the cost
   per input message at each size, and the ratio of the per-message cost at the largest size to the one at the
   smallest. Reference: the same layer's per-message cost at the smallest size, measured in the same run.
   Target (issue 27): ratio <= 1.2x (flat from 10k to 100k). A layer whose time does not grow with its input
   (it looks at the last message only, or it did not fire) has a ratio well under 1; a layer that gets the same
   few messages at both sizes (after a snip or an assembled summary), or that changes its input at one size only
   (gemini_cli compresses at 524k tokens: ``gemini_cli+force`` compresses at both), is shown but has no verdict. Issue 2's
   target (each deterministic layer within 20 ms at 10k messages) reads off the 10k lines.

2. Re-sizing. The size (``len(str(messages))`` figure) and chars/4 tokens of the session's list with one message
   appended, as a list made by ``SizeMeter.concat`` (the path of replay, the live agent and the pipeline), as a
   list grown in place (``SizeMeter.extend``), and as a plain new list ``prev + [m]`` (found from the list
   measured before by an identity scan). Reference: a full sizing of the same list (every per-message figure
   already cached, only the list's total not known: what re-sizing cost before), measured in the same run,
   interleaved with the re-sizings. Target (issue 27): the concat path <= 5% of a full sizing.

3. Memory (the figure of the former bench_core.py, issue 2): the extra memory a full s08 trace takes over its input
   at the smallest size (tracemalloc), target <= 1.5x.

Prints figures; asserts nothing.
"""
from __future__ import annotations

import argparse
import gc
import os
import shutil
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_memory import write_session  # noqa: E402

from compactscope.app.cli_common import load_file  # noqa: E402
from compactscope.core import strategies as S  # noqa: E402
from compactscope.core.files.workspace import Workspace  # noqa: E402
from compactscope.core.layers.base import ReadParams  # noqa: E402
from compactscope.core.pipeline.engine import Engine, call_layer  # noqa: E402
from compactscope.core.pipeline.facts import Facts  # noqa: E402
from compactscope.core.pipeline.size import CharsPerToken, SizeMeter  # noqa: E402

FLAT = 1.2          # target: per-message cost at the largest size <= 1.2x the one at the smallest
RESIZE = 0.05       # target: re-sizing after one append <= 5% of a full sizing
EXTRA = {"s08+nosnip": ("s08", {"max_messages": 10 ** 9}),      # micro_compact and compact_history on everything
         "gemini_cli+force": ("gemini_cli", {"force": True})}    # compresses at 10k too (its threshold: 524k tokens)


def configs(names: str) -> list[tuple[str, str, dict]]:
    chosen = list(S.builtin()) + list(EXTRA) if names == "all" else names.split(",")
    return [(c, *EXTRA[c]) if c in EXTRA else (c, c, {}) for c in chosen]


def time_layers(convs: dict, strategy: str, params: dict, tmp: str, repeat: int) -> dict[int, dict[str, tuple]]:
    """size -> layer -> (input length, best CPU seconds, whether it changed its input): one engine run per size gives each layer its input and
    state; the layer is then timed as the engine calls it, the sizes interleaved (A B A B: both see the same load)."""
    runs = {}
    for n, conv in convs.items():
        eng = Engine(strategy, dict(params), workspace=Workspace(tempfile.mkdtemp(dir=tmp)), check=False)
        trace = eng.run(conv.messages, conversation=conv)
        runs[n] = (eng, conv, conv.meta_by_identity(), [s for s in trace.steps if s.layer != "convert"])
    best: dict[int, dict[str, tuple]] = {n: {} for n in convs}
    for _ in range(repeat):
        for n, (eng, conv, meta, steps) in runs.items():
            for step in steps:
                fn = eng.strategy.layer(step.layer).fn
                ctx = eng.context(meta=meta, system=conv.system, tools=conv.tools, state=step.state_before)
                ctx.params = ReadParams(dict(ctx.params))
                c0 = time.process_time()
                res = call_layer(fn, step.input, ctx)
                t = time.process_time() - c0
                del res
                k, b, _ = best[n].get(step.layer, (len(step.input), float("inf"), step.changed))
                best[n][step.layer] = (k, min(b, t), step.changed)
    return best


def resize(conv, repeat: int) -> None:
    msgs = list(conv.messages)
    tokens = CharsPerToken()
    extra = {"role": "user", "content": "One more thing: keep the old retry defaults."}
    full = concat = ext = plain = float("inf")
    for _ in range(max(repeat, 3)):            # interleaved: full, concat, extend, plain
        grown = msgs + [extra]
        ref = SizeMeter()                      # the per-message figures cached (shared table), the total not
        ref.size(msgs)
        ref.clear_lists()
        c0 = time.process_time()
        n_full = ref.size(grown), tokens.tokens(grown, ref)
        full = min(full, time.process_time() - c0)

        m = SizeMeter()
        m.size(msgs), tokens.tokens(msgs, m)
        c0 = time.process_time()
        g = m.concat(msgs, [extra])
        n_concat = m.size(g), tokens.tokens(g, m)
        concat = min(concat, time.process_time() - c0)

        own = list(msgs)
        m = SizeMeter()
        m.size(own), tokens.tokens(own, m)
        c0 = time.process_time()
        m.extend(own, [extra])
        n_ext = m.size(own), tokens.tokens(own, m)
        ext = min(ext, time.process_time() - c0)

        m = SizeMeter()
        m.size(msgs), tokens.tokens(msgs, m)
        c0 = time.process_time()
        n_plain = m.size(grown), tokens.tokens(grown, m)
        plain = min(plain, time.process_time() - c0)
        assert n_full == n_concat == n_ext == n_plain, (n_full, n_concat, n_ext, n_plain)
    cold = SizeMeter(facts=Facts())
    c0 = time.process_time()
    cold.size(grown)
    scratch = time.process_time() - c0
    print(f"  re-size after one appended message ({len(grown):,} messages; a full sizing {full * 1000:.2f} ms CPU "
          f"with every message's figure cached, {scratch * 1000:.0f} ms from scratch):")
    for name, t in (("concat", concat), ("extend in place", ext), ("prev + [m]", plain)):
        r = t / full if full > 0 else 0.0
        verdict = ("OK" if r <= RESIZE else "OVER") if name == "concat" else ""
        print(f"    {name:<16} {t * 1000:8.3f} ms CPU = {r * 100:5.1f}% of a full sizing ({full * 1000:.2f} ms)"
              + (f"  target <= {RESIZE:.0%}  {verdict}" if verdict else ""))


def trace_memory(n: int, tmp: str) -> None:
    path = Path(tmp) / f"mem{n}.jsonl"
    write_session(path, n)
    gc.collect()
    tracemalloc.start()
    b0 = tracemalloc.get_traced_memory()[0]
    _, conv = load_file(str(path))
    inp = tracemalloc.get_traced_memory()[0] - b0
    eng = Engine("s08", {}, workspace=Workspace(tempfile.mkdtemp(dir=tmp)), check=True)
    b1 = tracemalloc.get_traced_memory()[0]
    trace = eng.run(conv.messages, conversation=conv)
    extra = tracemalloc.get_traced_memory()[0] - b1
    tracemalloc.stop()
    del trace
    r = extra / max(inp, 1)
    print(f"  memory: a full s08 trace over {n:,} messages adds {extra / 1e6:.1f} MB = {r:.2f}x its loaded input "
          f"({inp / 1e6:.1f} MB)  target <= 1.5x  {'OK' if r <= 1.5 else 'OVER'}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--strategies", default="all", help="comma-separated, or 'all' (with s08+nosnip)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-memory", action="store_true")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    tmp = tempfile.mkdtemp(prefix="cs-bench-layers-")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"per-layer cost at {', '.join(f'{n:,}' for n in sizes)} messages (bench_memory's Claude Code session); "
          f"best of {args.repeat}, CPU; load average {load:.1f} on {os.cpu_count()} cores")
    results: dict[int, dict] = {n: {} for n in sizes}
    try:
        convs = {}
        for n in sizes:                        # every size loaded first, each timed beside the others
            path = Path(tmp) / f"s{n}.jsonl"
            write_session(path, n)
            _, convs[n] = load_file(str(path))
            path.unlink()
        for label, st, params in configs(args.strategies):
            for n, layers in time_layers(convs, st, params, tmp, args.repeat).items():
                results[n][label] = layers
        for n in sizes:
            print(f"\n== {len(convs[n].messages):,} messages ==")
            for label, layers in results[n].items():
                for name, (k, t, _) in layers.items():
                    print(f"  {label:<16} {name:<22} input {k:>7,}  {t * 1000:9.2f} ms CPU  "
                          f"{t / max(k, 1) * 1e6:8.3f} us/message")
            resize(convs[n], args.repeat)
        lo, hi = sizes[0], sizes[-1]
        if hi != lo:
            print(f"\n== per-message cost at {hi:,} / at {lo:,} (target <= {FLAT}x) ==")
            worst = 0.0
            for label in results[hi]:
                for name, (k, t, did) in results[hi][label].items():
                    k0, t0, did0 = results[lo][label].get(name, (0, 0.0, False))
                    if not k0 or t0 <= 0:
                        continue
                    r = (t / max(k, 1)) / (t0 / k0)
                    fixed = k < 0.05 * hi and k < 2 * k0      # the same few messages at both sizes (after a cut)
                    verdict = f"n/a: its input is {k0:,} and {k:,} messages" if fixed else \
                        f"n/a: it changes its input at {hi if did else lo:,} only" if did != did0 else \
                        ("OK" if r <= FLAT else "OVER")
                    if not fixed and did == did0:
                        worst = max(worst, r)
                    print(f"  {label:<16} {name:<22} {t / max(k, 1) * 1e6:8.3f} us/message = {r:5.2f}x its cost at "
                          f"{lo:,} ({t0 / k0 * 1e6:.3f} us)  target <= {FLAT}x  {verdict}")
            print(f"  worst: {worst:.2f}x")
        if not args.no_memory:
            trace_memory(lo, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
