"""The inspector: the full content of the selected message or block, selectable and copyable.

For a persisted tool result it also shows the persisted file's content (the
window passes a ``resolve_persisted(text) -> (path, content) | None``).
"""
from __future__ import annotations

import html
import json

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QGuiApplication, QImage, QPixmap
from PySide6.QtWidgets import (QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QTabWidget, QVBoxLayout,
                               QWidget)

from compactscope.core.analysis import present
from compactscope.core.model.messages import block_type
from compactscope.core.model.describe import meta_lines
from compactscope.core.model.text import readable_message_text, readable_text
from compactscope.widgets.i18n import ct, ct_parts, tr
from compactscope.widgets.search_marks import mark_editor

MAX_SHOWN = 2_000_000


def _clip(s: str) -> str:
    if len(s) <= MAX_SHOWN:
        return s
    return s[:MAX_SHOWN] + "\n\n" + tr("[... {n} more chars not shown; copy the JSON to get all]").format(
        n=f"{len(s) - MAX_SHOWN:,}")


class Inspector(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("inspector")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        top = QHBoxLayout()
        self.title = QLabel(tr("Select a message or a block"), self)
        self.title.setWordWrap(True)
        self.title.setTextInteractionFlags(Qt.TextSelectableByMouse)
        top.addWidget(self.title, 1)
        self.copy_btn = QPushButton(tr("Copy"), self)
        self.copy_btn.setToolTip(tr("Copy the text of the visible tab"))
        self.copy_btn.clicked.connect(self.copy)
        top.addWidget(self.copy_btn)
        lay.addLayout(top)
        self.compaction = QLabel(self)     # a real compaction's summary (or first message after it): what was recorded
        self.compaction.setObjectName("inspectorCompaction")
        self.compaction.setWordWrap(True)
        self.compaction.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.compaction.setStyleSheet("QLabel { background: #fff7ed; color: #9a3412; border-left: 5px solid #ea580c; "
                                      "padding: 4px; }")
        self.compaction.hide()
        lay.addWidget(self.compaction)
        self.image = QLabel(self)          # an image block: its thumbnail, media type, pixel size and tokens
        self.image.setObjectName("inspectorImage")
        self.image.setAlignment(Qt.AlignCenter)
        self.image.hide()
        lay.addWidget(self.image)
        self.tabs = QTabWidget(self)
        lay.addWidget(self.tabs, 1)
        mono = QFont("DejaVu Sans Mono")
        mono.setStyleHint(QFont.Monospace)
        self.text = self._edit(mono)
        self.json = self._edit(mono)
        self.persisted = self._edit(mono)
        self.tabs.addTab(self.text, tr("Text"))
        self.tabs.addTab(self.json, tr("JSON"))
        self.tabs.addTab(self.persisted, tr("Persisted file"))
        self.resolve_persisted = None
        self.current = None
        self.meta_text = ""            # what the file recorded about the shown message (time, usage, where)
        self._json_obj = None          # the JSON tab is filled when it is shown (a big dump per click is waste)
        self.search_text = ""          # the message list's search: marked in every tab
        self.tabs.currentChanged.connect(lambda _i: self._fill_json())

    def _edit(self, font) -> QPlainTextEdit:
        e = QPlainTextEdit(self)
        e.setReadOnly(True)
        e.setFont(font)
        e.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        return e

    def set_search(self, text: str) -> None:
        """Mark every match of ``text`` in the three tabs (the first one of the shown tab scrolled into sight)."""
        if text == self.search_text:
            return
        self.search_text = text
        self._mark()

    def _mark(self) -> None:
        for e in (self.text, self.json, self.persisted):
            if e.document().isEmpty() and not e.extraSelections():
                continue
            mark_editor(e, self.search_text, scroll=True)

    def clear(self) -> None:
        self.title.setText(tr("Select a message or a block"))
        self.compaction.hide()
        self.compaction.clear()
        self.image.hide()
        self.image.clear()
        self.meta_text = ""
        for e in (self.text, self.json, self.persisted):
            e.setPlainText("")
        self.current = None
        self._json_obj = None

    def show_message(self, mi: int, m, block: int | None = None, where: str = "", meta=None,
                     compaction=None) -> None:
        """Show message ``mi`` (or one of its blocks); ``meta`` (its MessageMeta) adds what the file recorded:
        time, model, the usage of its call, the file and line; ``compaction`` (``Session.compaction_of``): the
        real compaction whose summary this message is, or that it is the first message after."""
        self.current = (mi, block)
        self._show_compaction(compaction)
        obj = m
        label = tr("message #{n}").format(n=mi)
        if block is not None and isinstance(m, dict) and isinstance(m.get("content"), list) \
                and 0 <= block < len(m["content"]):
            obj = m["content"][block]
            label += tr(", block {n} ({type})").format(n=block, type=block_type(obj))
        role = m.get("role", "?") if isinstance(m, dict) else "?"
        facts = meta_lines(meta)
        self.title.setText(f"<b>{label}</b> \u00b7 {html.escape(str(role))} \u00b7 "
                           + tr("{n} chars").format(n=f"{present.chars.get(m) if obj is m else present.block_chars(obj):,}")
                           + f" {html.escape(ct(where))}" + "".join(f"<br>{html.escape(ct(f))}" for f in facts))
        self.meta_text = "\n".join(facts)
        if isinstance(obj, dict) and "role" in obj:
            text = readable_message_text(obj)
        elif isinstance(obj, dict):
            t = block_type(obj)
            if t == "tool_use":
                text = f"{obj.get('name')} (id {obj.get('id')})\n" + json.dumps(obj.get("input"), indent=2,
                                                                               ensure_ascii=False, default=str)
            elif t == "tool_result":
                text = (tr("result of {id}").format(id=obj.get('tool_use_id')) + (" (is_error)" if obj.get("is_error") else "")
                        + "\n" + readable_text(obj.get("content")))
            else:
                text = readable_text([obj]) or json.dumps(obj, indent=2, ensure_ascii=False, default=str)
        else:
            text = str(obj)
        self._show_image(obj)
        if isinstance(obj, dict) and block_type(obj) == "image":
            from compactscope.core.model.images import info
            img = info(obj)
            text = f"{img.describe()}\n{img.rule}"
        self.text.setPlainText(_clip(text))
        self._json_obj = (obj,)
        self.json.clear()
        self._fill_json()
        persisted = None
        if self.resolve_persisted is not None:
            persisted = self.resolve_persisted(str(obj))
        if persisted:
            path, content = persisted
            self.persisted.setPlainText(_clip(f"{path}\n{'=' * 40}\n{content}"))
            self.tabs.setTabText(2, tr("Persisted file ✓"))
        else:
            self.persisted.setPlainText(tr("This block was not persisted to a file."))
            self.tabs.setTabText(2, tr("Persisted file"))
        if self.search_text:
            self._mark()

    def _show_compaction(self, found) -> None:
        """``found``: ``(Mark, "summary" | "first")`` or None."""
        if not found:
            self.compaction.hide()
            self.compaction.clear()
            return
        mark, role = found
        what = (tr("This message is the summary written at this real compaction ({badge}).")
                .format(badge=ct(mark.badge)) if role == "summary" else
                tr("This is the first message of the context after this real compaction."))
        lines = [f"<b>{html.escape(ct_parts(mark.text))}</b>", html.escape(what)]
        if mark.where:
            lines.append(html.escape(tr("recorded at {where}").format(where=mark.where)))
        self.compaction.setText("<br>".join(lines))
        self.compaction.show()

    THUMB = 240

    def _show_image(self, obj) -> None:
        """A thumbnail of an image block (base64 data), or of a message's first image, or nothing."""
        if isinstance(obj, dict) and "role" in obj:
            from compactscope.core.model.images import images_in
            found = images_in(obj)
            obj = found[0] if found else None
        if not (isinstance(obj, dict) and block_type(obj) == "image"):
            self.image.hide()
            self.image.clear()
            return
        import base64
        import binascii
        src = obj.get("source") if isinstance(obj.get("source"), dict) else {}
        pix = QPixmap()
        if src.get("type") == "base64" and isinstance(src.get("data"), str):
            try:
                im = QImage.fromData(base64.b64decode(src["data"], validate=False))
            except (binascii.Error, ValueError):
                im = QImage()
            if not im.isNull():
                if im.width() > self.THUMB or im.height() > self.THUMB:     # shrink, never enlarge
                    im = im.scaled(self.THUMB, self.THUMB, Qt.AspectRatioMode.KeepAspectRatio, Qt.TransformationMode.SmoothTransformation)
                pix = QPixmap.fromImage(im)
                from compactscope.core.model.images import info
                self.image.setToolTip(info(obj).describe())
        if pix.isNull():
            self.image.setText(tr("(no picture: a URL or file source)") if src.get("type") != "base64"
                               else tr("(no picture: the data is not a readable image)"))
        else:
            self.image.setPixmap(pix)
        self.image.show()

    def _fill_json(self) -> None:
        if self._json_obj is not None and self.tabs.currentWidget() is self.json:
            (obj,) = self._json_obj
            self._json_obj = None
            self.json.setPlainText(_clip(json.dumps(obj, indent=2, ensure_ascii=False, default=str)))
            if self.search_text:
                mark_editor(self.json, self.search_text)

    def visible_text(self) -> str:
        return self.tabs.currentWidget().toPlainText()

    def copy(self) -> None:
        w = self.tabs.currentWidget()
        cur = w.textCursor()
        QGuiApplication.clipboard().setText(cur.selectedText().replace("\u2029", "\n") if cur.hasSelection()
                                            else w.toPlainText())
