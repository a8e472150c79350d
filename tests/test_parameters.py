"""Typed parameters declared once: each strategy's Param list is its Settings declaration, layers read typed
attributes (never a default written again), a value is validated once, and docs/parameters.md is written from it."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from compactscope.core import strategies
from compactscope.core.layers.base import ReadParams
from compactscope.core.layers.claude_code_params import ClaudeCodeParams
from compactscope.core.runtime.record import record
from compactscope.core.layers.codex import CodexParams
from compactscope.core.layers.gemini_cli import GeminiCliParams
from compactscope.core.layers.hermes import HermesParams
from compactscope.core.layers.inspect import InspectEditParams, InspectSummaryParams, InspectTrimParams
from compactscope.core.layers.params import Settings, param
from compactscope.core.layers.s08 import S08Params
from compactscope.core.strategies.reference import parameters_markdown

ROOT = Path(__file__).resolve().parent.parent
DECLARED = {"s08": S08Params, "claude_code": ClaudeCodeParams, "hermes": HermesParams, "codex": CodexParams, "gemini_cli": GeminiCliParams,
            "inspect_edit": InspectEditParams, "inspect_trim": InspectTrimParams,
            "inspect_summary": InspectSummaryParams}


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_a_strategys_parameters_are_its_declaration(name):
    st = strategies.get(name)
    assert st.params == DECLARED[name].declared()
    assert st.resolve({}) == {f.name: f.default for f in DECLARED[name].declared()}


def test_no_builtin_layer_writes_a_default_again():
    """Layers read ``XParams.of(ctx).name``; ``ctx.p(name, default)`` stays for plugins only."""
    found = [f"{p.relative_to(ROOT)}:{k}" for p in [*(ROOT / "core" / "layers").glob("*.py"),
                                                     ROOT / "core" / "analysis" / "moa.py"]
             for k, line in enumerate(p.read_text().splitlines(), 1) if re.search(r"\bctx\.p\(", line)]
    assert found == []


@record(frozen=True)
class Demo(Settings):
    limit: int = param(10, "the limit", minimum=1, maximum=100, unit="tokens")
    mode: str = param("a", "the mode", choices=("a", "b"))


def test_the_declaration_gives_types_bounds_and_help():
    limit, mode = Demo.declared()
    assert (limit.name, limit.default, limit.kind, limit.minimum, limit.maximum, limit.unit, limit.help) == \
        ("limit", 10, int, 1, 100, "tokens", "the limit")
    assert mode.choices == ("a", "b") and mode.coerce("b") == "b"
    with pytest.raises(ValueError):
        limit.coerce("0")
    assert limit.clamp(250.6) == 100 and limit.clamp(-3) == 1 and limit.clamp(41.6) == 42


def test_a_layer_reads_typed_values_and_the_engine_still_sees_which():
    seen = ReadParams({"limit": 42})
    cfg = Demo.of(seen)
    assert cfg.limit == 42 and seen.reads == {"limit"}          # read on access: the rerun's start stays exact
    assert cfg.mode == "a" and seen.reads == {"limit", "mode"}  # absent: the declared default
    with pytest.raises(AttributeError, match="declares no parameter 'limt'"):
        cfg.limt  # noqa: B018 - the misspelt read must fail, not return a default


def test_a_threshold_drag_is_validated_once_by_resolve():
    s08 = strategies.get("s08")
    dragged = s08.drag_threshold(-50.0, s08.resolve({}))
    assert dragged["context_limit"] == 0                        # clamped by the parameter's own bounds
    assert s08.resolve(dragged) == dragged


def test_the_parameter_reference_is_written_from_the_declarations():
    text = (ROOT / "docs" / "parameters.md").read_text()
    assert text == parameters_markdown([strategies.get(n) for n in strategies.builtin()]), \
        "docs/parameters.md is stale: compactscope strategies --markdown $(builtin names) > docs/parameters.md"
    assert "| `max_messages` | int | `50` | >= 1 |" in text
