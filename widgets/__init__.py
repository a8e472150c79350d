"""Qt views over core data (models, delegates, charts). No pipeline logic here.

Importing this package applies one workaround: with PySide6 6.12 on CPython
< 3.12, every invalid QVariant that C++ hands to Python (``QModelIndex.data`` of
an unset role, many pyqtgraph internals) becomes ``None`` without a reference,
so None's reference count falls by one each time until the interpreter aborts
with "none_dealloc: deallocating None" after a few minutes of painting. None is
never freed anyway (they are immortal from 3.12 on), so we give None,
True and False a large reference count once. Measured: ~2,000 lost references per repaint of the window.
"""
from __future__ import annotations

import sys


def _guard_none_refcount() -> None:
    """pyproject pins PySide6 below 6.12; this guards an environment that has 6.12 anyway."""
    if sys.version_info >= (3, 12) or sys.implementation.name != "cpython":
        return
    try:
        from PySide6 import __version__ as qt_version
    except ImportError:
        return
    if not qt_version.startswith("6.12."):
        return
    import ctypes
    for singleton in (None, True, False):
        refcnt = ctypes.c_ssize_t.from_address(id(singleton))
        if refcnt.value < (1 << 40):
            refcnt.value += 1 << 40


_guard_none_refcount()
