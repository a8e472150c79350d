"""The strategies installed packages register under the entry-point group ``compactscope.strategies``.

``entry_points()`` answers what ``importlib.metadata`` finds; before importing it (with the e-mail parser it
needs: most of a command's start-up, issue 27) ``declared_anywhere()`` looks, with one folder listing per
``sys.path`` entry, whether any installed distribution's ``entry_points.txt`` names the group at all. When none
does the answer is empty without that import; otherwise (or when the search path holds something the listing
cannot read: a zip, another finder of distributions) ``importlib.metadata`` answers as before.
"""
from __future__ import annotations

import os
import sys
from typing import Any

ENTRY_POINT_GROUP = "compactscope.strategies"
_HEADER = f"[{ENTRY_POINT_GROUP}]"


def _other_finders() -> bool:
    """Whether a finder other than the standard path finder could answer distributions."""
    from importlib.machinery import PathFinder
    return any(f is not PathFinder and getattr(f, "find_distributions", None) is not None for f in sys.meta_path)


def _declares(folder: str) -> bool | None:
    """Whether a distribution in ``folder`` declares the group (None: ``folder`` cannot be listed here)."""
    try:
        entries = os.scandir(folder or ".")
    except NotADirectoryError:
        return None                                      # a zip on the path: importlib.metadata reads it
    except OSError:
        return False                                     # missing or unreadable: importlib finds nothing either
    with entries:
        for e in entries:
            name = e.name.lower()
            if not name.endswith((".dist-info", ".egg-info", ".egg")):
                continue
            if name.endswith(".egg") and not e.is_dir():
                return None
            try:
                with open(os.path.join(e.path, "EGG-INFO" if name.endswith(".egg") else "", "entry_points.txt"),
                          encoding="utf-8", errors="replace") as f:
                    if ENTRY_POINT_GROUP in f.read():
                        return True
            except OSError:
                continue
    return False


def declared_anywhere() -> bool:
    """Whether ``entry_points()`` may find something (see the module's text): False only when it cannot."""
    if _other_finders():
        return True
    return any(not isinstance(p, str) or _declares(p) is not False for p in sys.path)


def entry_points() -> dict[str, Any]:
    """name -> entry point of the group ``compactscope.strategies`` (installed packages)."""
    if not declared_anywhere():
        return {}
    from importlib.metadata import entry_points as eps
    try:
        found = eps(group=ENTRY_POINT_GROUP)
    except TypeError:                                       # Python 3.10's selectable API
        found = eps().get(ENTRY_POINT_GROUP, ())            # type: ignore[union-attr,arg-type,unused-ignore]
    out: dict[str, Any] = {}
    for ep in found:
        out.setdefault(ep.name, ep)
    return out
