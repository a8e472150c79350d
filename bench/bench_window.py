"""The window on a big Claude Code session (offscreen): first screen, trace ready, steps, a parameter change,
UI stalls and peak memory, for every built-in strategy (``compactscope strategies``), each in a fresh process.
Prints each figure as a ratio to its target (issue 27, at 100k messages); asserts nothing.

    python bench/bench_window.py                          # 100k messages, every built-in strategy
    python bench/bench_window.py --messages 100000 --strategies s08,claude_code
    python bench/bench_window.py --file SESSION.jsonl     # a session file of your own
    python bench/bench_window.py --no-tabs                # without the tabs phase (the timeline's replay)
    python bench/bench_window.py --messages 100 --strategies s08,claude_code,hermes,inspect_edit,codex,gemini_cli
                                                          # the smoke size (tests/test_bench_smoke.py)

The machine this runs on is usually shared and loaded, so every time is measured twice: wall clock, and the CPU
time the work itself took (the GUI thread's for a step, the whole process's for a run, which waits on nothing
but the interpreter); the CPU figure is the one compared with the target, the wall clock and the load average
are printed beside it. Figures and targets:

* trace ready: from open_path() to the pipeline's result shown (stepper, diff, chart; the load and the run in
  workers; ``sigTraceReady``); CPU of the process; target 5 s. Printed beside it: the window built and shown,
  the first screen (the message list painted with the file's first rows while it loads; issue 12's target
  1.5 s), and when the window was idle (a strategy's cross-check against its real package, hermes's and
  inspect's, runs after the result is shown; the steps are measured after it);
* events shown: the Events dock replays every model call of the file (courteous: it waits while the user steps)
  after the result is shown; when its events, and the compactions of its "Kept and lost" box, are shown; CPU of the
  process and wall clock after open (printed, no target). The steps are measured after it, not beside it;
* step: stepper.step(+1 / -1) and the window repainted, every stage forward and back twice (the first round
  visits each stage for the first time); median CPU of the GUI thread; target 50 ms. One more round is printed
  apart: beside the events' replay that a parameter change starts (when it is still running);
* parameter change: ``PARAM_CHANGE``'s parameter of the strategy (read by its last layers: only they should
  re-run) changed with the last stage shown, until the new result is shown (not its cross-check, not its events);
  CPU of the process; target 500 ms;
* stalls: a 5 ms timer in the GUI thread; the longest gap between its ticks (the UI could not react for that
  long) while opening, while the events are replayed and shown, stepping, re-running, while the new parameters'
  events are replayed and shown, and over every tab (``tabs``: each centre tab, the timeline's replaying the whole
  file, each tab of the Events dock, the Kept and lost box's list opened and its last entry chosen; ``--no-tabs``
  skips this phase); a gap counts as the smaller of its wall time and the CPU the
  process spent in it (a gap with the process idle was the machine's load, not the window's); target 100 ms.
  In brackets: what the session was doing when the gap ended, the session events the window handled in the gap
  (``source``: a load arrived, ``result``/``stage``: a run's result shown, ``selection``...) and the cyclic GC's
  collections over 5 ms that overlapped it (a collection in any thread holds the interpreter lock, so the window
  waits too). A gap can be a worker's: the process's CPU counts every thread, and a worker holding the
  interpreter lock holds the window too. Below the line, every stall over the target with where it happened: a
  sampler thread takes every thread's stack every 20 ms from 75 ms into a gap (``sys._current_frames``; it needs
  the interpreter lock, so a worker inside one long C call is seen just after it); each busy thread's innermost
  frames are printed with how many samples found it there (a worker waiting in every sample is left out; the GUI
  thread in ``child`` or ``wait`` is inside Qt, in C++, e.g. waiting for the interpreter lock between calls), and
  the GUI thread's own CPU in the gap (near the gap: the window's own work; far below it: it waited, for the
  interpreter lock most likely);
* peak RSS of the process against the file size (issue 12's target 3x; printed, not judged here).

Byte-code is cached as an installed package's would be (as ``bench_startup.py`` does): ``PYTHONDONTWRITEBYTECODE``
is dropped and ``PYTHONPYCACHEPREFIX`` points at a temporary folder that ``compileall`` fills before the first child,
so that no module the window imports late is compiled from source inside a measured phase.
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

# the parameter each strategy's bench changes: one its last layers read (those that read it and what follows
# re-run; hermes's and inspect's are also read by an earlier layer, codex's by its first)
PARAM_CHANGE = {"s08": ("context_limit", 40_000), "claude_code": ("buffer", 12_000),
                "hermes": ("summary_target_ratio", 0.25), "inspect_edit": ("keep_tool_uses", 2),
                "inspect_trim": ("preserve", 0.7), "inspect_summary": ("max_tokens", 2000),
                "codex": ("model_context_window", 250_000), "gemini_cli": ("compression_threshold", 0.45)}
TARGETS = {"trace_ready": 5.0, "step": 0.050, "param_change": 0.500, "stall": 0.100}


WHERE_AFTER = 0.1                   # every thread's stack sampled from 75 ms into a stall, every 20 ms
WHERE_FRAMES = 4                    # the innermost frames kept of each thread's stack


def ms(t: float) -> str:
    return f"{t * 1000:.0f} ms"


def stack_frames(frame) -> list[str]:
    """The innermost ``WHERE_FRAMES`` frames of a stack, each as ``function file.py:line``."""
    out = []
    while frame is not None and len(out) < WHERE_FRAMES:
        out.append(f"{frame.f_code.co_name} {Path(frame.f_code.co_filename).name}:{frame.f_lineno}")
        frame = frame.f_back
    return out


def where_lines(where: list) -> list[str]:
    """Each stall over the target with what every busy thread was doing in it (the stacks sampled in it; a
    thread waiting on a lock or a queue is left out)."""
    idle = ("wait threading.py", "_wait_for_tstate_lock", "get queue.py", "_release_loop shared.py:140")
    lines = []
    for phase, gap, wall, dumps, gui in where:
        by_thread: dict = {}
        for d in dumps:
            for name, frames in d.items():
                if frames and not any(frames[0].startswith(x) or x in frames[0] for x in idle):
                    key = " < ".join(frames)
                    by_thread.setdefault(name, {}).setdefault(key, 0)
                    by_thread[name][key] += 1
        what = "; ".join(f"{name}: " + ", ".join(f"{n}x {k}" for k, n in sorted(fs.items(), key=lambda x: -x[1])[:2])
                         for name, fs in by_thread.items()) or "no thread busy in the samples"
        lines.append(f"      stall {ms(gap)} (wall {ms(wall)}; the GUI thread's own CPU {ms(gui)}) in {phase}, "
                     f"{len(dumps)} sample(s): {what}")
    return lines


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
        self.last_cpu = 0.0
        self.last_gui = 0.0
        self.phase = "start"
        self.worst: dict = {}           # phase -> the longest gap (the smaller of its wall and CPU time)
        self.wall: dict = {}            # phase -> that gap's wall time
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
        # where each stall happened: a sampler thread looks every 20 ms, and when the timer is 75 ms late takes every
        # thread's stack (sys._current_frames, with the interpreter lock: a worker inside one long C call is seen
        # just after it); the tick that ends the gap takes the samples made in it
        self._samples: list = []        # the stacks sampled since the last tick
        self._sampling = True
        self._sampler = threading.Thread(target=self._sample_loop, name="bench-sampler", daemon=True)
        self._sampler.start()
        self.where: list = []           # every stall over the target: (phase, gap, wall, [stacks sampled])

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
        self.last_cpu = time.process_time()
        self.last_gui = time.thread_time()
        self._events.clear()
        self._samples.clear()
        if not self.timer.isActive():
            self.timer.start()

    def _sample_loop(self) -> None:
        while self._sampling:
            time.sleep(0.02)
            last = self.last
            if last is not None and time.perf_counter() - last > WHERE_AFTER * 0.75 and len(self._samples) < 50:
                names = {t.ident: t.name for t in self._threading.enumerate()}
                me = self._threading.get_ident()
                self._samples.append({names.get(tid, hex(tid)): stack_frames(f) for tid, f in
                                      sys._current_frames().items() if tid != me})

    def _tick(self) -> None:
        now, cpu, gui = time.perf_counter(), time.process_time(), time.thread_time()
        if self.last is not None:
            wall = now - self.last
            gap = min(wall, cpu - self.last_cpu)
            if gap > self.worst.get(self.phase, 0.0):
                self.worst[self.phase] = gap
                self.wall[self.phase] = wall
                self.during[self.phase] = self.doing()
                gcs = [f"gen{g} {d * 1000:.0f} ms in {'GUI' if n == 'MainThread' else 'a worker'}"
                       for t, d, g, n in list(self._gcs) if t < now and t + d > self.last]
                events = list(dict.fromkeys(self._events))
                self.why[self.phase] = "; ".join(x for x in (
                    ("events " + ", ".join(events)) if events else "", ("GC " + ", ".join(gcs)) if gcs else "") if x)
            if gap > TARGETS["stall"] and len(self.where) < 40:
                self.where.append((self.phase, gap, wall, list(self._samples), gui - self.last_gui))
        self._events.clear()
        self._samples.clear()
        self.last, self.last_cpu, self.last_gui = now, cpu, gui

    def stop(self) -> None:
        import gc
        self.timer.stop()
        self._sampling = False
        if self._gc in gc.callbacks:
            gc.callbacks.remove(self._gc)


def wait_events(win, deadline: float) -> float:
    """Process events until the events dock's replay and every worker are done (``EventsController.wait``, as the
    window's probe and tests wait); returns when (perf_counter)."""
    win.events_controller.wait(max(1, int((deadline - time.perf_counter()) * 1000)))
    return time.perf_counter()


