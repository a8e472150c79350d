"""Sharing from the window: File > Export as HTML / Markdown (a report of what is on screen) and
Edit > Copy ... as Markdown (a message, the shown layer's edits, a compaction summary).

The report is ``core.report``'s, built from the session's state (conversation, segment, call, strategy,
parameters, the run and stage on screen, the replay when the timeline has one) in a background worker;
the window only asks for a file name and says where the report went.
"""
from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence
from PySide6.QtWidgets import QFileDialog

from compactscope.core.runtime.jobs import Worker
from compactscope.core.model.messages import message_text
from compactscope.core.report import build_report, session_request, write_report
from compactscope.core.report.markdown import edits_markdown, md, message_markdown, summary_markdown
from compactscope.core.report.model import real_summaries, summary_texts_of_trace
from compactscope.core.session.model import stage_label

from compactscope.app.workers import QtExecutor
from compactscope.widgets.i18n import tr
from PySide6.QtCore import QT_TRANSLATE_NOOP

FILTERS = {"html": QT_TRANSLATE_NOOP("", "HTML report (*.html)"), "md": QT_TRANSLATE_NOOP("", "Markdown (*.md)")}


class Exporter:
    """Builds and writes reports of the window's session in the background; copies Markdown."""

    def __init__(self, win):
        self.win = win
        self.worker = Worker(QtExecutor(), self._done, self._failed, name="export")
        self.last_path: str | None = None      # the last report written (tests, the status bar)
        self.last_text: str = ""                # the last Markdown copied

    # ------------------------------------------------------------ export
    def default_name(self, fmt: str) -> str:
        s = self.win.session
        stem = Path(s.source.path).stem if s.source.path else (s.source.title or "conversation")
        step = f"-stage{s.view.stage}" if s.view.stage else ""
        folder = self.win.settings.value("export/dir", "") or str(Path.home())
        return str(Path(folder) / f"{stem}-{s.setup.strategy.name}{step}.{fmt}")

    def export_dialog(self, fmt: str) -> None:
        if self.win.session.source.conversation is None:
            self.win.show_error(tr("Nothing to export: no conversation is open."), tr("Open a transcript first."))
            return
        path, _ = QFileDialog.getSaveFileName(self.win, tr("Export a {upper} report").format(upper=fmt.upper()), self.default_name(fmt),
                                              tr(FILTERS[fmt]))
        if path:
            self.win.settings.set("export/dir", str(Path(path).parent))
            self.export(path, fmt)

    def export(self, path: str, fmt: str | None = None) -> bool:
        """Start writing a report of what is on screen to ``path`` (html, or md from the name or ``fmt``)."""
        try:
            result, engine, kw = session_request(self.win.session)
        except ValueError as e:
            self.win.show_error(tr("Nothing to export: {e}.").format(e=e), tr("Open a transcript first."))
            return False
        fmt = fmt or ("md" if str(path).lower().endswith((".md", ".markdown")) else "html")
        self.win.statusBar().showMessage(tr("Writing the {upper} report to {path}…").format(upper=fmt.upper(), path=path))
        t0 = time.perf_counter()

        def job(state):
            rep = build_report(result, engine, progress=state.set_progress, **kw)
            write_report(rep, path, fmt)
            return path, fmt, time.perf_counter() - t0
        self.worker.start(job)
        return True

    def _done(self, res) -> None:
        path, fmt, dt = res
        self.last_path = path
        try:
            size = Path(path).stat().st_size
        except OSError:
            size = 0
        self.win.statusBar().showMessage(tr("Exported the {upper} report to {path} ({size:,} bytes, {dt:.1f} s)").format(upper=fmt.upper(), path=path, size=size, dt=dt), 15000)

    def _failed(self, exc: BaseException) -> None:
        what = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        self.win.show_error(tr("The report could not be written: {what}").format(what=what),
                            tr("Choose another file or folder (one you can write to)."))

    # ------------------------------------------------------------ copy as Markdown
    def _copy(self, text: str, what: str) -> bool:
        self.last_text = text
        QGuiApplication.clipboard().setText(text)
        self.win.statusBar().showMessage(tr("Copied {what} as Markdown ({n_text:,} chars)").format(what=what, n_text=len(text)), 5000)
        return True

    def copy_message(self) -> bool:
        s, model = self.win.session, self.win.messages.model
        mi = s.view.selection
        if mi is None or not 0 <= mi < len(model.messages):
            self.win.statusBar().showMessage(tr("Select a message to copy it as Markdown"), 5000)
            return False
        m = model.messages[mi]
        return self._copy(message_markdown(m, s.source.meta_of(m), f"#{mi}"), f"message #{mi}")

    def copy_edits(self) -> bool:
        s = self.win.session
        step = s.view.current_step()
        if step is None:
            trace = s.trace
            if trace is None:
                self.win.statusBar().showMessage(tr("Nothing has run yet"), 5000)
                return False
            text = f"### {md(s.setup.strategy.name)}: every layer\n\n" + "".join(
                f"- **{md(stage_label(s.setup.strategy, st.layer))}** ({md(st.layer)}): {md(st.explain())}\n"
                for st in trace.steps)
            return self._copy(text, "the layers")
        return self._copy(edits_markdown(step, stage_label(s.setup.strategy, step.layer)), f"the edits of {step.layer}")

    def summary(self):
        """The summary to copy: the one the shown layer made, else the selected message if it is a summary,
        else the run's, else the file's last real one."""
        s = self.win.session
        trace = s.trace
        made = summary_texts_of_trace(trace, "run", "simulated in this run") if trace is not None else []
        step = s.view.current_step()
        if step is not None:
            mine = [x for x in made if x.facts.get("layer") == step.layer]
            if mine:
                return mine[0]
        real = real_summaries(s.source.conversation) if s.source.conversation is not None else []
        mi, msgs = s.view.selection, self.win.messages.model.messages
        if mi is not None and 0 <= mi < len(msgs):
            text = message_text(msgs[mi])
            for x in made + real:
                if x.text and x.text == text:
                    return x
        if made:
            return made[-1]
        return next((x for x in reversed(real) if x.text), None)

    def copy_summary(self) -> bool:
        x = self.summary()
        if x is None:
            self.win.statusBar().showMessage(tr("No compaction summary here: no layer made one and the file records none"), 6000)
            return False
        return self._copy(summary_markdown(x), "the summary")


