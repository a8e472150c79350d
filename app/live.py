"""Wiring for the live panel: the s08 agent's turns on a ``core.jobs`` worker, the recording
proxy, and follow mode, posted back to the GUI thread by the Qt executor.

``LiveController`` owns what runs (and whether a turn is busy); ``widgets.live_panel.LivePanel``
shows it; ``core.live`` types the agent's events and puts the proxy's calls into words.
``attach_to_main_window(win)`` docks the panel in the main window and makes the
message view, stepper and chart follow the live session: after every agent
call they show the pipeline run the agent really did before that call.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable

import shiboken6
from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QDockWidget

from compactscope.core.model.conversation import Conversation
from compactscope.core.runtime.jobs import LATEST, Executor, Worker
from compactscope.core.layers.base import SUMMARY
from compactscope.core.live.sources import (
    Compacted,
    Failed,
    PipelineRan,
    ProxyWatch,
    Responded,
    Retrying,
    Streamed,
    ToolRan,
    agent_event,
)
from compactscope.widgets.live_panel import LivePanel

from compactscope.app.workers import QtExecutor
from compactscope.widgets.i18n import tr


def default_recording(kind: str) -> Path:
    from compactscope.core.files.workspace import default_root
    return default_root().parent / "recordings" / f"{kind}-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"


def _fmt(n) -> str:
    try:
        return f"{int(n):,}"
    except (TypeError, ValueError):
        return "?"


class LiveController(QObject):
    """Owns what runs live: the agent's turns (one at a time, on a ``core.jobs.Worker``; a message
    sent while a turn runs is queued and sent when it ends), the recording proxy, follow mode, and
    the loading of the recording so far. Everything reaches the GUI thread through the executor."""
    sigTrace = Signal(object, object)     # (Conversation = the context before the pipeline, Trace) per agent call
    sigContext = Signal(object)           # a Conversation to show (proxy call, follow update)
    sigFinished = Signal(str)             # the agent's turn ended: "done", "stopped" or "error"
    sigHistory = Signal(object)           # the agent's whole session so far (its recording, loaded) after each call

    def __init__(self, panel: LivePanel, strategy: Callable[[], tuple] | None = None, parent=None,
                 executor: Executor | None = None):
        super().__init__(parent or panel)
        self.panel = panel
        self.strategy = strategy or (lambda: ("s08", {}))
        self.executor = executor or QtExecutor(defer=False)
        self.turns = Worker(self.executor, self._turn_done, self._turn_failed, on_partial=self._on_event,
                            name="agent")
        self.history = Worker(self.executor, self._history_loaded, policy=LATEST, name="recording")
        self.queue: list[str] = []            # messages sent while a turn was running
        self.agent = None
        self.recorder = None
        self._agent_key = None
        self.proxy = None
        self.proxy_recorder = None
        self.proxy_watch = ProxyWatch()
        self._proxy_last = None
        self.follow = None
        self._follow_shape = None
        self.streamed = False
        panel.sigAgentSettings.connect(self.configure_agent)
        panel.sigSend.connect(self.send)
        panel.sigStop.connect(self.stop)
        panel.sigNewSession.connect(self.new_session)
        panel.sigStartProxy.connect(self.start_proxy)
        panel.sigStopProxy.connect(self.stop_proxy)
        panel.sigFollow.connect(self.start_follow)
        panel.sigStopFollow.connect(self.stop_follow)

    @property
    def busy(self) -> bool:
        """An agent turn is running (or queued messages wait for it)."""
        return self.turns.busy

    # ================================================================ agent
    def configure_agent(self, s: dict) -> bool:
        from compactscope.core.live.agent import Agent, AgentError
        from compactscope.core.live.recorder import RecordingWriter
        workdir = s.get("workdir") or ""
        name, params = self.strategy()
        key = (workdir, s.get("record"))
        if self.agent is not None and key == self._agent_key:
            # same session: take a new strategy, parameters, model, key or base URL without losing the
            # conversation (applies from the next call; a running turn keeps its engine)
            if not self.busy:
                self._update_engine(name, params)
            self.agent.configure(s.get("model"), s.get("api_key"), s.get("base_url"))
            return True
        if self.busy:
            self.panel.show_error(tr("A turn is still running in the current session."),
                                  tr("Wait for it (or press Stop) before changing the workspace or the recording."))
            return False
        if not workdir or not Path(workdir).expanduser().is_dir():
            self.panel.show_error(tr("The workspace folder {workdir!r} does not exist.").format(workdir=workdir),
                                  tr("Pick an existing folder with Browse…; the agent can only touch files in it."))
            return False
        self.close_agent()
        path = Path(s["record"]).expanduser() if s.get("record") else default_recording("agent")
        try:
            self.recorder = RecordingWriter(path, source="agent", meta={"strategy": name, "workdir": str(workdir)})
        except OSError as e:
            self.panel.show_error(tr("Cannot write the recording {path}: {v}").format(path=path, v=e.strerror or e),
                                  tr("Pick another recording file or folder."))
            return False
        try:
            self.agent = Agent(Path(workdir).expanduser(), strategy=name, params=params, model=s.get("model"),
                               api_key=s.get("api_key"), base_url=s.get("base_url"), recorder=self.recorder,
                               confirm_bash=self._confirm_bash)
        except (AgentError, KeyError, ValueError) as e:
            self.panel.show_error(tr("Cannot start the agent: {e}").format(e=e), getattr(e, "hint", "") or tr("Check the settings."))
            return False
        self._agent_key = key
        self.panel.append_note(tr("new session in {workdir} with {model}, strategy {name}; recording to {path}").format(
            workdir=self.agent.workdir, model=self.agent.model, name=name, path=path), "#64748b")
        return True

    def _update_engine(self, name: str, params: dict) -> None:
        from compactscope.core import strategies
        a = self.agent
        try:
            strategy = strategies.get(name)
            resolved = strategy.resolve(params)
        except (KeyError, ValueError) as e:
            self.panel.show_error(tr("Strategy {name}: {e}").format(name=name, e=e), tr("Fix the parameter in the strategy panel."))
            return
        if strategy.name != a.engine.strategy.name:
            a.engine = a.engine.fork(strategy=strategy, params=resolved, state={})
            self.panel.append_note(tr("strategy is now {name}; the conversation is kept").format(name=strategy.name),
                                   "#64748b")
        elif resolved != a.engine.params:
            changed = sorted(k for k in resolved if resolved[k] != a.engine.params.get(k))
            a.engine = a.engine.fork(params=resolved)
            self.panel.append_note(tr("from the next call: ") + ", ".join(f"{k}={resolved[k]}" for k in changed),
                                   "#64748b")

    def send(self, text: str) -> None:
        """Send a message; while a turn runs it waits in ``queue`` and goes when the turn ends."""
        if self.agent is None:
            return
        if self.busy:
            self.queue.append(text)
            self.panel.append_user(text)
            self.panel.append_note(tr("queued: sent when the current turn ends"), "#64748b")
            return
        self._start_turn(text, echo=True)

    def _start_turn(self, text: str, echo: bool) -> None:
        self._update_engine(*self.strategy())          # the window's strategy and parameters, from this turn
        self.panel.clear_error()
        if echo:
            self.panel.append_user(text)
        self.panel.set_busy(True)
        self.panel.set_status("calling", tr("running the pipeline, then calling the model…"))
        self.streamed = False
        agent = self.agent

        def turn(text, state):
            from compactscope.core.live.agent import AgentStopped
            agent.on_event = lambda k, d: state.set_partial_result(agent_event(k, d))
            try:
                agent.send(text)
            except AgentStopped:
                return "stopped"
            finally:
                agent.on_event = None
            return "done"
        self.turns.start(turn, text)

    def stop(self) -> None:
        self.queue.clear()
        if self.agent is not None:
            self.agent.stop()

    def new_session(self) -> None:
        if self.agent is None or self.busy:
            return
        self.agent.reset()
        self.panel.clear_error()
        self.panel.log.clear()
        self.panel.append_note(tr("new session in {workdir}; the recording continues").format(workdir=self.agent.workdir),
                               "#64748b")
        self.panel.set_status("idle", tr("new session: send a message"))

    def wait(self, timeout: float = 30.0) -> bool:
        """Process events until the agent's turn (and any queued one) ends (tests, closing)."""
        from PySide6.QtWidgets import QApplication
        app = QApplication.instance()
        end = time.monotonic() + timeout
        while self.busy and time.monotonic() < end:
            app.processEvents()
            time.sleep(0.005)
        return not self.busy

    def close_agent(self) -> None:
        self.queue.clear()
        if self.agent is not None:
            self.agent.stop()
            self.wait(10)
        self.turns.cancel()
        if self.recorder is not None:
            self.recorder.close()
        self.agent = self.recorder = None

    def _confirm_bash(self, command: str) -> str:
        """Called in the agent's thread: ask in the GUI thread and wait."""
        holder = {"answer": "deny", "done": threading.Event()}
        self.executor.post(self._on_ask, command, holder)
        while not holder["done"].wait(0.1):
            if self.agent is None or self.agent.cancel.is_set():
                return "deny"
        return holder["answer"]

    def _on_ask(self, command: str, holder: dict) -> None:
        self.panel.set_status("tool", tr("waiting for you to allow a shell command"))
        try:
            holder["answer"] = self.panel.ask_bash(command)
        finally:
            holder["done"].set()

    def _turn_done(self, how: str) -> None:
        p = self.panel
        if how == "stopped":
            p.append_note(tr("stopped; the conversation so far is kept (every tool call has its result)"), "#b45309")
            p.set_status("idle", tr("stopped; send a message to continue"))
        else:
            n = len(self.agent.calls) if self.agent else 0
            p.set_status("idle", tr("done; {n} model call(s) in this session").format(n=n))
        self._turn_ended(how)

    def _turn_failed(self, e: BaseException) -> None:
        p = self.panel
        hint = getattr(e, "hint", "") or tr("This is a bug in Compactscope; the recording keeps what happened.")
        p.show_error(str(getattr(e, "message", None) or f"{type(e).__name__}: {e}"), hint)
        p.set_status("error", tr("the turn ended with an error; nothing recorded so far is lost"))
        self._turn_ended("error")

    def _turn_ended(self, how: str) -> None:
        if self.queue and self.agent is not None and how != "stopped":
            self._start_turn(self.queue.pop(0), echo=False)      # a message sent meanwhile: never lost
        else:
            self.queue.clear()
            self.panel.set_busy(False)
        self.sigFinished.emit(how)

    # ================================================================ events (GUI thread)
    def _on_event(self, ev) -> None:
        p = self.panel
        if isinstance(ev, PipelineRan):
            trace, call = ev.trace, ev.call
            conv = Conversation(list(trace.input), system=self.agent.system if self.agent else None,
                                title=f"live agent, call {call.n}", format="live")
            changed = [s.layer for s in trace.steps if s.changed]
            p.set_status("calling", f"call {call.n}: sending {call.messages} messages, {_fmt(call.size)} chars"
                         + (f" (changed by {', '.join(changed)})" if changed else ""))
            for s in trace.steps:
                if s.error:
                    fails = trace.state_after.get("consecutive_failures")
                    p.append_note(f"{s.layer} failed before call {call.n}: {s.error}; the context was sent "
                                  f"unchanged" + (f" (consecutive failures: {fails})" if fails else ""), "#dc2626")
                elif s.role == SUMMARY and s.changed:
                    p.append_note(f"{s.layer} summarised the conversation before call {call.n}: "
                                  f"{len(trace.input)} \u2192 {len(trace.output)} messages")
            self.sigTrace.emit(conv, trace)
        elif isinstance(ev, Streamed):
            self.streamed = True
            p.append_stream(ev.text)
        elif isinstance(ev, Responded):
            p.append_response(ev.message, streamed=self.streamed)
            self.streamed = False
            if self.recorder is not None:
                self._load_history(self.recorder.path, "agent")
            u = ev.usage or {}
            p.set_status("tool" if ev.stop_reason == "tool_use" else "idle",
                         tr("call {n}: {seconds:.1f} s, context {_fmt} tokens, output {_fmt2} tokens, stop {stop_reason}").format(n=ev.call.n, seconds=ev.seconds, _fmt=_fmt(ev.context_tokens), _fmt2=_fmt(u.get('output_tokens')), stop_reason=ev.stop_reason))
        elif isinstance(ev, Retrying):
            p.set_status("calling", ev.text)
            p.append_note(ev.text, "#b45309")
        elif isinstance(ev, ToolRan):
            p.append_tool(ev.name, ev.input, ev.output, ev.is_error)
        elif isinstance(ev, Compacted):
            trace = ev.trace
            what = {"reactive": "the API said the prompt is too long: reactive compact",
                    "compact_tool": "the model called compact"}.get(ev.kind, ev.kind)
            p.append_note(f"{what}: {len(trace.input)} \u2192 {len(trace.output)} messages")
            self.sigTrace.emit(Conversation(list(trace.input), title=f"live agent, {ev.kind}", format="live"), trace)
        elif isinstance(ev, Failed):
            e = ev.error
            if e.kind == "prompt_too_long":
                p.append_note(f"{e.message}: running reactive compact (at most once per turn)", "#dc2626")
            else:
                p.show_error(e.message, e.hint)

    # ================================================================ proxy
    def start_proxy(self, s: dict) -> bool:
        from compactscope.core.live.proxy import DEFAULT_UPSTREAM, ProxyError, RecordingProxy
        from compactscope.core.live.recorder import RecordingWriter
        self.stop_proxy()
        path = Path(s["record"]).expanduser() if s.get("record") else default_recording("proxy")
        upstream = s.get("upstream") or DEFAULT_UPSTREAM
        try:
            self.proxy_recorder = RecordingWriter(path, source="proxy", meta={"upstream": upstream})
            self.proxy = RecordingProxy(upstream, port=int(s.get("port", 8788)), recorder=self.proxy_recorder,
                                        on_call=lambda r: self.executor.post(self._proxy_call, r)).start()
        except (ProxyError, OSError) as e:
            if self.proxy_recorder is not None:
                self.proxy_recorder.close()
                self.proxy_recorder = None
            self.proxy = None
            self.panel.set_proxy_running(False)
            self.panel.show_error(tr("The proxy did not start: {e}").format(e=e), tr("Pick another port, or check the upstream URL."))
            return False
        self.proxy_watch = ProxyWatch()
        self.panel.clear_error()
        self.panel.set_proxy_running(True, self.proxy.url)
        self.panel.set_status("listening", tr("proxy on {url} → {upstream}; recording to {path}").format(url=self.proxy.url, upstream=upstream, path=path))
        self.panel.append_note(tr("proxy listening on {url}; run ANTHROPIC_BASE_URL={url} claude (or any client)").format(
            url=self.proxy.url), "#059669")
        return True

    def stop_proxy(self) -> None:
        if self.proxy is not None:
            self.proxy.stop()
            self.panel.append_note(tr("proxy stopped after {n} call(s)").format(n=self.proxy.calls), "#64748b")
            self.panel.set_status("idle", tr("proxy stopped"))
        if self.proxy_recorder is not None:
            self.proxy_recorder.close()
        self.proxy = self.proxy_recorder = None
        self.panel.set_proxy_running(False)

    @property
    def proxy_calls(self) -> int:
        return self.proxy_watch.calls

    def _proxy_call(self, r: dict) -> None:
        if self.proxy is None:
            return
        v = self.proxy_watch.see(r)
        if v.context_changed:
            self.panel.append_note(v.context_changed)
        self.panel.set_status("listening", v.status)
        self.panel.append_note(v.note, "#dc2626" if v.failed else "#475569")
        if v.conversation is not None and self.proxy_recorder is not None:
            self._proxy_last = v.conversation
            self._load_history(self.proxy_recorder.path, "proxy")

    # ================================================================ history (a recording, loaded in a worker)
    def _load_history(self, path, tag: str) -> None:
        """Load the recording so far in the background; loads are coalesced (the latest request runs
        after the one loading, the one in between is dropped)."""
        def work(state):
            from compactscope.core.loaders import load
            try:
                conv = load(path).main
                conv.title = f"live {tag}: {len(conv.extra.get('calls') or [])} call(s)"
            except Exception:   # a half-written recording that cannot load yet: try again next call
                conv = None
            return tag, conv
        self.history.start(work)

    def _history_loaded(self, res) -> None:
        if self.history.waiting:
            return                       # a newer call is loading next
        if not shiboken6.isValid(self):
            return                       # the window closed while the recording loaded: nobody to tell
        tag, conv = res
        if tag == "agent" and conv is not None:
            self.sigHistory.emit(conv)
        elif tag == "proxy" and self.proxy is not None:
            self.sigContext.emit(conv if conv is not None else self._proxy_last)

    # ================================================================ follow
    def start_follow(self, path: str) -> bool:
        from compactscope.core.live.follow import FollowThread
        self.stop_follow()
        if not Path(path).is_file():
            self.panel.set_follow_running(False)
            self.panel.show_error(tr("{path}: no such file.").format(path=path), tr("Pick the session file to follow."))
            return False
        self._follow_shape = None
        self.follow = FollowThread(path, lambda u: self.executor.post(self._follow_update, u), interval=0.5)
        self.follow.start()
        self.panel.clear_error()
        self.panel.set_follow_running(True)
        self.panel.set_status("following", tr("following {path}").format(path=path))
        self.panel.append_note(tr("following {path}: the views update as complete lines arrive").format(path=path),
                               "#059669")
        return True

    def stop_follow(self) -> None:
        if self.follow is not None:
            self.follow.stop()
            self.follow = None
            self.panel.set_status("idle", tr("stopped following"))
        self.panel.set_follow_running(False)

    def _follow_update(self, u) -> None:
        from compactscope.core.live import follow as F
        if self.follow is None:
            return
        event = getattr(u, "event", F.APPENDED)
        if event in (F.DELETED, F.NOT_A_FILE, F.UNREADABLE):
            # what happened, said once; the views keep the last good load and following goes on
            self.panel.append_note(u.detail or u.error or event, "#dc2626")
            self.panel.show_error(u.detail or u.error or event, tr("Wait for the file to come back (following "
                                                                   "goes on), or stop following."))
            self.panel.set_status("error", u.error or event)
            return
        if event in F.RESTARTS:
            self.panel.clear_error()
            self.panel.append_note(u.detail, "#b45309")
        if u.result is None:
            self.panel.set_status("following", u.error or tr("waiting"))
            return
        conv = u.result.main
        shape = (len(conv.messages), len(conv.segments))
        if self._follow_shape is not None and shape[1] > self._follow_shape[1] and event not in F.RESTARTS:
            self.panel.append_note(tr("the session compacted: segment {s} starts at message {m}").format(
                s=shape[1], m=conv.segments[-1]))
        if shape != self._follow_shape or event in F.RESTARTS:
            self._follow_shape = shape
            self.sigContext.emit(conv)
        self.panel.set_status("following", f"{u.lines:,} lines, {shape[0]:,} messages, {shape[1] - 1} compaction(s)"
                              + (", a line is being written" if u.partial else "")
                              + f"; reload {u.seconds * 1000:.0f} ms")

    def shutdown(self) -> None:
        """Stop the agent, the proxy and the follower (the recording's last load still arrives)."""
        self.close_agent()
        self.stop_proxy()
        self.stop_follow()

    def close(self) -> None:
        """The window closes: stop everything; nothing more is delivered."""
        self.shutdown()
        self.history.cancel()


