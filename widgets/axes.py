"""Axes that read at a glance: every tick of every chart says "155k", "1.3M", never "155000" or "1.5e+06".

``short_number(v, spacing)`` is the one formatter (the value labels over the points use it too);
``ShortAxis`` is a pyqtgraph axis that uses it and never shows pyqtgraph's "(x1e+06)" scale; ``IndexAxis``
counts things (messages, model calls): ticks at whole numbers only, within ``0 .. count - 1`` when a count is
set, spaced so that every label has room for its widest number.
"""
from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtGui import QFont, QFontMetricsF

_UNITS = ((1e9, "B"), (1e6, "M"), (1e3, "k"))


def short_number(v: float, spacing: float | None = None, like: float | None = None) -> str:
    """``v`` with a k / M / B suffix from 1,000 on ("950", "1.5k", "155k", "1.3M"). With ``spacing`` (the
    distance between neighbouring ticks) as many decimals as tell neighbouring ticks apart, and no more;
    without it, three digits at most ("1.3M", "155k", "2.5k"). ``like``: the suffix of that value (one suffix
    along an axis: "0.5M", "1M", not "500k", "1M")."""
    v = float(v)
    if not math.isfinite(v):
        return ""
    a = abs(v if like is None else like)
    div, suffix = next(((d, s) for d, s in _UNITS if a >= d * 0.9995), (1.0, ""))
    x = v / div
    if spacing is not None and spacing > 0:
        step = spacing / div
        decimals = next((d for d in range(3) if abs(round(step, d) - step) <= step * 1e-6), 3)
    else:
        decimals = 0 if abs(x) >= 10 or not suffix else 1
    text = f"{x:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    if text in ("-0", "0", ""):
        return "0"
    return text + suffix


class ShortAxis(pg.AxisItem):
    """Tick labels by ``short_number`` (no "x1e+06" scale, no scientific notation)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.enableAutoSIPrefix(False)

    def tickStrings(self, values, scale, spacing):
        top = max((abs(v * scale) for v in values), default=0.0)
        return [short_number(v * scale, spacing * scale, like=top) for v in values]


class IndexAxis(ShortAxis):
    """An axis of whole things (message indices, model calls): one level of ticks at whole numbers, spaced 1, 2,
    5 x 10^k so that every label has room for its widest number in the axis's own font (never run together as
    "1011"); with ``set_count(n)`` no tick outside ``0 .. n - 1`` (6 messages: ticks 0 to 5, not 0 to 9)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.count: int | None = None

    def set_count(self, n: int | None) -> None:
        if n != self.count:
            self.count = n
            self.picture = None
            self.update()

    def tickSpacing(self, minVal, maxVal, size):
        if size <= 0 or maxVal <= minVal:
            return super().tickSpacing(minVal, maxVal, size)
        fm = QFontMetricsF(self.style.get("tickFont") or QFont())
        widest = max(fm.horizontalAdvance(short_number(v, 1)) for v in (minVal, maxVal, -1 if minVal < 0 else 0))
        room = size / max(widest * 1.8 + 6, 1.0)              # how many labels fit side by side
        need = (maxVal - minVal) / max(room, 1.0)
        spacing = next(m * 10 ** k for k in range(0, 12) for m in (1, 2, 5) if m * 10 ** k >= need)
        return [(float(spacing), 0.0)]

    def tickValues(self, minVal, maxVal, size):
        levels = super().tickValues(minVal, maxVal, size)
        hi = math.inf if self.count is None else self.count - 1
        return [(spacing, [v for v in values if 0 <= round(v) <= hi and abs(v - round(v)) < 1e-6])
                for spacing, values in levels]

    def tickStrings(self, values, scale, spacing):
        step = spacing * scale
        return [short_number(round(v * scale), step) if step >= 100 else str(int(round(v * scale)))
                for v in values]


def axis_title(plot, side: str, text: str, pt: float | None = None) -> None:
    """An axis title in the axis's own text colour (pyqtgraph drops its default colour once a style is given:
    a title in black on the timeline's black plot) and, with ``pt``, that type size."""
    ax = plot.getAxis(side)
    style = {"color": ax.textPen().color().name()}
    if pt is not None:
        style["font-size"] = f"{pt:.1f}pt"
    plot.setLabel(side, text, **style)
