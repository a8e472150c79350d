"""Panels that put a step into words: the edit list, the findings, and the snip boundary explainer."""
from __future__ import annotations

import html
import os

from PySide6.QtCore import QTimer, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QListWidget, QListWidgetItem, QTextBrowser

from compactscope.core.analysis.explain import boundary_explanation, is_snip_step, snip_rows, variant_rows

from compactscope.widgets.common import fmt
from compactscope.widgets.i18n import ct, tr

EDIT_ICONS = {"snip": "\u2702", "replace": "\u21c4", "persist": "\u2193", "summary": "\u03a3",
              "boundary": "\u2194", "insert": "+", "drop": "\u2212", "convert": "\u21bb", "note": "\u2139"}


SOURCE_ROLE = Qt.ItemDataRole.UserRole + 1  # the English text a row says (what a lesson's focus matches in any language)
FOCUS_ANCHOR = "<a name='focus'></a>"
FOCUS_COLOR = "#fef08a"     # a lesson's focus: the rows it talks about
MAX_EDIT_ROWS = 300    # a layer with thousands of edits lists the first ones; the diff marks them all

class EditList(QListWidget):
    """The current layer's edits in words; clicking one emits the rows it concerns."""
    sigEditClicked = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("editList")
        self.setWordWrap(True)
        self.setAlternatingRowColors(True)
        self.itemClicked.connect(lambda it: self.sigEditClicked.emit(it.data(Qt.UserRole))
                                 if it.data(Qt.UserRole) is not None else None)

    def set_step(self, step, stage_label: str = "", overview: list | None = None, lost: list | None = None) -> None:
        """One step's edits; with ``step=None`` the whole pipeline at a glance: [(label, status, explain)].
        ``lost``: ``core.explain.LostResult``s of this step, each said in red under its edit."""
        self.clear()
        if step is None:
            self.addItem(tr("Original: the conversation as loaded. Step right (\u2192) to see what each layer does:"))
            for label, status, text in overview or []:
                mark = {"changed": "\u25cf", "failed": "\u2716"}.get(status, "\u25cb")
                it = QListWidgetItem(f"{mark} {ct(label)}: {ct(text)}")
                it.setForeground(QColor({"changed": "#b45309", "failed": "#dc2626"}.get(status, "#64748b")))
                self.addItem(it)
            return
        head = QListWidgetItem(f"{ct(stage_label or step.layer)}: {ct(step.explain())}")
        head.setData(SOURCE_ROLE, step.explain())
        f = head.font()
        f.setBold(True)
        head.setFont(f)
        if step.error:
            head.setForeground(QColor("#dc2626"))
        self.addItem(head)
        if step.description:
            it = QListWidgetItem(tr("what it does: {description}").format(description=ct(step.description)))
            it.setForeground(QColor("#64748b"))
            self.addItem(it)
        if step.summary and step.summary.get("summarizer"):
            s = step.summary
            self.addItem(tr("summary written by {who}").format(who=s.get("summarizer"))
                         + (tr(" (cached)") if s.get("cached") else "")
                         + (tr(", model {model}").format(model=s["model"]) if s.get("model") else "")
                         + tr(", summary text {chars} chars").format(chars=fmt(s.get("chars", 0))))
        lost_at = {x.edit: x for x in lost or []}
        for x in lost or []:
            if x.edit >= MAX_EDIT_ROWS:
                lost_at.setdefault(MAX_EDIT_ROWS - 1, x)
        for k, e in enumerate(step.edits[:MAX_EDIT_ROWS]):
            it = QListWidgetItem(EDIT_ICONS.get(e.kind, "\u2022") + " " + ct(e.text))
            it.setData(Qt.ItemDataRole.UserRole, k)
            it.setData(SOURCE_ROLE, e.text)
            if e.kind == "note":
                it.setForeground(QColor("#64748b"))
            self.addItem(it)
            if k in lost_at:
                warn = QListWidgetItem("\u26a0 " + ct(lost_at[k].text))
                warn.setData(Qt.ItemDataRole.UserRole, k)
                warn.setData(SOURCE_ROLE, lost_at[k].text)
                warn.setForeground(QColor("#dc2626"))
                f = warn.font()
                f.setBold(True)
                warn.setFont(f)
                self.addItem(warn)
        if len(step.edits) > MAX_EDIT_ROWS:
            more = QListWidgetItem(tr("… {n_edits} more edits: every one is marked in the before/after table and the message list").format(n_edits=fmt(len(step.edits) - MAX_EDIT_ROWS)))
            more.setForeground(QColor("#64748b"))
            self.addItem(more)
        if not step.edits and not step.changed:
            self.addItem(tr("no edits: this layer changed nothing"))
        self.addItem(tr("size {a} \u2192 {b} chars, tokens {ta} \u2192 {tb}; {na} \u2192 {nb} messages; took {ms:.1f} ms")
                     .format(a=fmt(step.size_before), b=fmt(step.size_after), ta=fmt(step.tokens_before),
                             tb=fmt(step.tokens_after), na=len(step.input), nb=len(step.messages),
                             ms=step.seconds * 1000))
        self._highlight()


    def set_focus(self, text: str) -> None:
        """Highlight the rows that contain ``text`` (a lesson's focus; "" for none)."""
        self.focus = text or ""
        self._highlight()

    def _highlight(self) -> None:
        focus = getattr(self, "focus", "")
        for i in range(self.count()):
            it = self.item(i)
            on = bool(focus) and (focus in it.text() or focus in str(it.data(SOURCE_ROLE) or ""))
            it.setBackground(QColor(FOCUS_COLOR) if on else QColor(0, 0, 0, 0))

    def add_note(self, text: str, color: str = "#64748b") -> None:
        """A line appended after the step's edits (e.g. the hermes-agent cross-check verdict)."""
        it = QListWidgetItem(text)
        it.setForeground(QColor(color))
        it.setToolTip(text)
        self.addItem(it)
        self._highlight()


