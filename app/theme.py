"""The window's look: the light and dark palettes."""
from __future__ import annotations

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

DARK = {QPalette.Window: "#1f2430", QPalette.WindowText: "#e5e7eb", QPalette.Base: "#161a22",
        QPalette.AlternateBase: "#222834", QPalette.ToolTipBase: "#111827", QPalette.ToolTipText: "#e5e7eb",
        QPalette.Text: "#e5e7eb", QPalette.Button: "#2a3140", QPalette.ButtonText: "#e5e7eb",
        QPalette.BrightText: "#ffffff", QPalette.Highlight: "#3b82f6", QPalette.HighlightedText: "#ffffff",
        QPalette.Link: "#60a5fa", QPalette.PlaceholderText: "#9ca3af"}


def light_palette() -> QPalette:
    app = QApplication.instance()
    return app.style().standardPalette() if app.style() else QPalette()


def dark_palette() -> QPalette:
    p = QPalette()
    for role, col in DARK.items():
        p.setColor(role, QColor(col))
    p.setColor(QPalette.Disabled, QPalette.Text, QColor("#6b7280"))
    p.setColor(QPalette.Disabled, QPalette.ButtonText, QColor("#6b7280"))
    return p