# ==================================================================== main window hook
def show_trace_in_window(win, conv: Conversation, trace) -> None:
    """Show a trace the agent ran (not a re-run) in the window's stepper, chart and message view."""
    win.show_trace(conv, trace)


def set_history_in_window(win, conv: Conversation) -> None:
    """The agent's session so far becomes the window's conversation (the stepper keeps showing the
    agent's own last pipeline run); the timeline replays it when it is open."""
    win.session.source.set_conversation(conv, run=False)


def attach_to_main_window(win) -> tuple[QDockWidget, LiveController]:
    """Dock a live panel in ``win`` (a MainWindow) and wire it to the views."""
    panel = LivePanel(win)
    ctl = LiveController(panel, strategy=lambda: (win.session.setup.strategy.name, dict(win.session.setup.params)), parent=win)
    ctl.sigTrace.connect(lambda conv, tr: show_trace_in_window(win, conv, tr))
    ctl.sigContext.connect(lambda conv: conv is not None and win.set_conversation(conv, title=conv.title or "live"))
    ctl.sigHistory.connect(lambda conv: set_history_in_window(win, conv))
    dock = QDockWidget("Live", win)
    dock.setObjectName("dock_live")
    dock.setWidget(panel)
    win.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
    inspector = getattr(win, "dock_inspector", None)
    if inspector is not None:
        win.tabifyDockWidget(inspector, dock)      # full height, next to the inspector and parameters
    dock.raise_()
    win.resizeDocks([dock], [440], Qt.Orientation.Horizontal)
    win.live_panel, win.live_controller, win.live_dock = panel, ctl, dock
    _remember_settings(win, panel)
    closer = _ShutdownOnClose(ctl, win)
    win.installEventFilter(closer)
    return dock, ctl


