"""The live panel: chat with the built-in s08 agent, run the recording proxy,
or follow a growing session file.

A self-contained view: it emits what the user asked for (``sigSend``,
``sigStop``, ``sigStartProxy``, ...) and shows what it is told (``append_*``,
``set_status``, ``show_error``). It holds no agent, server or pipeline logic;
``app/live.py`` wires it to those.
"""
from __future__ import annotations

import html
import json
import os

from PySide6.QtCore import QT_TRANSLATE_NOOP, Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut, QTextCursor
from PySide6.QtWidgets import (QFileDialog, QFormLayout, QHBoxLayout, QLabel, QLineEdit,
                               QMessageBox, QPlainTextEdit, QPushButton, QSizePolicy, QSpinBox, QTabWidget,
                               QTextBrowser, QVBoxLayout, QWidget)

from compactscope.widgets.common import ROLE_COLORS
from compactscope.widgets.i18n import tr

# the states' words, for the translation catalogue (set_status shows tr(state))
STATES = (QT_TRANSLATE_NOOP("", "idle"), QT_TRANSLATE_NOOP("", "calling"), QT_TRANSLATE_NOOP("", "tool"),
          QT_TRANSLATE_NOOP("", "compacting"), QT_TRANSLATE_NOOP("", "stopping"), QT_TRANSLATE_NOOP("", "error"),
          QT_TRANSLATE_NOOP("", "listening"), QT_TRANSLATE_NOOP("", "following"))
STATE_COLORS = {"idle": "#64748b", "calling": "#2563eb", "tool": "#ea580c", "compacting": "#9333ea",
                "stopping": "#b45309", "error": "#dc2626", "listening": "#059669", "following": "#059669"}


def _short(text, n: int = 240) -> str:
    s = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False, default=str)
    s = s.replace("\n", " \u23ce ")
    return s if len(s) <= n else s[:n - 1] + "\u2026"


class ChatInput(QPlainTextEdit):
    """Enter sends, Shift+Enter adds a line."""
    sigSubmit = Signal()

    def keyPressEvent(self, e):
        if e.key() in (Qt.Key_Return, Qt.Key_Enter) and not (e.modifiers() & Qt.ShiftModifier):
            self.sigSubmit.emit()
            return
        super().keyPressEvent(e)


