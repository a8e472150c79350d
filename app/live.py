"""Wiring for the live panel: the s08 agent in a worker thread, the recording
proxy, and follow mode, posted back to the GUI thread.

``LiveController`` owns what runs; ``widgets.live_panel.LivePanel`` shows it.
``attach_to_main_window(win)`` docks the panel in the main window and makes the
message view, stepper and chart follow the live session: after every agent
call they show the pipeline run the agent really did before that call.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QDockWidget

from compactscope.core.conversation import Conversation, Usage
from compactscope.core.layers.base import SUMMARY
from compactscope.widgets.live_panel import LivePanel


def default_recording(kind: str) -> Path:
    from compactscope.core.workspace import default_root
    return default_root().parent / "recordings" / f"{kind}-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"


def _fmt(n) -> str:
    try:
        return f"{int(n):,}"
    except (TypeError, ValueError):
        return "?"


class LiveController(QObject):
    sigTrace = Signal(object, object)     # (Conversation = the context before the pipeline, Trace) per agent call
    sigContext = Signal(object)           # a Conversation to show (proxy call, follow update)
    sigFinished = Signal(str)             # the agent's turn ended: "done", "stopped" or "error"
    sigHistory = Signal(object)           # the agent's whole session so far (its recording, loaded) after each call
    _sigEvent = Signal(str, object)       # worker threads -> GUI thread
    _sigAsk = Signal(str, object)

    def __init__(self, panel: LivePanel, strategy: Callable[[], tuple] | None = None, parent=None):
        super().__init__(parent or panel)
        self.panel = panel
        self.strategy = strategy or (lambda: ("s08", {}))
        self.agent = None
        self.recorder = None
        self._agent_key = None
        self._thread: threading.Thread | None = None
        self.proxy = None
        self.proxy_recorder = None
        self._proxy_prev: list | None = None
        self.proxy_calls = 0
        self.follow = None
        self._follow_shape = None
        self.streamed = False
        self._hist = {"busy": False, "pending": None}
        self._sigEvent.connect(self._on_event, Qt.QueuedConnection)
        self._sigAsk.connect(self._on_ask, Qt.QueuedConnection)
        panel.sigAgentSettings.connect(self.configure_agent)
        panel.sigSend.connect(self.send)
        panel.sigStop.connect(self.stop)
        panel.sigNewSession.connect(self.new_session)
        panel.sigStartProxy.connect(self.start_proxy)
        panel.sigStopProxy.connect(self.stop_proxy)
        panel.sigFollow.connect(self.start_follow)
        panel.sigStopFollow.connect(self.stop_follow)

    # ================================================================ agent
    def configure_agent(self, s: dict) -> bool:
        from compactscope.core.agent import Agent, AgentError
        from compactscope.core.recording import RecordingWriter
        workdir = s.get("workdir") or ""
        name, params = self.strategy()
        key = (workdir, s.get("record"))
        if self.agent is not None and key == self._agent_key:
            # same session: take a new strategy, parameters, model, key or base URL without losing the conversation
            a = self.agent
            self._update_engine(name, params)
            if s.get("model") and s["model"] != a.model:
                a.model = s["model"]
            if s.get("api_key") and s["api_key"] != a._api_key:
                a._api_key, a._client = s["api_key"], None
                if self.recorder is not None:
                    self.recorder.add_secret(s["api_key"])
            if s.get("base_url") and s["base_url"] != a.base_url:
                a.base_url, a._client = s["base_url"], None
            return True
        if not workdir or not Path(workdir).expanduser().is_dir():
            self.panel.show_error(f"The workspace folder {workdir!r} does not exist.",
                                  "Pick an existing folder with Browse\u2026; the agent can only touch files in it.")
            return False
        self.close_agent()
        path = Path(s["record"]).expanduser() if s.get("record") else default_recording("agent")
        try:
            self.recorder = RecordingWriter(path, source="agent", meta={"strategy": name, "workdir": str(workdir)})
        except OSError as e:
            self.panel.show_error(f"Cannot write the recording {path}: {e.strerror or e}",
                                  "Pick another recording file or folder.")
            return False
        try:
            self.agent = Agent(Path(workdir).expanduser(), strategy=name, params=params, model=s.get("model"),
                               api_key=s.get("api_key"), base_url=s.get("base_url"), recorder=self.recorder,
                               on_event=lambda k, d: self._sigEvent.emit(k, d), confirm_bash=self._confirm_bash)
        except (AgentError, KeyError, ValueError) as e:
            self.panel.show_error(f"Cannot start the agent: {e}", getattr(e, "hint", "") or "Check the settings.")
            return False
        self._agent_key = key
        self.panel.append_note(f"new session in {self.agent.workdir} with {self.agent.model}, strategy {name}; "
                               f"recording to {path}", "#64748b")
        return True

    def _update_engine(self, name: str, params: dict) -> None:
        from compactscope.core import strategies
        a = self.agent
        try:
            strategy = strategies.get(name)
            resolved = strategy.resolve(params)
        except (KeyError, ValueError) as e:
            self.panel.show_error(f"Strategy {name}: {e}", "Fix the parameter in the strategy panel.")
            return
        if strategy.name != a.engine.strategy.name:
            a.engine = a.engine.fork(strategy=strategy, params=resolved, state={})
            self.panel.append_note(f"strategy is now {strategy.name}; the conversation is kept", "#64748b")
        elif resolved != a.engine.params:
            changed = sorted(k for k in resolved if resolved[k] != a.engine.params.get(k))
            a.engine = a.engine.fork(params=resolved)
            self.panel.append_note("from the next call: " + ", ".join(f"{k}={resolved[k]}" for k in changed),
                                   "#64748b")

    def send(self, text: str) -> None:
        if self.agent is None or (self._thread is not None and self._thread.is_alive()):
            return
        self.panel.clear_error()
        self.panel.append_user(text)
        self.panel.set_busy(True)
        self.panel.set_status("calling", "running the pipeline, then calling the model\u2026")
        self.streamed = False
        agent = self.agent

        def work():
            from compactscope.core.agent import AgentError, AgentStopped
            try:
                agent.send(text)
                self._sigEvent.emit("_finished", "done")
            except AgentStopped:
                self._sigEvent.emit("_finished", "stopped")
            except AgentError as e:
                self._sigEvent.emit("_failed", e)
            except Exception as e:  # a bug must reach the window, not kill the thread silently
                self._sigEvent.emit("_failed", e)
        self._thread = threading.Thread(target=work, name="compactscope-agent", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self.agent is not None:
            self.agent.stop()

    def new_session(self) -> None:
        if self.agent is None or (self._thread is not None and self._thread.is_alive()):
            return
        self.agent.reset()
        self.panel.clear_error()
        self.panel.log.clear()
        self.panel.append_note(f"new session in {self.agent.workdir}; the recording continues", "#64748b")
        self.panel.set_status("idle", "new session: send a message")

    def wait(self, timeout: float = 30.0) -> bool:
        """Block until the agent's turn ends (tests, closing)."""
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def close_agent(self) -> None:
        if self.agent is not None:
            self.agent.stop()
            self.wait(10)
        if self.recorder is not None:
            self.recorder.close()
        self.agent = self.recorder = None

    def _confirm_bash(self, command: str) -> str:
        """Called in the agent's thread: ask in the GUI thread and wait."""
        holder = {"answer": "deny", "done": threading.Event()}
        self._sigAsk.emit(command, holder)
        while not holder["done"].wait(0.1):
            if self.agent is None or self.agent.cancel.is_set():
                return "deny"
        return holder["answer"]

    def _on_ask(self, command: str, holder: dict) -> None:
        self.panel.set_status("tool", "waiting for you to allow a shell command")
        try:
            holder["answer"] = self.panel.ask_bash(command)
        finally:
            holder["done"].set()

    # ================================================================ events (GUI thread)
    def _on_event(self, kind: str, d) -> None:
        p = self.panel
        if kind == "trace":
            tr, call = d["trace"], d["call"]
            conv = Conversation(list(tr.input), system=self.agent.system if self.agent else None,
                                title=f"live agent, call {call.n}", format="live")
            changed = [s.layer for s in tr.steps if s.changed]
            p.set_status("calling", f"call {call.n}: sending {call.messages} messages, {_fmt(call.size)} chars"
                         + (f" (changed by {', '.join(changed)})" if changed else ""))
            for s in tr.steps:
                if s.error:
                    fails = tr.state_after.get("consecutive_failures")
                    p.append_note(f"{s.layer} failed before call {call.n}: {s.error}; the context was sent "
                                  f"unchanged" + (f" (consecutive failures: {fails})" if fails else ""), "#dc2626")
            for s in tr.steps:
                if s.role == SUMMARY and s.changed:
                    p.append_note(f"{s.layer} summarised the conversation before call {call.n}: "
                                  f"{len(tr.input)} \u2192 {len(tr.output)} messages")
            self.sigTrace.emit(conv, tr)
        elif kind == "stream":
            self.streamed = True
            p.append_stream(d["text"])
        elif kind == "response":
            p.append_response(d["message"], streamed=self.streamed)
            self.streamed = False
            u = d.get("usage") or {}
            ctx = Usage.from_dict(u).context_tokens
            if self.recorder is not None:
                self._load_history(self.recorder.path, "agent")
            p.set_status("tool" if d.get("stop_reason") == "tool_use" else "idle",
                         f"call {d['call'].n}: {d['seconds']:.1f} s, context {_fmt(ctx)} tokens, output "
                         f"{_fmt(u.get('output_tokens'))} tokens, stop {d.get('stop_reason')}")
        elif kind == "retry":
            p.set_status("calling", d["text"])
            p.append_note(d["text"], "#b45309")
        elif kind == "tool":
            p.append_tool(d["name"], d["input"], d["output"], d["is_error"])
        elif kind == "compaction":
            tr = d["trace"]
            what = {"reactive": "the API said the prompt is too long: reactive compact",
                    "compact_tool": "the model called compact"}.get(d["kind"], d["kind"])
            p.append_note(f"{what}: {len(tr.input)} \u2192 {len(tr.output)} messages")
            self.sigTrace.emit(Conversation(list(tr.input), title=f"live agent, {d['kind']}", format="live"), tr)
        elif kind == "error":
            e = d["error"]
            if e.kind == "prompt_too_long":
                p.append_note(f"{e.message}: running reactive compact (at most once per turn)", "#dc2626")
            else:
                p.show_error(e.message, e.hint)
        elif kind == "_finished":
            p.set_busy(False)
            if d == "stopped":
                p.append_note("stopped; the conversation so far is kept (every tool call has its result)", "#b45309")
                p.set_status("idle", "stopped; send a message to continue")
            else:
                n = len(self.agent.calls) if self.agent else 0
                p.set_status("idle", f"done; {n} model call(s) in this session")
            self.sigFinished.emit(d)
        elif kind == "_failed":
            p.set_busy(False)
            hint = getattr(d, "hint", "") or "This is a bug in Compactscope; the recording keeps what happened."
            p.show_error(str(getattr(d, "message", None) or f"{type(d).__name__}: {d}"), hint)
            p.set_status("error", "the turn ended with an error; nothing recorded so far is lost")
            self.sigFinished.emit("error")
        elif kind == "proxy_call":
            self._proxy_call(d)
        elif kind == "_history":
            self._history_loaded(*d)
        elif kind == "follow":
            self._follow_update(d)

    # ================================================================ proxy
    def start_proxy(self, s: dict) -> bool:
        from compactscope.core.proxy import DEFAULT_UPSTREAM, ProxyError, RecordingProxy
        from compactscope.core.recording import RecordingWriter
        self.stop_proxy()
        path = Path(s["record"]).expanduser() if s.get("record") else default_recording("proxy")
        upstream = s.get("upstream") or DEFAULT_UPSTREAM
        try:
            self.proxy_recorder = RecordingWriter(path, source="proxy", meta={"upstream": upstream})
            self.proxy = RecordingProxy(upstream, port=int(s.get("port", 8788)), recorder=self.proxy_recorder,
                                        on_call=lambda r: self._sigEvent.emit("proxy_call", r)).start()
        except (ProxyError, OSError) as e:
            if self.proxy_recorder is not None:
                self.proxy_recorder.close()
                self.proxy_recorder = None
            self.proxy = None
            self.panel.set_proxy_running(False)
            self.panel.show_error(f"The proxy did not start: {e}", "Pick another port, or check the upstream URL.")
            return False
        self.proxy_calls = 0
        self._proxy_prev = None
        self.panel.clear_error()
        self.panel.set_proxy_running(True, self.proxy.url)
        self.panel.set_status("listening", f"proxy on {self.proxy.url} \u2192 {upstream}; recording to {path}")
        self.panel.append_note(f"proxy listening on {self.proxy.url}; run ANTHROPIC_BASE_URL={self.proxy.url} "
                               "claude (or any client)", "#059669")
        return True

    def stop_proxy(self) -> None:
        if self.proxy is not None:
            self.proxy.stop()
            self.panel.append_note(f"proxy stopped after {self.proxy.calls} call(s)", "#64748b")
            self.panel.set_status("idle", "proxy stopped")
        if self.proxy_recorder is not None:
            self.proxy_recorder.close()
        self.proxy = self.proxy_recorder = None
        self.panel.set_proxy_running(False)

    def _proxy_call(self, r: dict) -> None:
        self.proxy_calls += 1
        req = r.get("request") or {}
        msgs = req.get("messages") or []
        u = r.get("usage") or {}
        ctx = Usage.from_dict(u).context_tokens
        prev = self._proxy_prev
        if prev is not None and msgs and (len(msgs) < len(prev) or msgs[0] != prev[0]):
            self.panel.append_note(f"the client changed its context (a compaction?): {len(prev)} \u2192 "
                                   f"{len(msgs)} messages")
        self._proxy_prev = msgs
        err = r.get("error")
        self.panel.set_status("listening", f"{self.proxy_calls} call(s); last: {req.get('model')}, {len(msgs)} "
                              f"messages, context {_fmt(ctx)} tokens" + (f", error {err.get('kind')}" if err else ""))
        if err:
            what = f"HTTP {err.get('status')} {err.get('type') or err.get('kind')}: {err.get('message') or ''}"
            if err.get("kind") == "client_disconnected":
                what = "the client closed the connection mid-response"
            elif err.get("status") in (429, 529) or (err.get("status") or 0) >= 500:
                what += " (clients usually retry)"
            self.panel.append_note(f"call {self.proxy_calls}: {what}", "#dc2626")
        else:
            resp = r.get("response") or {}
            self.panel.append_note(f"call {self.proxy_calls}: {req.get('model')}, {len(msgs)} messages, context "
                                   f"{_fmt(ctx)} tokens, output {_fmt(u.get('output_tokens'))}, stop "
                                   f"{resp.get('stop_reason')}", "#475569")
        if msgs and self.proxy_recorder is not None:
            self._proxy_last = Conversation(msgs, system=req.get("system"), tools=req.get("tools"),
                                            model=req.get("model"), title=f"proxy call {self.proxy_calls}",
                                            format="live")
            self._load_history(self.proxy_recorder.path, "proxy")

    # ================================================================ history (a recording, loaded in a thread)
    def _load_history(self, path, tag: str) -> None:
        """Load the recording so far in a background thread; loads are coalesced (one at a time, the
        latest request wins)."""
        if self._hist["busy"]:
            self._hist["pending"] = (path, tag)
            return
        self._hist["busy"] = True

        def work():
            from compactscope.core.loaders import load
            try:
                conv = load(path).main
                conv.title = f"live {tag}: {len(conv.extra.get('calls') or [])} call(s)"
            except Exception:   # a half-written recording that cannot load yet: try again next call
                conv = None
            self._sigEvent.emit("_history", (tag, conv))
        threading.Thread(target=work, name="compactscope-history", daemon=True).start()

    def _history_loaded(self, tag: str, conv) -> None:
        self._hist["busy"] = False
        pending, self._hist["pending"] = self._hist["pending"], None
        if pending is not None:
            self._load_history(*pending)
            return                       # a newer call is already being loaded
        if tag == "agent" and conv is not None:
            self.sigHistory.emit(conv)
        elif tag == "proxy" and self.proxy is not None:
            self.sigContext.emit(conv if conv is not None else getattr(self, "_proxy_last", None))

    # ================================================================ follow
    def start_follow(self, path: str) -> bool:
        from compactscope.core.follow import FollowThread
        self.stop_follow()
        if not Path(path).is_file():
            self.panel.set_follow_running(False)
            self.panel.show_error(f"{path}: no such file.", "Pick the session file to follow.")
            return False
        self._follow_shape = None
        self.follow = FollowThread(path, lambda u: self._sigEvent.emit("follow", u), interval=0.5)
        self.follow.start()
        self.panel.clear_error()
        self.panel.set_follow_running(True)
        self.panel.set_status("following", f"following {path}")
        self.panel.append_note(f"following {path}: the views update as complete lines arrive", "#059669")
        return True

    def stop_follow(self) -> None:
        if self.follow is not None:
            self.follow.stop()
            self.follow = None
            self.panel.set_status("idle", "stopped following")
        self.panel.set_follow_running(False)

    def _follow_update(self, u) -> None:
        if self.follow is None:
            return
        if u.result is None:
            self.panel.set_status("following", u.error or "waiting")
            return
        conv = u.result.main
        shape = (len(conv.messages), len(conv.segments))
        if self._follow_shape is not None and shape[1] > self._follow_shape[1]:
            self.panel.append_note(f"the session compacted: segment {shape[1]} starts at message "
                                   f"{conv.segments[-1]}")
        if shape != self._follow_shape:
            self._follow_shape = shape
            self.sigContext.emit(conv)
        self.panel.set_status("following", f"{u.lines:,} lines, {shape[0]:,} messages, {shape[1] - 1} compaction(s)"
                              + (", a line is being written" if u.partial else "")
                              + f"; reload {u.seconds * 1000:.0f} ms")

    def shutdown(self) -> None:
        self.close_agent()
        self.stop_proxy()
        self.stop_follow()


