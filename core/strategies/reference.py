"""The parameter reference (docs/parameters.md), written from each strategy's one declaration of its parameters."""
from __future__ import annotations

from ..i18n import english as words
from .base import Param, Strategy


def _bounds(p: Param) -> str:
    if p.choices:
        return " / ".join(f"`{c}`" for c in p.choices)
    lo = "" if p.minimum is None else f">= {words.value(p.minimum)}"
    hi = "" if p.maximum is None else f"<= {words.value(p.maximum)}"
    return ", ".join(x for x in (lo, hi) if x)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def parameters_markdown(strats: list[Strategy]) -> str:
    """One table per strategy: each parameter's name, type, default, bounds or choices, unit and meaning."""
    out = ["# Parameters", "",
           "Every strategy's parameters as its one typed declaration says them (`core/layers/<name>.py`, a `Settings`",
           "dataclass): what `--set NAME=VALUE`, the window's parameter panel and `compactscope strategies` take.",
           "Written by `compactscope strategies --markdown`; a test keeps this file equal to it.", ""]
    for s in strats:
        out += [f"## `{s.name}`: {s.title}", "", _cell(s.description), "",
                "| parameter | type | default | accepts | unit | meaning |", "|---|---|---|---|---|---|"]
        for p in s.params:
            kind = "whole number or `all`" if getattr(p, "text_editor", False) else p.kind.__name__
            out.append(f"| `{p.name}` | {kind} | `{words.value(p.default)}` | {_bounds(p)} | {p.unit} | "
                       f"{_cell(p.help)} |")
        out.append("")
    return "\n".join(out)
