"""Benchmark the window on a 10k-message conversation (offscreen). Prints figures; asserts nothing.

    python bench/bench_gui.py [--messages 10000] [--frames 200] [--indent 2] [--param max_messages=100000]

Figures:
* first screen: MainWindow() + open_path(file) + the message list painted (the pipeline then runs
  in a worker; "trace ready" is when the stepper, diff and chart are filled)
* stepping one layer: stepper.step(+1/-1) + a synchronous repaint of the window
* scrolling: per frame, move the message list by 3 rows' worth of pixels (and by a page) and
  repaint its viewport synchronously; median / p95 / max frame time
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def make_conversation(n: int) -> list:
    msgs = [{"role": "user", "content": "Refactor the HTTP client and keep the tests green."}]
    k = 0
    while len(msgs) < n - 1:
        tid = f"toolu_{k:06d}"
        msgs.append({"role": "assistant", "content": [
            {"type": "text", "text": f"Step {k}: reading file {k % 97}.py to check the retry logic."},
            {"type": "tool_use", "id": tid, "name": "read_file" if k % 3 else "bash",
             "input": {"path": f"src/pkg/mod_{k % 97}.py"} if k % 3 else {"command": f"pytest -k t{k}"}}]})
        body = "\n".join(f"line {j}: def f_{k}_{j}(x): return x * {j}" for j in range(5 + (k * 7) % 60))
        msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": body,
                                                  **({"is_error": True} if k % 41 == 0 else {})}]})
        k += 1
    msgs.append({"role": "assistant", "content": "Done: all tests pass."})
    return msgs[:n]


def ms(t: float) -> str:
    return f"{t * 1000:.1f} ms"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=10_000)
    ap.add_argument("--frames", type=int, default=200)
    ap.add_argument("--indent", type=int, default=None, help="write the file pretty-printed (json indent)")
    ap.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                    help="a strategy parameter, e.g. max_messages=100000 (snip never fires: micro_compact then "
                         "changes ~5k of the 10k messages, the heaviest steps)")
    args = ap.parse_args()
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    tmp = Path(tempfile.mkdtemp(prefix="cs-bench-"))
    for fmt in (QSettings.NativeFormat, QSettings.IniFormat):
        QSettings.setPath(fmt, QSettings.UserScope, str(tmp / "settings"))
    path = tmp / "ten_k.json"
    msgs = make_conversation(args.messages)
    path.write_text(json.dumps(msgs, indent=args.indent), encoding="utf-8")
    print(f"conversation: {len(msgs):,} messages, {path.stat().st_size / 1e6:.1f} MB JSON")

    from compactscope.core.loaders import load
    s = time.perf_counter()
    load(path)
    t_load_alone = time.perf_counter() - s
    app = QApplication.instance() or QApplication([])
    t_import = time.perf_counter()
    from compactscope.app.main_window import MainWindow
    from compactscope.app.settings import Settings
    from compactscope.core.files.workspace import Workspace
    t_import = time.perf_counter() - t_import

    t0 = time.perf_counter()
    win = MainWindow(Settings(enabled=False), workspace=Workspace(tmp / "ws"))
    win.resize(1400, 900)
    t_ctor = time.perf_counter() - t0
    win.show()
    t1 = time.perf_counter()
    win.open_path(str(path), remember=False)
    t_open = time.perf_counter() - t1
    win.messages.view.viewport().repaint()
    app.processEvents()
    t_first = time.perf_counter() - t0
    print(f"imports of the window modules: {ms(t_import)} (once per process); core.loaders.load alone: "
          f"{ms(t_load_alone)}")
    print(f"first screen (window + load + list painted): {ms(t_first)}  [window {ms(t_ctor)}, load+model {ms(t_open)}]")
    win.wait_idle(300_000)
    t_trace = time.perf_counter() - t0
    if args.param:
        for kv in args.param:
            name, _, value = kv.partition("=")
            win.params_panel.set_value(name, type(win.session.setup.params[name])(value))
        win.session.setup.set_params(win.params_panel.values())   # what the panel does on an edit
        win.wait_idle(300_000)
        win.stepper.set_current(0)
        app.processEvents()
        print(f"parameters {', '.join(args.param)}: messages per layer "
              f"{[len(s.messages) for s in win.session.trace.steps]}, edits {[len(s.edits) for s in win.session.trace.steps]}")
    print(f"trace ready (pipeline in the worker, {len(win.session.trace.steps)} layers, run took "
          f"{ms(win.session.result.seconds)}): {ms(t_trace)} after start")

    # stepping
    times = []
    first = []
    n = len(win.stepper.stages)
    for _round in range(2):
        for d in [1] * (n - 1) + [-1] * (n - 1):
            s = time.perf_counter()
            win.stepper.step(d)
            win.repaint()
            app.processEvents()
            times.append(time.perf_counter() - s)
            first.append((("\u2192 " if d > 0 else "\u2190 ") + win.stepper.stages[win.stepper.current][1],
                          times[-1]))
    print(f"stepping one layer ({len(times)} steps, window repainted): median {ms(statistics.median(times))}, "
          f"max {ms(max(times))}")
    print("  each step (the first round visits each stage for the first time): "
          + ", ".join(f"{k} {ms(v)}" for k, v in first))
    per_stage = {}
    for k in range(n):
        s = time.perf_counter()
        win.stepper.set_current(k)
        win.repaint()
        app.processEvents()
        per_stage[win.stepper.stages[k][1]] = time.perf_counter() - s
    print("  per stage: " + ", ".join(f"{k} {ms(v)}" for k, v in per_stage.items()))

    # scrolling (after the batched layout of the list has finished)
    win.stepper.set_current(0)
    s = time.perf_counter()
    sb = win.messages.view.verticalScrollBar()
    quiet, batches = 0, []
    while quiet < 5:
        b = time.perf_counter()
        app.processEvents()
        dt = time.perf_counter() - b
        quiet = quiet + 1 if dt < 0.002 else 0
        if dt >= 0.002:
            batches.append(dt)
        time.sleep(0.002)
    print(f"batched layout of the whole list (idle time, the list is usable meanwhile): "
          f"{ms(time.perf_counter() - s)} in {len(batches)} batches, longest {ms(max(batches or [0]))}; "
          f"scroll range {sb.maximum():,} px")
    s = time.perf_counter()
    ok = win.select_message(len(win.messages.model.messages) - 10)
    win.messages.view.viewport().repaint()
    print(f"select a message near the end (scrollTo): {ms(time.perf_counter() - s)} ({'ok' if ok else 'FAILED'})")
    sb = win.messages.view.verticalScrollBar()
    for label, step_px in (("3 rows", 3 * 48), ("1 page", win.messages.view.viewport().height())):
        frames = []
        sb.setValue(0)
        app.processEvents()
        for _ in range(args.frames):
            s = time.perf_counter()
            sb.setValue(sb.value() + step_px)
            win.messages.view.viewport().repaint()
            frames.append(time.perf_counter() - s)
        frames.sort()
        p95 = frames[int(len(frames) * 0.95) - 1]
        print(f"scroll by {label}: {len(frames)} frames, median {ms(statistics.median(frames))}, p95 {ms(p95)}, "
              f"max {ms(frames[-1])} (scroll range {sb.maximum():,} px)")
    # jump to the end and back (uncached rows)
    s = time.perf_counter()
    sb.setValue(sb.maximum())
    win.messages.view.viewport().repaint()
    t_end = time.perf_counter() - s
    print(f"jump to the end of the list: {ms(t_end)}")
    # expand all
    s = time.perf_counter()
    win.messages.model.set_expand_all(True)
    win.messages.view.viewport().repaint()
    app.processEvents()
    print(f"expand all: {ms(time.perf_counter() - s)}")
    s = time.perf_counter()
    win.messages.search.setText("retry logic")
    app.processEvents()
    print(f"search over {len(win.messages.model.messages):,} messages ({len(win.messages.model.matches):,} matches): "
          f"{ms(time.perf_counter() - s)}")
    win.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
