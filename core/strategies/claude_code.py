"""Claude Code's production pipeline (seed 001's deep dive, "深入 CC 源码")."""
from __future__ import annotations

from ..layers.claude_code import LAYERS, SessionTokens, threshold
from ..layers.claude_code_params import ClaudeCodeParams
from .base import TOKENS, Strategy, Threshold
from .claude_code_versions import infer

CLAUDE_CODE = Strategy(
    name="claude_code",
    title="Claude Code (production pipeline)",
    description="budget -> snip (gated, off) -> time-based microcompact -> auto-compact at "
                "window - min(max_output, 20,000) - 13,000 tokens with a nine-section summary and file restore",
    layers=tuple(LAYERS[n] for n in ("tool_result_budget", "snip_compact", "time_micro_compact", "auto_compact")),
    extra_layers=(LAYERS["manual_compact"],),
    params=ClaudeCodeParams.declared(),
    threshold=Threshold(TOKENS, fn=threshold, formula="window - min(max_output, summary_max_output) - buffer "
                                                       "(window - max_output - buffer with cap_reserve off)"),
    token_estimator=SessionTokens,
    compact_tool_layer="manual_compact",
    infer=infer,
    notes={"threshold": "window - min(max_output, summary_max_output) - buffer (window - max_output - buffer "
                        "with cap_reserve off)",
           "not reproduced": "context collapse and session-memory compaction (not in the public source); "
                             "cached microcompact (needs the API's cache_edits)"},
)
