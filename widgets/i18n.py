"""The window's words in the user's language: ``tr(text)`` (Qt's translation system; sources in
assets/i18n/compactscope_zh_CN.ts, compiled to .qm) and ``ct(text)`` for texts made by the Qt-free core
(layer explanations, edits in words, boundaries, findings), translated by ``core.i18n``'s catalogue.

Every ``tr`` call uses one context (the empty one): ``pyside6-lupdate`` files bare ``tr("...")`` calls under it.
Write ``tr("{n} messages").format(n=...)``: never an f-string inside ``tr``.
"""
from __future__ import annotations

from PySide6.QtCore import QCoreApplication

from compactscope.core.i18n import catalog as core_i18n


def tr(text: str, disambiguation: str | None = None) -> str:
    return QCoreApplication.translate("", text, disambiguation)


def ct(text: str) -> str:
    """A core text in the window's language (``core.i18n.translate``)."""
    return core_i18n.translate(text)


def ct_parts(text: str, sep: str = " \u00b7 ") -> str:
    """A core text made of parts joined by ``sep`` (the status line), translated part by part."""
    return sep.join(ct(part) for part in text.split(sep))


def ct_summary(summary: str) -> str:
    """A block's one-line summary (``present`` chips: "651 chars \u00b7 <content>") in the window's language: its
    size translated, the content after it as it is."""
    head, sep, rest = summary.partition(" \u00b7 ")
    return ct(head) + sep + rest if sep and head.endswith(" chars") else summary
