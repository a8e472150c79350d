"""Compactscope: a debugger and visualiser for the context compaction of LLM agents.

This folder is only the package root. The code lives in the top-level folders of the repository and is
installed beneath this one name, so the wheel claims no generic top-level name:

- ``core/``    -> ``compactscope.core``     pure Python, never imports Qt (loaders, layers, strategies, session)
- ``widgets/`` -> ``compactscope.widgets``  Qt views over core data
- ``app/``     -> ``compactscope.app``      the window, wiring, workers and the ``compactscope`` CLI
- ``assets/``  -> ``compactscope.assets``   bundled examples, lessons, translations, fonts

``python -m compactscope`` is the same as the ``compactscope`` command.
"""
from __future__ import annotations

from pathlib import Path

__version__ = "0.2.0"


def asset_path(*parts: str) -> Path:
    """A bundled file under ``assets/``, from a checkout, an editable install or a wheel."""
    import importlib.util
    spec = importlib.util.find_spec("compactscope.assets")
    if spec is not None and spec.submodule_search_locations:
        base = Path(next(iter(spec.submodule_search_locations)))
    else:  # running from a checkout that was never installed
        base = Path(__file__).resolve().parent.parent / "assets"
    return base.joinpath(*parts)