MAX_PROBLEMS_SHOWN = 300


class FindingsPanel(QListWidget):
    """API-validity findings of the current stage; clicking one selects its message. Under them, what the
    load of the file skipped or made valid (its problems, each with its line), for as long as it is open."""
    sigMessageClicked = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("findingsPanel")
        self.setWordWrap(True)
        self.itemClicked.connect(lambda it: self.sigMessageClicked.emit(it.data(Qt.UserRole))
                                 if it.data(Qt.UserRole) is not None else None)

    def set_findings(self, findings: list, where: str = "", problems=()) -> None:
        self.clear()
        if not findings:
            it = QListWidgetItem(tr("✔ no findings {where}: the API would accept this list").format(where=where))
            it.setForeground(QColor("#16a34a"))
            self.addItem(it)
            self._problems(problems)
            return
        errors = sum(1 for f in findings if f.severity == "error")
        it = QListWidgetItem(tr("{n} finding(s) {where}").format(n=len(findings), where=where) +
                             (tr(", {errors} error(s): the API would reject this list").format(errors=errors)
                              if errors else ""))
        it.setForeground(QColor("#dc2626" if errors else "#b45309"))
        self.addItem(it)
        for f in findings:
            it = QListWidgetItem(f"\u26a0 {ct(str(f))}")
            it.setData(Qt.ItemDataRole.UserRole, f.message)
            it.setForeground(QColor("#dc2626" if f.severity == "error" else "#b45309"))
            self.addItem(it)
        self._problems(problems)

    def _problems(self, problems) -> None:
        problems = list(problems or ())
        if not problems:
            return
        it = QListWidgetItem(tr("{n} problem(s) while loading the file (lines skipped, values made valid):")
                             .format(n=len(problems)))
        it.setForeground(QColor("#475569"))
        self.addItem(it)
        for p in problems[:MAX_PROBLEMS_SHOWN]:
            name = os.path.basename(str(getattr(p, "path", "")) or "")
            line = getattr(p, "line", 0)
            where = f"{name}:{line}" if line else name
            it = QListWidgetItem(f"  {where}: {ct(str(getattr(p, 'text', p)))}")
            it.setToolTip(ct(str(p)))
            it.setForeground(QColor("#dc2626" if getattr(p, "severity", "") == "error" else "#64748b"))
            self.addItem(it)
        if len(problems) > MAX_PROBLEMS_SHOWN:
            it = QListWidgetItem(tr("… and {n} more (compactscope info FILE lists them all)")
                                 .format(n=len(problems) - MAX_PROBLEMS_SHOWN))
            it.setForeground(QColor("#64748b"))
            self.addItem(it)