def step_round(win, app) -> tuple[list, list]:
    """Every stage forward and back, each step repainted: (wall times, CPU times of the GUI thread)."""
    n = len(win.stepper.stages)
    walls, cpus = [], []
    for d in [1] * (n - 1) + [-1] * (n - 1):
        s, c = time.perf_counter(), time.thread_time()
        win.stepper.step(d)
        win.repaint()
        app.processEvents()
        walls.append(time.perf_counter() - s)
        cpus.append(time.thread_time() - c)
    return walls, cpus


def child(path: str, strategy: str, size: int, tabs: bool = True) -> None:
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
    t0, c0 = time.perf_counter(), time.process_time()
    probe.start("open")
    win.open_path(path, remember=False)
    deadline = t0 + 1800
    view = win.messages.view
    while time.perf_counter() < deadline:
        app.processEvents()
        if win.messages.model.rowCount() > 0 and view.indexAt(QPoint(20, 12)).isValid():
            view.viewport().repaint()
            break
        time.sleep(0.001)
    out["first_screen"] = time.perf_counter() - t0
    rss_now("first screen")
    shown = []
    win.sigTraceReady.connect(lambda r: shown.append(r))

    def running() -> bool:
        return win.session.source.loader.busy or win.session.pipeline.busy or not shown
    while running() and time.perf_counter() < deadline:
        app.processEvents()
        time.sleep(0.001)
    out["trace_ready"] = time.perf_counter() - t0
    out["trace_ready_cpu"] = time.process_time() - c0
    while win.session.busy and time.perf_counter() < deadline:       # the cross-check (hermes, inspect)
        app.processEvents()
        time.sleep(0.001)
    app.processEvents()
    out["idle"] = time.perf_counter() - t0
    rss_now("trace ready")
    out["layers"] = [s.layer for s in win.session.trace.steps]
    out["sizes"] = [len(s.messages) for s in win.session.trace.steps]
    # the events dock's replay (every model call of the file, courteous: it waits while the user steps) runs after
    # the result is shown; the steps are measured once its events are shown, not beside it
    ec = win.events_controller
    probe.start("events")
    out["events_ready"] = wait_events(win, deadline) - t0
    out["events_ready_cpu"] = time.process_time() - c0
    out["events"] = len(ec.events)
    out["pairs"] = len(ec.retention_view.pairs)
    rss_now("events shown")
    # steps: every stage forward and back, twice (the first round visits each stage for the first time)
    probe.start("steps")
    n = len(win.stepper.stages)
    (out["step_first"], out["step_first_cpu"]), (out["step_again"], out["step_again_cpu"]) = \
        step_round(win, app), step_round(win, app)
    rss_now("after steps")
    # a parameter change, shown
    name, value = PARAM_CHANGE.get(strategy, (None, None))
    if name is not None and name in win.session.setup.params:
        win.stepper.set_current(n - 1)
        app.processEvents()
        kept = list(win.session.trace.steps)
        probe.start("param")
        s, c = time.perf_counter(), time.process_time()
        shown.clear()
        win.session.setup.set_param(name, value)
        while running() and time.perf_counter() < deadline:
            app.processEvents()
            time.sleep(0.001)
        win.repaint()
        app.processEvents()
        out["param_change"] = time.perf_counter() - s
        out["param_change_cpu"] = time.process_time() - c
        while win.session.busy and time.perf_counter() < deadline:
            app.processEvents()
            time.sleep(0.001)
        out["rerun"] = [st.layer for st in win.session.trace.steps if all(st is not x for x in kept)]
        out["param"] = f"{name}={value}"
        rss_now("after parameter change")
        # the events of the new parameters are replayed after its result is shown: steps beside that replay
        probe.start("param events")
        t = time.perf_counter()
        while not ec.worker.busy and time.perf_counter() < min(deadline, t + 5):
            app.processEvents()
            time.sleep(0.001)
        if ec.worker.busy:
            out["step_beside_events"], out["step_beside_events_cpu"] = step_round(win, app)
        t = time.perf_counter()
        out["param_events_ready"] = wait_events(win, deadline) - t
    if tabs:
        # every tab of the window and of the events dock (the timeline's tab replays the file), the compaction box
        probe.start("tabs")
        s = time.perf_counter()
        for k in list(range(win.tabs.count())) + [0]:
            win.tabs.setCurrentIndex(k)
            app.processEvents()
            wait_events(win, deadline)
        ec.dock.show()
        ec.dock.raise_()
        for k in list(range(ec.tabs.count())) + [0]:
            ec.tabs.setCurrentIndex(k)
            app.processEvents()
        box = ec.retention_view.box
        ec.tabs.setCurrentWidget(ec.retention_view)
        box.showPopup()
        app.processEvents()
        box.hidePopup()
        box.setCurrentIndex(box.count() - 1)
        app.processEvents()
        ec.tabs.setCurrentIndex(0)
        app.processEvents()
        out["tabs"] = time.perf_counter() - s
    probe.stop()
    out["stalls"] = probe.worst
    out["stall_walls"] = probe.wall
    out["stalled_during"] = probe.during
    out["stalled_why"] = probe.why
    out["stall_where"] = probe.where
    out["peak_rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    out["file"] = size
    win.session.close()
    win.close()
    print(json.dumps(out))


def judged(label: str, cpu: float, wall: float, target: float, what: str = "CPU") -> str:
    """One figure as a ratio to its target: ``label: 42 ms CPU (wall 120 ms) = 0.84x target 50 ms  OK``."""
    r = cpu / target
    return (f"{label}: {ms(cpu)} {what} (wall {ms(wall)}) = {r:.2f}x target {ms(target)}  "
            + ("OK" if r <= 1 else "OVER"))


def report(strategy: str, d: dict) -> list[str]:
    """The lines printed for one strategy's child (``d``: what it measured)."""
    why = d.get("stalled_why", {})
    stalls = ", ".join(f"{k} {ms(v)} (wall {ms(d['stall_walls'].get(k, v))}; {d['stalled_during'].get(k) or '-'}"
                       + (f"; {why[k]}" if why.get(k) else "") + ")" for k, v in d["stalls"].items())
    lines = [f"  {strategy}: layers {d['layers']} (messages after each {d['sizes']})",
             f"    window built and shown {ms(d['window'])}; first screen with rows {ms(d['first_screen'])} after "
             f"open; idle (the cross-check's verdict too) {ms(d['idle'])} after open",
             "    " + judged("trace ready", d["trace_ready_cpu"], d["trace_ready"], TARGETS["trace_ready"],
                            "CPU of the process")]
    lines.append(f"    events shown (the events dock's replay of every call: {d['events']:,} events, {d['pairs']:,} "
                 f"compactions in Kept and lost) {d['events_ready_cpu']:.1f} s CPU of the process, "
                 f"{d['events_ready']:.1f} s wall after open; the steps below are measured after it")
    rounds = [("first", "step, first visits"), ("again", "step, again"),
              ("beside_events", "step beside the events' replay after the parameter change")]
    for rnd, label in rounds:
        if f"step_{rnd}" not in d:
            continue
        if rnd == "beside_events" and "param_change" in d:
            lines.append("    " + judged(f"parameter change {d['param']} (re-ran {', '.join(d['rerun']) or 'nothing'})",
                                        d["param_change_cpu"], d["param_change"], TARGETS["param_change"],
                                        "CPU of the process"))
        cpu, wall = d[f"step_{rnd}_cpu"], d[f"step_{rnd}"]
        lines.append("    " + judged(f"{label}: median", statistics.median(cpu), statistics.median(wall),
                                    TARGETS["step"], "CPU of the GUI thread") + f"; max {ms(max(cpu))} CPU, "
                     f"{ms(max(wall))} wall")
    if "param_change" in d and "step_beside_events" not in d:
        lines.append("    " + judged(f"parameter change {d['param']} (re-ran {', '.join(d['rerun']) or 'nothing'})",
                                    d["param_change_cpu"], d["param_change"], TARGETS["param_change"],
                                    "CPU of the process"))
    if "param_events_ready" in d:
        lines.append(f"    the parameter change's events shown {d['param_events_ready']:.1f} s wall after its result")
    worst = max(d["stalls"].values(), default=0.0)
    lines.append(f"    longest UI stall {ms(worst)} = {worst / TARGETS['stall']:.2f}x target {ms(TARGETS['stall'])}  "
                 + ("OK" if worst <= TARGETS["stall"] else "OVER") + f": {stalls}")
    lines.extend(where_lines(d.get("stall_where", [])))
    lines.append(f"    peak RSS {d['peak_rss'] / 1e6:.0f} MB = {d['peak_rss'] / d['file']:.2f}x the file; resident at "
                 + ", ".join(f"{k} {v / 1e6:.0f} MB" for k, v in d["rss"].items()))
    return lines


def main() -> int:
    from compactscope.core import strategies
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--strategies", default=",".join(strategies.available()),
                    help="comma-separated (default: every built-in strategy)")
    ap.add_argument("--file", help="use this session file instead of writing one")
    ap.add_argument("--no-tabs", action="store_true",
                    help="skip the tabs phase (every tab; the timeline's replays the whole file)")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], args.child[1], int(args.child[2]), tabs=not args.no_tabs)
        return 0
    from bench_memory import write_session
    tmp = Path(tempfile.mkdtemp(prefix="cs-bench-win-"))
    path = Path(args.file) if args.file else tmp / "session.jsonl"
    size = path.stat().st_size if args.file else write_session(path, args.messages)
    # byte-code cached as an installed package's is (as bench_startup.py does): without it every module the window
    # imports late is compiled from source in the phase that first needs it (a stall of its own, not the window's)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(XDG_CACHE_HOME=str(tmp / "cache"), PYTHONPYCACHEPREFIX=str(tmp / "pyc"))
    subprocess.run([sys.executable, "-m", "compileall", "-q", "app", "core", "widgets", "bench"], env=env,
                   cwd=str(ROOT), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    what = path.name if args.file else f"{args.messages:,} messages"
    print(f"session: {what}, {size / 1e6:.1f} MB (Claude Code JSONL) on {os.cpu_count()} cores; each strategy in a "
          "fresh process")
    failed = 0
    for strategy in args.strategies.split(","):
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        res = subprocess.run([sys.executable, __file__, "--child", str(path), strategy, str(size)]
                             + (["--no-tabs"] if args.no_tabs else []),
                             capture_output=True, text=True, env=env, cwd=str(ROOT))
        if res.returncode != 0:
            print(f"  {strategy}: failed: {res.stderr.strip()[-800:]}")
            failed += 1
            continue
        d = json.loads(res.stdout.strip().splitlines()[-1])
        lines = report(strategy, d)
        lines[0] += f"; load average {load:.1f}"
        print("\n".join(lines))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
