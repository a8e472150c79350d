"""Shared bits of the views: colours, number formatting and a few QColor factories.

What a message's parts are (chips, block sizes, row shapes) comes from ``core.present``.
"""
from __future__ import annotations

from typing import Any

import zlib

from PySide6.QtGui import QColor, QPalette

from compactscope.core.analysis.present import BLOCK_TYPES  # noqa: F401 - the chart's stacking order, with BLOCK_COLORS

ROLE_COLORS = {
    "user": "#3b82f6",
    "assistant": "#f59e0b",
    "system": "#8b5cf6",
    "developer": "#8b5cf6",
    "tool": "#10b981",
}
BLOCK_COLORS = {
    "text": "#64748b",
    "tool_use": "#ea580c",
    "tool_result": "#059669",
    "thinking": "#9333ea",
    "redacted_thinking": "#9333ea",
    "image": "#0891b2",
    "document": "#0891b2",
    "other": "#94a3b8",
}
STATUS_COLORS: dict[str, Any] = {
    "kept": None,
    "changed": "#f59e0b",
    "removed": "#ef4444",
    "inserted": "#22c55e",
    "duplicated": "#a855f7",
    "failed": "#ef4444",
}


def fmt(n) -> str:
    try:
        return f"{int(n):,}"
    except (TypeError, ValueError):
        return str(n)


def color(hexstr: str, alpha: int = 255) -> QColor:
    c = QColor(hexstr)
    c.setAlpha(alpha)
    return c


def pair_color(tool_id: str | None, dark: bool = False) -> QColor:
    """A stable colour for a tool id: both halves of a pair share it."""
    if not tool_id:
        return QColor("#94a3b8")
    h = zlib.crc32(tool_id.encode("utf-8", "replace")) % 360
    c = QColor.fromHsl(h, 170, 120 if dark else 105)
    return c


def is_dark(palette: QPalette) -> bool:
    return palette.color(QPalette.ColorRole.Window).lightness() < 128