def boundary_lines(step) -> list[str]:
    """The snip boundaries before and after each guard, each move with its reason (plain text)."""
    return [t for _, t in snip_rows(step)]


ROW_COLORS = {"move": "", "rule": "#475569", "anchor": "#0f766e", "result": "#1d4ed8", "note": "#64748b",
              "error": "#dc2626"}


class SnipExplainer(QTextBrowser):
    """Why the boundary landed where it did, beside the same step of a variant run (s08: the
    README's unguarded snip), and the strategy's cross-check verdict when it has one."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("snipExplainer")
        self.setOpenLinks(False)
        self.oracle = None
        self.explanation = None
        self.focus = ""
        self._cols: list = []
        self._html = None
        self.set_steps(None, None)

    def set_oracle(self, verdict) -> None:
        """A cross-check ``Verdict`` shown under head/middle/tail boundaries (None hides it)."""
        self.oracle = verdict
        if getattr(self, "_html", None) is not None:
            self._render()

    def set_focus(self, text: str) -> None:
        """Highlight the rows that contain ``text`` (a lesson's focus; "" for none)."""
        if (text or "") != self.focus:
            self.focus = text or ""
            if self._html is not None:
                self._rebuild()
                self._render()

    def _li(self, t: str, color: str = "") -> str:
        style = (f"color:{color};" if color else "") + \
            (f"background:{FOCUS_COLOR};" if self.focus and self.focus in t else "")
        t = ct(t)
        mark = FOCUS_ANCHOR if FOCUS_COLOR in style else ""
        return f"<li style='{style}'>{mark}{html.escape(t)}</li>" if style else f"<li>{html.escape(t)}</li>"

    def _rebuild(self) -> None:
        if getattr(self, "_cols", None):
            self._html = self._snip_html()
        elif self.explanation is not None:
            self._html = self._other_html()

    def _other_html(self) -> str:
        ex = self.explanation
        items = "".join(self._li(t, ROW_COLORS.get(k, "")) for k, t in ex.rows)
        tail = ""
        if ex.cuts:
            tail = ("<p style='color:#64748b'>" + tr("Red lines in the message list mark compress_start and "
                                                     "compress_end: what lies between them is replaced by one summary.")
                    + "</p>")
        return f"<h3>{html.escape(ct(ex.title))}</h3><ul>{items}</ul>{tail}"

    def _render(self) -> None:
        extra = ""
        v = self.oracle
        if v is not None and self.explanation is not None and self.explanation.cuts:
            label = tr("cross-check:")
            extra = (f"<p style='color:{'#16a34a' if v.ok else '#b45309'}'><b>{label}</b> "
                     f"{html.escape(ct(v.text))}</p>")
        self.setHtml(self._html + extra)
        if FOCUS_ANCHOR in self._html:
            self._scroll_to_focus()

    def _scroll_to_focus(self) -> None:
        """A lesson's focus in sight: the first highlighted row at the top of the pane (a projector shows few)."""
        self.scrollToAnchor("focus")
        QTimer.singleShot(0, lambda: self.scrollToAnchor("focus") if FOCUS_ANCHOR in (self._html or "") else None)

    def showEvent(self, e) -> None:
        super().showEvent(e)
        if self._html and FOCUS_ANCHOR in self._html:
            self._scroll_to_focus()

    def _snip_html(self) -> str:
        """The course code's column beside the variant's (stacked one under the other when the pane is too
        narrow for two columns of words), then where they differ."""
        cells = []
        for title, lines, st in self._cols:
            body = "".join(self._li(line) for line in lines)
            broken = [f for f in (st.findings or []) if f.code in ("orphan_tool_result", "unanswered_tool_use")]
            if broken:
                broken_title = tr("broken tool pairs after this cut:")
                body += (f"<li style='color:#dc2626'><b>{broken_title}</b><ul>" +
                         "".join(f"<li>{html.escape(ct(str(f)))}</li>" for f in broken[:12]) + "</ul></li>")
            elif st is not None and not st.error:
                body += "<li style='color:#16a34a'>" + tr("every tool_use still has its tool_result") + "</li>"
            cells.append((title, body))
        diff = "".join(f"<p style='color:{'#b45309' if k == 'differ' else '#475569'};"
                       f"{f'background:{FOCUS_COLOR};' if self.focus and self.focus in t else ''}'>"
                       f"{FOCUS_ANCHOR if self.focus and self.focus in t else ''}"
                       f"{'<b>' if k == 'differ' else ''}{html.escape(ct(t))}{'</b>' if k == 'differ' else ''}</p>"
                       for k, t in self.difference)
        if self._variant_error:
            diff += f"<p style='color:#dc2626'>{html.escape(ct(self._variant_error))}</p>"
        if self.stacked():
            body = "".join(f"<h4>{html.escape(ct(t))}</h4><ul>{b}</ul>" for t, b in cells)
        else:
            body = ("<table width='100%' cellspacing='6'><tr>" + "".join(
                f"<td valign='top' width='{100 // len(cells)}%'><h4>{html.escape(ct(t))}</h4><ul>{b}</ul></td>"
                for t, b in cells) + "</tr></table>")
        return ("<h3>" + tr("Snip boundary: where the cut landed and why") + "</h3>" + body + diff +
                "<p style='color:#64748b'>" + tr("Red lines in the message list mark the head and tail cuts; dashed "
                                                 "lines mark where they started before the guards moved them.")
                + "</p>")

    def stacked(self) -> bool:
        """Two columns need about 70 average characters of width; narrower panes stack them."""
        return len(getattr(self, "_cols", ())) > 1 and \
            self.viewport().width() < 70 * max(1, self.fontMetrics().averageCharWidth())

    def resizeEvent(self, e) -> None:
        super().resizeEvent(e)
        cols = getattr(self, "_cols", None)
        if cols and len(cols) > 1 and getattr(self, "_stacked", None) != self.stacked():
            self._stacked = self.stacked()
            self._html = self._snip_html()
            self._render()

    def set_steps(self, step, variant=None, strategy: str = "") -> None:
        """``step``: the step to explain; ``variant``: a ``core.pipeline.VariantRun`` whose step of the
        same role is shown beside it (its ``error`` when it could not run)."""
        ex = self.explanation = boundary_explanation(step, strategy)
        self.lines_guarded = ex.texts()
        vstep = variant.step if variant is not None else None
        if not is_snip_step(step):
            self.lines_variant = []
            self._cols = []
            self.difference: list = []
            self._html = self._other_html()
            self._render()
            return
        self.lines_variant = boundary_lines(vstep) if is_snip_step(vstep) else []
        self.difference = variant_rows(step, vstep) if vstep is not None else []
        self._cols = [(tr("guarded (the course code)"), self.lines_guarded, step)]
        if vstep is not None:
            self._cols.append((variant.variant.title, self.lines_variant or [vstep.explain()], vstep))
        self._variant_error = variant.error if variant is not None else None
        self._html = self._snip_html()
        self._render()
