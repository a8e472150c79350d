"""What ``compactscope strategies`` says of each built-in strategy, kept in ``catalogue.json`` beside this file so
that listing them imports no layer (issue 27: the command started at 3.7x a bare interpreter, most of it importing
every strategy to read its parameters).

``describe(strategy)`` is the one description (the command's ``--json`` entry); ``live()`` describes every built-in
from its module; ``stored()`` answers the file (None when it is missing or unreadable: the caller describes them
live). tests/test_startup_imports.py checks that the file is what ``live()`` says; after changing a built-in
strategy's title, description, layers or parameters, write it again::

    python -m compactscope.core.strategies.catalogue
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FILE = Path(__file__).with_name("catalogue.json")


def describe(s: Any, source: str) -> dict:
    """A strategy as ``compactscope strategies --json`` lists it (``source``: ``strategies.source(s)``)."""
    return {"name": s.name, "title": s.title, "description": s.description, "source": source,
            "dialect": s.dialect, "layers": s.layer_names,
            **({"not_reproduced": s.notes["not reproduced"]} if isinstance(s.notes, dict)
               and s.notes.get("not reproduced") else {}),
            "params": [{"name": p.name, "default": p.default, "help": p.help,
                        **({"choices": list(p.choices)} if p.choices else {}),
                        **({"unit": p.unit} if p.unit else {})} for p in s.params]}


def live() -> list[dict]:
    """Every built-in strategy described from its module (importing them all)."""
    from . import builtin, get, source
    return [describe(get(name), source(name)) for name in builtin()]


def stored() -> list[dict] | None:
    """The descriptions ``catalogue.json`` holds, in the built-ins' order; None when it cannot be read."""
    try:
        with open(FILE, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, list) else None


def write() -> Path:
    """``catalogue.json`` written from ``live()``."""
    FILE.write_text(json.dumps(live(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return FILE


if __name__ == "__main__":
    print(write())