_SAVED = (("live/workdir", "workdir"), ("live/model", "model_edit"), ("live/base_url", "base_url"),
          ("live/upstream", "upstream"), ("live/follow", "follow_path"))


def _remember_settings(win, panel: LivePanel) -> None:
    """Restore and save the panel's fields in the window's settings. The API key is never saved."""
    settings = getattr(win, "settings", None)
    if settings is None:
        return
    for key, attr in _SAVED:
        v = settings.value(key, "")
        if isinstance(v, str) and v:
            getattr(panel, attr).setText(v)
    try:
        panel.port.setValue(int(settings.value("live/port", 8788)))
    except (TypeError, ValueError):
        pass

    def save(*_):
        for key, attr in _SAVED:
            settings.set(key, getattr(panel, attr).text().strip())
        settings.set("live/port", panel.port.value())
    panel.sigAgentSettings.connect(save)
    panel.sigStartProxy.connect(save)
    panel.sigFollow.connect(save)


class _ShutdownOnClose(QObject):
    """Stop the agent, the proxy and the follower when the window closes."""

    def __init__(self, ctl: LiveController, parent):
        super().__init__(parent)
        self.ctl = ctl

    def eventFilter(self, obj, ev) -> bool:
        if ev.type() == QEvent.Type.Close:
            self.ctl.close()
        return False