# ==================================================================== main window hook
def show_trace_in_window(win, conv: Conversation, trace) -> None:
    """Show a trace the agent ran (not a re-run) in the window's stepper, chart and message view."""
    win.show_trace(conv, trace)


def set_history_in_window(win, conv: Conversation) -> None:
    """The agent's session so far becomes the window's conversation (the stepper keeps showing the
    agent's own last pipeline run); the timeline replays it when it is open."""
    win.session.set_conversation(conv, run=False)


def attach_to_main_window(win) -> tuple[QDockWidget, LiveController]:
    """Dock a live panel in ``win`` (a MainWindow) and wire it to the views."""
    panel = LivePanel(win)
    ctl = LiveController(panel, strategy=lambda: (win.strategy.name, dict(win.params)), parent=win)
    ctl.sigTrace.connect(lambda conv, tr: show_trace_in_window(win, conv, tr))
    ctl.sigContext.connect(lambda conv: conv is not None and win.set_conversation(conv, title=conv.title or "live"))
    ctl.sigHistory.connect(lambda conv: set_history_in_window(win, conv))
    dock = QDockWidget("Live", win)
    dock.setObjectName("dock_live")
    dock.setWidget(panel)
    win.addDockWidget(Qt.RightDockWidgetArea, dock)
    inspector = getattr(win, "dock_inspector", None)
    if inspector is not None:
        win.tabifyDockWidget(inspector, dock)      # full height, next to the inspector and parameters
    dock.raise_()
    win.resizeDocks([dock], [440], Qt.Horizontal)
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
        if ev.type() == QEvent.Close:
            self.ctl.shutdown()
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
    menu = win.menuBar().addMenu("&Live")
    a = menu.addAction("&Agent (chat with the s08 agent)…", lambda: open_live(win, 0))
    a.setShortcut(QKeySequence("Ctrl+L"))
    menu.addAction("Recording &proxy…", lambda: open_live(win, 1))
    menu.addAction("&Follow a session file\u2026", lambda: follow_dialog(win))
    win.live_menu = menu
    return menu
