"""Replay a conversation's whole life: the pipeline before every model call.

Before each model call (each assistant message of the recording) the running context is the
previous compacted context plus the recorded messages since; the strategy's pipeline runs on it
and the compacted result is what the next call starts from, as if the agent had gone on with it.
Every call records sizes and tokens before and after each layer, which layers changed something,
the events, and what was dropped. For recordings with usage (Claude Code) the real context tokens
and the real compaction boundaries are kept next to the simulated ones.

The parts:

* ``records``: the data (``ReplayResult`` > ``CallRecord`` > ``LayerRecord``), every field documented;
* ``walk``: ``replay()`` and ``compare()``, the walk over the calls (``ReplayOptions``);
* ``views``: what is derived (totals, compactions, the iteration budget, real vs simulated);
* ``output``: JSON, CSV and the comparison table;
* ``calibration``: the recorded overhead added to token estimates.

Pure Python, no Qt. Messages are shared between calls, so the size meter's identity cache makes
each call cost about the number of new or changed messages.
"""
from __future__ import annotations

from ..strategies.base import Strategy
from ..strategies.spec import parse_run_spec
from .output import COMPARISON_COLUMNS, comparison_table, format_table
from .records import CallRecord, LayerRecord, ReplayResult
from .walk import REAL_SUMMARY_PREFIX, ReplayOptions, compare, replay


def threshold_for(strategy: Strategy, params: dict) -> tuple[float | None, str]:
    """The value a strategy compacts at, and its unit ("size" chars or "tokens"): its ``Threshold``."""
    th = strategy.threshold
    return (th.value(params), th.unit) if th is not None else (None, "")


__all__ = ["replay", "compare", "ReplayOptions", "ReplayResult", "CallRecord", "LayerRecord", "threshold_for",
           "parse_run_spec", "COMPARISON_COLUMNS", "comparison_table", "format_table", "REAL_SUMMARY_PREFIX"]