def open_live(win, tab: int | None = None):
    """Show the live dock (creating it on first use), optionally on a tab: 0 agent, 1 proxy, 2 follow."""
    if getattr(win, "live_dock", None) is None:
        attach_to_main_window(win)
    win.live_dock.show()
    win.live_dock.raise_()
    if tab is not None:
        win.live_panel.tabs.setCurrentIndex(tab)
    (win.live_panel.input if tab in (None, 0) else win.live_panel.tabs).setFocus()
    return win.live_dock


def follow_dialog(win) -> None:
    """Pick a session file, then follow it."""
    open_live(win, 2)
    panel = win.live_panel
    panel._pick_follow()
    if panel.follow_path.text().strip() and not panel.follow_btn.isChecked():
        panel.follow_btn.click()


def install_menu(win):
    """A "Live" menu in the window's menu bar; the panel is created when first opened."""
    menu = win.menuBar().addMenu(tr("&Live"))
    a = menu.addAction(tr("&Agent (chat with the s08 agent)…"), lambda: open_live(win, 0))
    a.setShortcut(QKeySequence("Ctrl+L"))
    menu.addAction(tr("Recording &proxy…"), lambda: open_live(win, 1))
    menu.addAction(tr("&Follow a session file…"), lambda: follow_dialog(win))
    win.live_menu = menu
    return menu
