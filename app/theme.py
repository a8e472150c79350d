"""The window's look: the light and dark palettes, and the zoom (font size) of every view."""
from __future__ import annotations

from PySide6.QtGui import QColor, QFont, QPalette
from PySide6.QtWidgets import QApplication

DARK = {QPalette.ColorRole.Window: "#1f2430", QPalette.ColorRole.WindowText: "#e5e7eb", QPalette.ColorRole.Base: "#161a22",
        QPalette.ColorRole.AlternateBase: "#222834", QPalette.ColorRole.ToolTipBase: "#111827", QPalette.ColorRole.ToolTipText: "#e5e7eb",
        QPalette.ColorRole.Text: "#e5e7eb", QPalette.ColorRole.Button: "#2a3140", QPalette.ColorRole.ButtonText: "#e5e7eb",
        QPalette.ColorRole.BrightText: "#ffffff", QPalette.ColorRole.Highlight: "#3b82f6", QPalette.ColorRole.HighlightedText: "#ffffff",
        QPalette.ColorRole.Link: "#60a5fa", QPalette.ColorRole.PlaceholderText: "#9ca3af"}


def light_palette() -> QPalette:
    app = QApplication.instance()
    return app.style().standardPalette() if app.style() else QPalette()


def dark_palette() -> QPalette:
    p = QPalette()
    for role, col in DARK.items():
        p.setColor(role, QColor(col))
    p.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.Text, QColor("#6b7280"))
    p.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.ButtonText, QColor("#6b7280"))
    return p


def apply_zoom(win, z: float) -> float:
    """Points added to the base font size of every view of ``win`` (-4..16); returns the zoom applied."""
    z = max(-4.0, min(16.0, float(z)))
    pt = max(6.0, win._base_font_pt + z)
    f = QFont(win.font())
    f.setPointSizeF(pt)
    win.setFont(f)
    for w in (win.messages.view, win.diff_panel.view, win.diff_panel.edits, win.findings, win.explainer, win.stepper):
        w.setFont(f)
    win.chart.set_font_size(pt)
    win.stepper.set_font_size(pt)
    presenter = getattr(win, "presenter_mode", None)
    if presenter is not None:
        presenter.zoomed()            # its tab bar's style says the size too
    win.timeline_panel.timeline.set_font_size(pt)
    mono = QFont(win.inspector.text.font())
    mono.setPointSizeF(pt)
    for e in (win.inspector.text, win.inspector.json, win.inspector.persisted):
        e.setFont(mono)
    win.messages.view.doItemsLayout()
    return z


def apply_palette(win, dark: bool) -> None:
    """The dark (or the standard light) palette for the application, the window and its chart."""
    app = QApplication.instance()
    app.setStyle("Fusion")
    pal = dark_palette() if dark else light_palette()
    app.setPalette(pal)
    win.setPalette(pal)
    win.chart.set_theme(pal.color(QPalette.ColorRole.Base), pal.color(QPalette.ColorRole.Text))
    win.messages.view.viewport().update()