class LivePanel(QWidget):
    # agent
    sigSend = Signal(str)                 # the user's message
    sigStop = Signal()                    # stop the agent (after the current step)
    sigAgentSettings = Signal(dict)       # {"workdir", "model", "api_key", "base_url", "record"} when Send is pressed
    sigNewSession = Signal()              # forget the conversation, keep workspace and settings
    # proxy
    sigStartProxy = Signal(dict)          # {"port", "upstream", "record"}
    sigStopProxy = Signal()
    # follow
    sigFollow = Signal(str)
    sigStopFollow = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("livePanel")
        outer = QVBoxLayout(self)
        outer.setContentsMargins(4, 4, 4, 4)
        outer.setSpacing(4)
        self.tabs = QTabWidget(self)
        self.tabs.setObjectName("liveTabs")
        self.tabs.addTab(self._agent_tab(), tr("Agent"))
        self.tabs.addTab(self._proxy_tab(), tr("Proxy"))
        self.tabs.addTab(self._follow_tab(), tr("Follow file"))
        self.tabs.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Fixed)
        outer.addWidget(self.tabs, 0)

        self.error_box = QLabel(self)
        self.error_box.setObjectName("liveError")
        self.error_box.setWordWrap(True)
        self.error_box.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.error_box.setStyleSheet("QLabel { background: #fee2e2; color: #7f1d1d; border: 1px solid #ef4444; "
                                     "border-radius: 4px; padding: 6px; }")
        self.error_box.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Minimum)
        self.error_box.hide()
        outer.addWidget(self.error_box)

        self.log = QTextBrowser(self)
        self.log.setObjectName("liveLog")
        self.log.setOpenLinks(False)
        self.log.setPlaceholderText(tr("The live session appears here: your messages, the agent's answers and tool calls, and every compaction."))
        self.log.setMinimumHeight(120)
        outer.addWidget(self.log, 1)

        self.chat_row = QWidget(self)
        row = QHBoxLayout(self.chat_row)
        row.setContentsMargins(0, 0, 0, 0)
        self.input = ChatInput(self)
        self.input.setObjectName("chatInput")
        self.input.setPlaceholderText(tr("Message the agent (Enter sends, Shift+Enter for a new line)"))
        self.input.setFixedHeight(56)
        self.input.sigSubmit.connect(self._send)
        row.addWidget(self.input, 1)
        col = QVBoxLayout()
        self.send_btn = QPushButton(tr("Send"), self)
        self.send_btn.setObjectName("sendButton")
        self.send_btn.clicked.connect(self._send)
        self.stop_btn = QPushButton(tr("Stop"), self)
        self.stop_btn.setObjectName("stopButton")
        self.stop_btn.setToolTip(tr("Stop the agent after the current step (Esc)"))
        self.stop_btn.setEnabled(False)
        self.stop_btn.clicked.connect(self._stop)
        col.addWidget(self.send_btn)
        col.addWidget(self.stop_btn)
        row.addLayout(col)
        outer.addWidget(self.chat_row)
        self.tabs.currentChanged.connect(lambda i: self.chat_row.setVisible(i == 0 or self.busy))
        sc = QShortcut(QKeySequence(Qt.Key_Escape), self)
        sc.setContext(Qt.WidgetWithChildrenShortcut)
        sc.activated.connect(self._stop)

        self.status = QLabel(tr("idle"), self)
        self.status.setObjectName("liveStatus")
        self.status.setWordWrap(True)
        outer.addWidget(self.status)
        self._stream_open = False
        self.busy = False
        self.set_status("idle", tr("idle: pick a workspace folder and send a message"))

    # ------------------------------------------------------------ tabs
    def _agent_tab(self) -> QWidget:
        w = QWidget(self)
        f = QFormLayout(w)
        f.setContentsMargins(4, 4, 4, 4)
        self.workdir = self._path_row(f, w, "Workspace", "workdir",
                                      tr("the folder the agent may read, write and run commands in"),
                                      lambda: self._pick_dir(self.workdir))
        self.model_edit = QLineEdit(w)
        self.model_edit.setObjectName("model")
        from compactscope.core.live.agent import DEFAULT_MODEL
        self.model_edit.setPlaceholderText(os.environ.get("COMPACTSCOPE_MODEL") or DEFAULT_MODEL)
        f.addRow(tr("Model"), self.model_edit)
        self.key_edit = QLineEdit(w)
        self.key_edit.setObjectName("apiKey")
        self.key_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_edit.setPlaceholderText(tr("from ANTHROPIC_API_KEY") if os.environ.get("ANTHROPIC_API_KEY")
                                         else tr("ANTHROPIC_API_KEY is not set: type a key (kept for this session only)"))
        self.key_edit.setToolTip(tr("Used for this session only: never saved, never recorded"))
        f.addRow(tr("API key"), self.key_edit)
        self.base_url = QLineEdit(w)
        self.base_url.setObjectName("baseUrl")
        self.base_url.setPlaceholderText(os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com")
        f.addRow(tr("Base URL"), self.base_url)
        self.agent_record = QLineEdit(w)
        self.agent_record.setObjectName("agentRecord")
        self.agent_record.setPlaceholderText(tr("recording file (default: a new one in the user cache)"))
        f.addRow(tr("Record to"), self.agent_record)
        self.new_btn = QPushButton(tr("New session"), w)
        self.new_btn.setObjectName("newSession")
        self.new_btn.setToolTip(tr("Forget the conversation and start again (the recording goes on)"))
        self.new_btn.clicked.connect(lambda: None if self.busy else self.sigNewSession.emit())
        f.addRow("", self.new_btn)
        return w

    def _proxy_tab(self) -> QWidget:
        w = QWidget(self)
        f = QFormLayout(w)
        f.setContentsMargins(4, 4, 4, 4)
        self.port = QSpinBox(w)
        self.port.setObjectName("proxyPort")
        self.port.setRange(0, 65535)
        self.port.setValue(8788)
        f.addRow(tr("Port"), self.port)
        self.upstream = QLineEdit(w)
        self.upstream.setObjectName("upstream")
        self.upstream.setPlaceholderText(tr("https://api.anthropic.com"))
        f.addRow(tr("Upstream"), self.upstream)
        self.proxy_record = QLineEdit(w)
        self.proxy_record.setPlaceholderText(tr("recording file (default: a new one in the user cache)"))
        f.addRow(tr("Record to"), self.proxy_record)
        self.proxy_btn = QPushButton(tr("Start proxy"), w)
        self.proxy_btn.setObjectName("proxyButton")
        self.proxy_btn.setCheckable(True)
        self.proxy_btn.toggled.connect(self._proxy_toggled)
        f.addRow("", self.proxy_btn)
        self.proxy_hint = QLabel(tr("Listens on 127.0.0.1 only. Then run a client against it, e.g.\nANTHROPIC_BASE_URL=http://127.0.0.1:8788 claude"), w)
        self.proxy_hint.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.proxy_hint.setWordWrap(True)
        f.addRow(self.proxy_hint)
        return w

    def _follow_tab(self) -> QWidget:
        w = QWidget(self)
        f = QFormLayout(w)
        f.setContentsMargins(4, 4, 4, 4)
        self.follow_path = self._path_row(f, w, "File", "followPath",
                                          "~/.claude/projects/<project>/<session>.jsonl, or a recording",
                                          self._pick_follow)
        self.follow_btn = QPushButton(tr("Follow"), w)
        self.follow_btn.setObjectName("followButton")
        self.follow_btn.setCheckable(True)
        self.follow_btn.toggled.connect(self._follow_toggled)
        f.addRow("", self.follow_btn)
        return w

    @staticmethod
    def _path_row(form: QFormLayout, w: QWidget, label: str, name: str, placeholder: str, browse) -> QLineEdit:
        """A path field with a Browse button after it, added to ``form``; returns the field."""
        row = QHBoxLayout()
        edit = QLineEdit(w)
        edit.setObjectName(name)
        edit.setPlaceholderText(placeholder)
        row.addWidget(edit, 1)
        b = QPushButton(tr("Browse…"), w)
        b.clicked.connect(browse)
        row.addWidget(b)
        form.addRow(label, row)
        return edit

    def _pick_dir(self, edit: QLineEdit) -> None:
        d = QFileDialog.getExistingDirectory(self, tr("Workspace folder for the agent"), edit.text() or os.getcwd())
        if d:
            edit.setText(d)

    def _pick_follow(self) -> None:
        start = os.path.expanduser("~/.claude/projects")
        p, _ = QFileDialog.getOpenFileName(self, tr("Follow a session file"), start if os.path.isdir(start) else "",
                                           tr("Sessions (*.jsonl);;All files (*)"))
        if p:
            self.follow_path.setText(p)

    # ------------------------------------------------------------ user actions
    def agent_settings(self) -> dict:
        return {"workdir": self.workdir.text().strip(), "model": self.model_edit.text().strip() or None,
                "api_key": self.key_edit.text().strip() or None, "base_url": self.base_url.text().strip() or None,
                "record": self.agent_record.text().strip() or None}

    def _send(self) -> None:
        """Send the typed message (while the agent works, the controller queues it)."""
        text = self.input.toPlainText().strip()
        if not text:
            return
        if not self.workdir.text().strip():
            self.show_error(tr("No workspace folder is chosen."), tr("Pick the folder the agent may work in (Browse…)."))
            return
        self.input.clear()
        self.sigAgentSettings.emit(self.agent_settings())
        self.sigSend.emit(text)

    def _stop(self) -> None:
        if self.busy:
            self.set_status("stopping", tr("stopping after the current step…"))
            self.sigStop.emit()

    def _proxy_toggled(self, on: bool) -> None:
        if on:
            self.proxy_btn.setText(tr("Stop proxy"))
            self.sigStartProxy.emit({"port": self.port.value(), "upstream": self.upstream.text().strip() or None,
                                     "record": self.proxy_record.text().strip() or None})
        else:
            self.proxy_btn.setText(tr("Start proxy"))
            self.sigStopProxy.emit()

    def _follow_toggled(self, on: bool) -> None:
        if on:
            path = os.path.expanduser(self.follow_path.text().strip())
            if not path:
                self.show_error(tr("No file to follow."), tr("Pick a session file (Browse…)."))
                self.set_follow_running(False)
                return
            self.follow_btn.setText(tr("Stop following"))
            self.sigFollow.emit(path)
        else:
            self.follow_btn.setText(tr("Follow"))
            self.sigStopFollow.emit()

    def set_proxy_running(self, on: bool, url: str = "") -> None:
        self.proxy_btn.blockSignals(True)
        self.proxy_btn.setChecked(on)
        self.proxy_btn.setText(tr("Stop proxy") if on else tr("Start proxy"))
        self.proxy_btn.blockSignals(False)
        if on and url:
            self.proxy_hint.setText(tr("Listening on {url} (loopback only). Point a client at it:\nANTHROPIC_BASE_URL={url2} claude").format(url=url, url2=url))

    def set_follow_running(self, on: bool) -> None:
        self.follow_btn.blockSignals(True)
        self.follow_btn.setChecked(on)
        self.follow_btn.setText(tr("Stop following") if on else tr("Follow"))
        self.follow_btn.blockSignals(False)

    # ------------------------------------------------------------ what the controller shows
    def set_busy(self, busy: bool) -> None:
        """A turn is running: Stop is enabled, New session is not (Send queues the message)."""
        self.busy = busy
        self.send_btn.setText(tr("Queue") if busy else tr("Send"))
        self.stop_btn.setEnabled(busy)
        self.new_btn.setEnabled(not busy)

    def set_status(self, state: str, text: str) -> None:
        c = STATE_COLORS.get(state, "#64748b")
        self.state = state
        self.status.setText(f"<span style='color:{c}; font-weight:bold'>\u25cf {html.escape(tr(state))}</span> "
                            f"{html.escape(text)}")

    def show_error(self, what: str, todo: str = "") -> None:
        self.error_box.setText(f"<b>{html.escape(what)}</b>" +
                               ("<br>" + html.escape(tr("What to do: {todo}").format(todo=todo)) if todo else ""))
        self.error_box.show()

    def clear_error(self) -> None:
        self.error_box.hide()
        self.error_box.setText("")

    def _append(self, html_text: str) -> None:
        self._stream_open = False
        self.log.append(html_text)
        self.log.moveCursor(QTextCursor.MoveOperation.End)

    def append_user(self, text: str) -> None:
        c = ROLE_COLORS["user"]
        self._append(f"<p><b style='color:{c}'>you</b>: {html.escape(text)}</p>")

    def append_stream(self, text: str) -> None:
        """Streamed assistant text, appended to the current answer."""
        if not self._stream_open:
            c = ROLE_COLORS["assistant"]
            self.log.append(f"<b style='color:{c}'>agent</b>: ")
            self._stream_open = True
        cur = self.log.textCursor()
        cur.movePosition(QTextCursor.MoveOperation.End)
        cur.insertText(text)
        self.log.moveCursor(QTextCursor.MoveOperation.End)

    def append_response(self, message: dict, streamed: bool = False) -> None:
        texts = [b.get("text", "") for b in message.get("content") or [] if b.get("type") == "text"]
        if texts and not streamed:
            c = ROLE_COLORS["assistant"]
            self._append(f"<p><b style='color:{c}'>agent</b>: {html.escape(' '.join(texts))}</p>")
        self._stream_open = False

    def append_tool(self, name: str, args, output: str, is_error: bool) -> None:
        c = "#dc2626" if is_error else "#059669"
        self._append(f"<p style='margin-left:12px'><code style='color:#ea580c'>{html.escape(name)}</code> "
                     f"<code>{html.escape(_short(args, 160))}</code><br>"
                     f"<span style='color:{c}'>\u2192 {html.escape(_short(output, 240))}</span></p>")

    def append_note(self, text: str, color: str = "#9333ea") -> None:
        self._append(f"<p style='color:{color}'><i>{html.escape(text)}</i></p>")

    def ask_bash(self, command: str) -> str:
        """Modal: run this command? 'once', 'session' or 'deny'."""
        box, once, session = self.bash_box(command)
        box.exec()
        clicked = box.clickedButton()
        return "once" if clicked is once else "session" if clicked is session else "deny"

    def bash_box(self, command: str):
        """The confirmation dialog (not shown): (box, run-once button, allow-for-session button)."""
        box = QMessageBox(self)
        box.setObjectName("bashConfirm")
        box.setIcon(QMessageBox.Icon.Question)
        box.setWindowTitle(tr("Run a shell command?"))
        box.setText(tr("The agent wants to run this command in its workspace folder\n{text}:").format(text=self.workdir.text()))
        box.setInformativeText(command if len(command) < 2000 else command[:2000] + "\u2026")
        once = box.addButton(tr("Run once"), QMessageBox.ButtonRole.AcceptRole)
        session = box.addButton(tr("Allow for this session"), QMessageBox.ButtonRole.YesRole)
        deny = box.addButton(tr("Don't run"), QMessageBox.ButtonRole.RejectRole)
        box.setDefaultButton(deny)
        return box, once, session
