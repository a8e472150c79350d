"""The window on a big Claude Code session (offscreen): first screen, steps, a parameter change, UI stalls
and peak memory, per strategy, each in a fresh process. Prints figures; asserts nothing.

    python bench/bench_window.py [--messages 100000] [--strategies s08,claude_code]
    python bench/bench_window.py --messages 2000          # the small smoke size

Figures (targets of issue 12 at 100k messages):
* first screen: from open_path() to the message list painted with rows (the file loads and the pipeline
  runs in workers meanwhile); target 1.5 s (the window's own construction is printed apart);
* trace ready: the pipeline's result shown (stepper, diff, chart);
* step: stepper.step(+1 / -1) and the window repainted; first visit of each stage and again; target 100 ms
  (50 ms at 10k);
* parameter change: a parameter of the strategy's last layer changed until the new result is shown;
  target 1 s for s08, 2 s for claude_code;
* stalls: a 5 ms timer in the GUI thread; the longest gap between its ticks (the UI could not react for
  that long) while opening, stepping and re-running; target 100 ms. In brackets: what the session was
  doing when the gap ended, the session events the window handled in the gap (``source``: a load arrived,
  ``result``/``stage``: a run's result shown, ``selection``...) and the cyclic GC's collections over 5 ms
  that overlapped it (a collection in any thread holds the interpreter lock, so the window waits too).
  For where exactly the time went, profile that phase (cProfile the window's thread, or py-spy);
* peak RSS of the process against the file size; target 3x.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

# the parameter each strategy's bench changes: one read by its last layer only, so a rerun can start there
PARAM_CHANGE = {"s08": ("context_limit", 40_000), "claude_code": ("buffer", 12_000),
                "hermes": ("summary_target_ratio", 0.25)}


def ms(t: float) -> str:
    return f"{t * 1000:.0f} ms"


class StallProbe:
    """A 5 ms timer in the GUI thread: the gaps between its ticks are the times the UI could not react.
    For the longest gap of each phase it keeps what may say why: the session events the window's thread
    handled in it (``events``: e.g. ``source`` = the load arrived) and the cyclic GC's collections that
    overlapped it (which generation, how long, in which thread: a collection holds the interpreter lock)."""

    def __init__(self, doing=lambda: "", events=None):
        import gc
        import threading
        from PySide6.QtCore import QTimer
        self.timer = QTimer()
        self.timer.setInterval(5)
        self.timer.timeout.connect(self._tick)
        self.last = None
        self.phase = "start"
        self.worst: dict = {}
        self.doing = doing              # what the window was doing (its progress text), for the worst stall
        self.during: dict = {}
        self.why: dict = {}             # phase -> what happened during its worst stall
        self._events: list = []         # (time, event type) since the last tick
        self._gcs: list = []            # (start, seconds, generation, thread name) of collections over 5 ms
        self._gc_start: dict = {}
        self._threading = threading
        if events is not None:
            events.changed.connect(lambda ev: self._events.append(ev.type))
        gc.callbacks.append(self._gc)

    def _gc(self, phase, info) -> None:
        tid = self._threading.get_ident()
        if phase == "start":
            self._gc_start[tid] = time.perf_counter()
            return
        t = self._gc_start.pop(tid, None)
        if t is not None and time.perf_counter() - t > 0.005:
            self._gcs.append((t, time.perf_counter() - t, info["generation"], self._threading.current_thread().name))
            del self._gcs[:-50]

    def start(self, phase: str) -> None:
        self.phase = phase
        self.last = time.perf_counter()
        self._events.clear()
        if not self.timer.isActive():
            self.timer.start()

    def _tick(self) -> None:
        now = time.perf_counter()
        if self.last is not None:
            gap = now - self.last
            if gap > self.worst.get(self.phase, 0.0):
                self.worst[self.phase] = gap
                self.during[self.phase] = self.doing()
                gcs = [f"gen{g} {d * 1000:.0f} ms in {'GUI' if n == 'MainThread' else 'a worker'}"
                       for t, d, g, n in list(self._gcs) if t < now and t + d > self.last]
                events = list(dict.fromkeys(self._events))
                self.why[self.phase] = "; ".join(x for x in (
                    ("events " + ", ".join(events)) if events else "", ("GC " + ", ".join(gcs)) if gcs else "") if x)
        self._events.clear()
        self.last = now

    def stop(self) -> None:
        import gc
        self.timer.stop()
        if self._gc in gc.callbacks:
            gc.callbacks.remove(self._gc)


def child(path: str, strategy: str, size: int) -> None:
    from PySide6.QtCore import QPoint, QSettings
    from PySide6.QtWidgets import QApplication
    tmp = Path(tempfile.mkdtemp(prefix="cs-bench-win-"))
    for fmt in (QSettings.NativeFormat, QSettings.IniFormat):
        QSettings.setPath(fmt, QSettings.UserScope, str(tmp / "settings"))
    app = QApplication.instance() or QApplication([])
    from compactscope.app.main_window import MainWindow
    from compactscope.app.settings import Settings
    from compactscope.core.files.workspace import Workspace
    out: dict = {"rss": {}}

    def rss_now(label: str) -> None:
        """The resident size now (not the peak), to tell what holds the memory at each moment."""
        with open("/proc/self/statm") as f:
            out["rss"][label] = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    rss_now("start")
    tw = time.perf_counter()
    win = MainWindow(Settings(enabled=False), workspace=Workspace(tmp / "ws"))
    probe = StallProbe(lambda: win.session.progress_text if win.session.busy else "idle", win.session.events)
    win.resize(1400, 900)
    win.show()
    win.session.setup.set_strategy(strategy)
    app.processEvents()
    out["window"] = time.perf_counter() - tw
    rss_now("window shown")
    t0 = time.perf_counter()
    probe.start("open")
    win.open_path(path, remember=False)
    deadline = t0 + 600
    view = win.messages.view
    while time.perf_counter() < deadline:
        app.processEvents()
        if win.messages.model.rowCount() > 0 and view.indexAt(QPoint(20, 12)).isValid():
            view.viewport().repaint()
            break
        time.sleep(0.001)
    out["first_screen"] = time.perf_counter() - t0
    rss_now("first screen")
    while win.session.busy and time.perf_counter() < deadline:
        app.processEvents()
        time.sleep(0.001)
    app.processEvents()
    out["trace_ready"] = time.perf_counter() - t0
    rss_now("trace ready")
    out["layers"] = [s.layer for s in win.session.trace.steps]
    out["sizes"] = [len(s.messages) for s in win.session.trace.steps]
    # steps: every stage forward and back, twice (the first round visits each stage for the first time)
    probe.start("steps")
    n = len(win.stepper.stages)
    first, again = [], []
    for rnd in range(2):
        for d in [1] * (n - 1) + [-1] * (n - 1):
            s = time.perf_counter()
            win.stepper.step(d)
            win.repaint()
            app.processEvents()
            (first if rnd == 0 else again).append(time.perf_counter() - s)
    out["step_first"], out["step_again"] = first, again
    rss_now("after steps")
    # a parameter change, shown
    name, value = PARAM_CHANGE.get(strategy, (None, None))
    if name is not None and name in win.session.setup.params:
        win.stepper.set_current(n - 1)
        app.processEvents()
        probe.start("param")
        s = time.perf_counter()
        win.session.setup.set_param(name, value)
        while win.session.busy and time.perf_counter() < deadline:
            app.processEvents()
            time.sleep(0.001)
        win.repaint()
        app.processEvents()
        out["param_change"] = time.perf_counter() - s
        out["param"] = f"{name}={value}"
        rss_now("after parameter change")
    probe.stop()
    out["stalls"] = probe.worst
    out["stalled_during"] = probe.during
    out["stalled_why"] = probe.why
    out["peak_rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    out["file"] = size
    win.session.close()
    win.close()
    print(json.dumps(out))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--strategies", default="s08,claude_code")
    ap.add_argument("--file", help="use this session file instead of writing one")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], args.child[1], int(args.child[2]))
        return 0
    from bench_memory import write_session
    tmp = Path(tempfile.mkdtemp(prefix="cs-bench-win-"))
    path = Path(args.file) if args.file else tmp / "session.jsonl"
    size = path.stat().st_size if args.file else write_session(path, args.messages)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"session: {args.messages:,} messages, {size / 1e6:.1f} MB (Claude Code JSONL); load average {load:.1f} "
          f"on {os.cpu_count()} cores; wall-clock times")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp / "cache")}
    for strategy in args.strategies.split(","):
        res = subprocess.run([sys.executable, __file__, "--child", str(path), strategy, str(size)],
                             capture_output=True, text=True, env=env, cwd=str(ROOT))
        if res.returncode != 0:
            print(f"  {strategy}: failed: {res.stderr.strip()[-800:]}")
            continue
        d = json.loads(res.stdout.strip().splitlines()[-1])
        why = d.get("stalled_why", {})
        stalls = ", ".join(f"{k} {ms(v)} ({d['stalled_during'].get(k) or '-'}"
                           + (f"; {why[k]}" if why.get(k) else "") + ")" for k, v in d["stalls"].items())
        print(f"  {strategy}: layers {d['layers']} (messages after each {d['sizes']})")
        print(f"    window built and shown {ms(d['window'])}; then from open: first screen with rows "
              f"{ms(d['first_screen'])}, trace ready {ms(d['trace_ready'])}")
        print(f"    step: first visits median {ms(statistics.median(d['step_first']))} max "
              f"{ms(max(d['step_first']))}; again median {ms(statistics.median(d['step_again']))} max "
              f"{ms(max(d['step_again']))}")
        if "param_change" in d:
            print(f"    parameter change ({d['param']}) shown after {ms(d['param_change'])}")
        print(f"    longest UI stall: {stalls}")
        print(f"    peak RSS {d['peak_rss'] / 1e6:.0f} MB = {d['peak_rss'] / d['file']:.2f}x the file; resident at "
              + ", ".join(f"{k} {v / 1e6:.0f} MB" for k, v in d["rss"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
