"""Claude Code's production pipeline (seed 001's deep dive, "深入 CC 源码")."""
from __future__ import annotations

from compactscope.core.layers.claude_code import DEFAULT_COMPACTABLE, LAYERS, SessionTokens, threshold
from compactscope.core.strategies.base import TOKENS, Param, Strategy, Threshold
from compactscope.core.strategies.claude_code_versions import infer

CLAUDE_CODE = Strategy(
    name="claude_code",
    title="Claude Code (production pipeline)",
    description="budget -> snip (gated, off) -> time-based microcompact -> auto-compact at "
                "window - min(max_output, 20,000) - 13,000 tokens with a nine-section summary and file restore",
    layers=tuple(LAYERS[n] for n in ("tool_result_budget", "snip_compact", "time_micro_compact", "auto_compact")),
    extra_layers=(LAYERS["manual_compact"],),
    params=(
        Param("window", 200_000, "the model's context window in tokens: 200,000, or 1,000,000 with the 1M beta",
              minimum=1, unit="tokens"),
        Param("max_output", 32_000, "the model's max output tokens; the threshold reserves min(max_output, "
              "summary_max_output) for the summary reply", minimum=0, unit="tokens"),
        Param("summary_max_output", 20_000, "MAX_OUTPUT_TOKENS_FOR_SUMMARY (autoCompact.ts): max_tokens of the "
              "summary call, also reserved below the window (capped: min(max_output, this), Claude Code 2.1.21 on; "
              "see cap_reserve for older versions)", minimum=1, unit="tokens"),
        Param("cap_reserve", True, "reserve min(max_output, summary_max_output) below the window (Claude Code "
              "2.1.21 on: 'fixed auto-compact triggering too early on models with large output token limits'); "
              "off = reserve the whole max_output, as before 2.1.21 (threshold 155,000 for 200k and 32k). "
              "Inferred from the session's version (docs/claude-code-versions.md)"),
        Param("buffer", 13_000, "AUTOCOMPACT_BUFFER_TOKENS (autoCompact.ts): headroom kept below the effective "
              "window; auto-compact fires at window - min(max_output, summary_max_output) - buffer",
              minimum=0, unit="tokens"),
        Param("autocompact", True, "auto-compact enabled (the /config 'Auto-compact' switch)"),
        Param("max_failures", 3, "MAX_CONSECUTIVE_AUTOCOMPACT_FAILURES: stop auto-compacting after this many "
              "consecutive summary failures (circuit breaker)", minimum=1),
        Param("ptl_retries", 3, "on 'prompt too long' while summarising, drop the oldest API-round groups and "
              "retry up to this many times", minimum=0),
        Param("ptl_drop_fraction", 0.2, "share of API-round groups dropped per retry when the error does not say "
              "by how many tokens the prompt is too long", minimum=0.01, maximum=1.0),
        Param("restore_files", True, "after compaction, re-attach recently read files from Read results"),
        Param("restore_max_files", 5, "POST_COMPACT_MAX_FILES_TO_RESTORE: files re-attached after compaction",
              minimum=0),
        Param("restore_tokens_per_file", 5_000, "POST_COMPACT_MAX_TOKENS_PER_FILE: a longer file is truncated "
              "(tokens = chars/4)", minimum=0, unit="tokens"),
        Param("restore_total_tokens", 50_000, "POST_COMPACT_TOKEN_BUDGET: all restored files together; a file "
              "that would pass it is skipped", minimum=0, unit="tokens"),
        Param("read_tools", "Read", "comma-separated tool names whose results count as file reads (input "
              "file_path) for the restore"),
        Param("idle_gap_minutes", 60.0, "time-based microcompact fires when the last assistant message is this "
              "old (the prompt cache has expired); 0 = off (timeBasedMCConfig.ts). It is server-gated: on a real "
              "session it is inferred off unless the session shows it ran (its real context dropped with no "
              "compaction boundary, or a microcompact_boundary record)",
              minimum=0, unit="min"),
        Param("micro_keep_recent", 5, "time-based microcompact keeps this many most recent compactable results "
              "(at least 1)", minimum=1),
        Param("compactable_tools", DEFAULT_COMPACTABLE, "comma-separated tools whose results microcompact may "
              "clear ('*' = every tool)"),
        Param("budget_chars", 200_000, "tool result budget (toolLimits.ts): the last message's tool results may "
              "total this many chars", minimum=0, unit="chars"),
        Param("persist_threshold", 30_000, "the budget persists only results longer than this", minimum=0,
              unit="chars"),
        Param("preview_chars", 2000, "characters of a persisted result kept as a preview", minimum=0, unit="chars"),
        Param("snip_max_messages", 0, "HISTORY_SNIP: 0 = off (as in public builds); otherwise snip to this many "
              "messages with the s08 rules", minimum=0),
        Param("snip_keep_head", 3, "with snip on: messages kept at the head", minimum=0),
    ),
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
