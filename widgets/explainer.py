"""Panels that put a step into words: the edit list, the findings, and the snip boundary explainer."""
from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QListWidget, QListWidgetItem, QTextBrowser

from .common import fmt

EDIT_ICONS = {"snip": "\u2702", "replace": "\u21c4", "persist": "\u2193", "summary": "\u03a3",
              "boundary": "\u2194", "insert": "+", "drop": "\u2212", "convert": "\u21bb", "note": "\u2139"}


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

    def set_step(self, step, stage_label: str = "", overview: list | None = None) -> None:
        """One step's edits; with ``step=None`` the whole pipeline at a glance: [(label, status, explain)]."""
        self.clear()
        if step is None:
            self.addItem("Original: the conversation as loaded. Step right (\u2192) to see what each layer does:")
            for label, status, text in overview or []:
                mark = {"changed": "\u25cf", "failed": "\u2716"}.get(status, "\u25cb")
                it = QListWidgetItem(f"{mark} {label}: {text}")
                it.setForeground(QColor({"changed": "#b45309", "failed": "#dc2626"}.get(status, "#64748b")))
                self.addItem(it)
            return
        head = QListWidgetItem(f"{stage_label or step.layer}: {step.explain()}")
        f = head.font()
        f.setBold(True)
        head.setFont(f)
        if step.error:
            head.setForeground(QColor("#dc2626"))
        self.addItem(head)
        if step.description:
            it = QListWidgetItem(f"what it does: {step.description}")
            it.setForeground(QColor("#64748b"))
            self.addItem(it)
        if step.summary and step.summary.get("summarizer"):
            s = step.summary
            self.addItem(f"summary written by {s.get('summarizer')}" + (" (cached)" if s.get("cached") else "")
                         + (f", model {s['model']}" if s.get("model") else "") + f", {fmt(s.get('chars', 0))} chars")
        for k, e in enumerate(step.edits):
            it = QListWidgetItem(EDIT_ICONS.get(e.kind, "\u2022") + " " + e.text)
            it.setData(Qt.UserRole, k)
            if e.kind == "note":
                it.setForeground(QColor("#64748b"))
            self.addItem(it)
        if not step.edits and not step.changed:
            self.addItem("no edits: this layer changed nothing")
        self.addItem(f"size {fmt(step.size_before)} \u2192 {fmt(step.size_after)} chars, tokens "
                     f"{fmt(step.tokens_before)} \u2192 {fmt(step.tokens_after)}; "
                     f"{len(step.input)} \u2192 {len(step.messages)} messages; took {step.seconds * 1000:.1f} ms")


class FindingsPanel(QListWidget):
    """API-validity findings of the current stage; clicking one selects its message."""
    sigMessageClicked = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("findingsPanel")
        self.setWordWrap(True)
        self.itemClicked.connect(lambda it: self.sigMessageClicked.emit(it.data(Qt.UserRole))
                                 if it.data(Qt.UserRole) is not None else None)

    def set_findings(self, findings: list, where: str = "") -> None:
        self.clear()
        if not findings:
            it = QListWidgetItem(f"\u2714 no findings {where}: the API would accept this list")
            it.setForeground(QColor("#16a34a"))
            self.addItem(it)
            return
        errors = sum(1 for f in findings if f.severity == "error")
        it = QListWidgetItem(f"{len(findings)} finding(s) {where}" +
                             (f", {errors} error(s): the API would reject this list" if errors else ""))
        it.setForeground(QColor("#dc2626" if errors else "#b45309"))
        self.addItem(it)
        for f in findings:
            it = QListWidgetItem(f"\u26a0 {f}")
            it.setData(Qt.UserRole, f.message)
            it.setForeground(QColor("#dc2626" if f.severity == "error" else "#b45309"))
            self.addItem(it)


SNIP_VARS = ("head_end_initial", "tail_start_initial")


def is_snip_step(step) -> bool:
    return step is not None and all(k in (step.vars or {}) for k in SNIP_VARS)