def install(win, file_menu, menubar) -> Exporter:
    """File > Export as HTML / Markdown (before Export as PNG), an Edit menu (called right after the File
    menu is made, it comes second) with the copies, and the same copies in the context menus of the message
    list and the edit list."""
    ex = Exporter(win)
    win.exporter = ex
    acts = []
    for text, fmt, key in ((tr("Export as &HTML\u2026"), "html", "Ctrl+E"), (tr("Export as &Markdown\u2026"), "md",
                                                                             "Ctrl+Shift+E")):
        a = QAction(text, win)
        a.triggered.connect(lambda _=False, fmt=fmt: ex.export_dialog(fmt))
        a.setShortcut(QKeySequence(key))
        a.setToolTip(tr("A self-contained report of what is on screen: every layer, the summaries, the chart"))
        acts.append(a)
    png = next((a for a in file_menu.actions() if a.text().startswith("Export as &PNG")), None)
    for a in acts:
        if png is not None:
            file_menu.insertAction(png, a)
        else:
            file_menu.addAction(a)
    win.export_actions = acts
    em = menubar.addMenu(tr("&Edit"))
    win.edit_menu = em
    copy_msg = em.addAction(tr("Copy Message as &Markdown"), ex.copy_message)
    copy_msg.setShortcut(QKeySequence("Ctrl+Shift+C"))
    copy_edits = em.addAction(tr("Copy &Edits as Markdown"), ex.copy_edits)
    copy_sum = em.addAction(tr("Copy &Summary as Markdown"), ex.copy_summary)
    for view, actions in ((win.messages.view, (copy_msg, copy_sum)), (win.diff_panel.edits, (copy_edits, copy_sum))):
        view.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)
        for a in actions:
            b = QAction(a.text().replace("&", ""), view)
            b.triggered.connect(a.trigger)
            view.addAction(b)
    return ex