def boundary_lines(step) -> list[str]:
    """The snip boundaries before and after each guard, each move with its reason (plain text)."""
    v = step.vars
    n = v.get("messages", len(step.input))
    out = [f"{n} messages > max_messages {v.get('max_messages')}: keep_head {v.get('keep_head')}, "
           f"keep_tail {v.get('keep_tail')} (= max_messages \u2212 keep_head)"]
    moves = {e.var: e for e in step.edits if e.kind == "boundary" and e.var}
    notes = [e for e in step.edits if e.kind == "note" and ("head_end" in e.text or "tail_start" in e.text)]
    he0, he1 = v.get("head_end_initial"), v.get("head_end_after_guard", v.get("head_end"))
    ts0, ts1 = v.get("tail_start_initial"), v.get("tail_start_after_guard", v.get("tail_start"))
    def why(var):
        e = moves.get(var)
        if e is None:
            return " (the guard did not move it)"
        return ", because " + (e.text.split(": ", 1)[1] if ": " in e.text else e.text)
    out.append(f"head_end starts at keep_head = {he0}; after the head guard: {he1}{why('head_end')}")
    out.append(f"tail_start starts at n \u2212 keep_tail = {ts0}; after the tail guard: {ts1}{why('tail_start')}")
    for e in notes:
        out.append(f"note: {e.text}")
    if "snipped" in v:
        s = v["snipped"]
        if s > 0:
            out.append(f"kept messages 0..{he1 - 1} (head) and {ts1}..{n - 1} (tail); snipped {s}: {he1}..{ts1 - 1}")
        elif s < 0:
            out.append(f"head_end {he1} > tail_start {ts1}: snipped {s}, messages {ts1}..{he1 - 1} appear twice")
        else:
            out.append("nothing snipped")
    if step.error:
        out.append(f"error: {step.error}")
    return out


class SnipExplainer(QTextBrowser):
    """Why the snip boundary landed where it did, guarded beside the README variant."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("snipExplainer")
        self.setOpenLinks(False)
        self.set_steps(None, None)

    def set_steps(self, step, readme_step=None, readme_error: str | None = None) -> None:
        if not is_snip_step(step):
            why = html.escape(step.explain()) if step is not None else "no snip layer ran"
            extra = ""
            if step is not None and step.vars:
                extra = "<br>".join(f"{html.escape(str(k))} = {html.escape(str(val))}" for k, val in step.vars.items())
            self.setHtml(f"<h3>Snip boundary</h3><p>The snip layer did not cut: {why}</p>"
                         f"<p style='color:#64748b'>{extra}</p>")
            self.lines_guarded, self.lines_readme = [], []
            return
        self.lines_guarded = boundary_lines(step)
        self.lines_readme = boundary_lines(readme_step) if is_snip_step(readme_step) else []
        cols = [("guarded (the course code)", self.lines_guarded, step)]
        if readme_step is not None:
            cols.append(("README variant (no guards)", self.lines_readme or [readme_step.explain()], readme_step))
        cells = []
        for title, lines, st in cols:
            body = "".join(f"<li>{html.escape(l)}</li>" for l in lines)
            broken = [f for f in (st.findings or []) if f.code in ("orphan_tool_result", "unanswered_tool_use")]
            if broken:
                body += ("<li style='color:#dc2626'><b>broken tool pairs after this cut:</b><ul>" +
                         "".join(f"<li>{html.escape(str(f))}</li>" for f in broken[:12]) + "</ul></li>")
            elif st is not None:
                body += "<li style='color:#16a34a'>every tool_use still has its tool_result</li>"
            cells.append(f"<td valign='top' width='50%'><h4>{html.escape(title)}</h4><ul>{body}</ul></td>")
        if readme_step is not None and self.lines_readme == self.lines_guarded:
            cells.append("</tr><tr><td colspan='2' style='color:#475569'>Here both variants cut at the same place: "
                         "the README code differs only when the guards push head_end past tail_start (it then "
                         "duplicates messages) or when the cut falls at the list's ends (IndexError).</td>")
        if readme_error:
            cells.append(f"<td valign='top'><p style='color:#dc2626'>{html.escape(readme_error)}</p></td>")
        self.setHtml("<h3>Snip boundary: where the cut landed and why</h3>"
                     "<table width='100%' cellspacing='6'><tr>" + "".join(cells) + "</tr></table>"
                     "<p style='color:#64748b'>Red lines in the message list mark the head and tail cuts; dashed "
                     "lines mark where they started before the guards moved them.</p>")
