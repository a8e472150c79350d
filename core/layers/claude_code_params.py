"""Claude Code's parameters, declared once (its constants from autoCompact.ts and the rest, and its settings), and
the version facts its layers read (which versions count a response's whole output), and its rough count of a
message (``content_chars``), for ``layers.claude_code``."""
from __future__ import annotations

import json
import re

from ..runtime.record import record
from .params import Settings, param

DEFAULT_COMPACTABLE = "Read,Bash,Grep,Glob,WebSearch,WebFetch,Edit,Write"


@record(frozen=True)
class ClaudeCodeParams(Settings):
    """Claude Code's parameters: its constants (autoCompact.ts and the rest) and its settings."""

    window: int = param(
        200_000, "the model's context window in tokens: 200,000, or 1,000,000 with the 1M beta",
        minimum=1, unit="tokens")
    max_output: int = param(
        32_000, "the model's max output tokens; the threshold reserves min(max_output, "
        "summary_max_output) for the summary reply",
        minimum=0, unit="tokens")
    summary_max_output: int = param(
        20_000, "MAX_OUTPUT_TOKENS_FOR_SUMMARY (autoCompact.ts): max_tokens of the "
        "summary call, also reserved below the window (capped: min(max_output, this), Claude Code 2.1.21 on; "
        "see cap_reserve for older versions)",
        minimum=1, unit="tokens")
    cap_reserve: bool = param(
        True, "reserve min(max_output, summary_max_output) below the window (Claude Code "
        "2.1.21 on: 'fixed auto-compact triggering too early on models with large output token limits'); "
        "off = reserve the whole max_output, as before 2.1.21 (threshold 155,000 for 200k and 32k). "
        "Inferred from the session's version (docs/claude-code-versions.md)")
    buffer: int = param(
        13_000, "AUTOCOMPACT_BUFFER_TOKENS (autoCompact.ts): headroom kept below the effective "
        "window; auto-compact fires at window - min(max_output, summary_max_output) - buffer",
        minimum=0, unit="tokens")
    autocompact: bool = param(True, "auto-compact enabled (the /config 'Auto-compact' switch)")
    max_failures: int = param(
        3, "MAX_CONSECUTIVE_AUTOCOMPACT_FAILURES: stop auto-compacting after this many "
        "consecutive summary failures (circuit breaker)",
        minimum=1)
    ptl_retries: int = param(
        3, "on 'prompt too long' while summarising, drop the oldest API-round groups and "
        "retry up to this many times",
        minimum=0)
    ptl_drop_fraction: float = param(
        0.2, "share of API-round groups dropped per retry when the error does not say "
        "by how many tokens the prompt is too long",
        minimum=0.01, maximum=1.0)
    restore_files: bool = param(True, "after compaction, re-attach recently read files from Read results")
    restore_max_files: int = param(
        5, "POST_COMPACT_MAX_FILES_TO_RESTORE: files re-attached after compaction",
        minimum=0)
    restore_tokens_per_file: int = param(
        5_000, "POST_COMPACT_MAX_TOKENS_PER_FILE: a longer file is truncated "
        "(tokens = chars/4)",
        minimum=0, unit="tokens")
    restore_total_tokens: int = param(
        50_000, "POST_COMPACT_TOKEN_BUDGET: all restored files together; a file "
        "that would pass it is skipped",
        minimum=0, unit="tokens")
    read_tools: str = param(
        "Read", "comma-separated tool names whose results count as file reads (input "
        "file_path) for the restore")
    idle_gap_minutes: float = param(
        60.0, "time-based microcompact fires when the last assistant message is this "
        "old (the prompt cache has expired); 0 = off (timeBasedMCConfig.ts). It is server-gated: on a real "
        "session it is inferred off unless the session shows it ran (its real context dropped with no "
        "compaction boundary, or a microcompact_boundary record)",
        minimum=0, unit="min")
    micro_keep_recent: int = param(
        5, "time-based microcompact keeps this many most recent compactable results "
        "(at least 1)",
        minimum=1)
    compactable_tools: str = param(
        DEFAULT_COMPACTABLE, "comma-separated tools whose results microcompact may "
        "clear ('*' = every tool)")
    budget_chars: int = param(
        200_000, "tool result budget (toolLimits.ts): the last message's tool results may "
        "total this many chars",
        minimum=0, unit="chars")
    persist_threshold: int = param(
        30_000, "the budget persists only results longer than this",
        minimum=0, unit="chars")
    preview_chars: int = param(2000, "characters of a persisted result kept as a preview", minimum=0, unit="chars")
    snip_max_messages: int = param(
        0, "HISTORY_SNIP: 0 = off (as in public builds); otherwise snip to this many "
        "messages with the s08 rules",
        minimum=0)
    snip_keep_head: int = param(3, "with snip on: messages kept at the head", minimum=0)


def parse_version(v) -> tuple | None:
    """'2.1.14' -> (2, 1, 14); None when it is not a version."""
    if not isinstance(v, str):
        return None
    m = re.match(r"\s*(\d+)\.(\d+)\.(\d+)", v)
    return tuple(int(x) for x in m.groups()) if m else None


def session_versions(conversation) -> list[tuple]:
    extra = getattr(conversation, "extra", None) or {}
    vs = {parse_version(v) for v in extra.get("versions") or ()}
    return sorted(v for v in vs if v is not None)


FINAL_OUTPUT_SINCE = (2, 1, 21)


def counts_final_output(conversation) -> bool:
    """Whether Claude Code's count of this session takes a response's whole output (2.1.21 and later, or no
    version recorded: the newest behaviour)."""
    if getattr(conversation, "format", "claude-code") != "claude-code":
        return False
    versions = session_versions(conversation)
    return not versions or versions[-1] >= FINAL_OUTPUT_SINCE


# ------------------------------------------------------------ Claude Code's rough count of a message
IMAGE_TOKENS = 2000          # an image or a document counts a flat 2,000 tokens


def content_chars(m) -> int:
    """Claude Code's rough count of one message (``roughTokenCountEstimationForMessages``), in chars:
    the text of text and thinking blocks, a tool_use's name and JSON input, a tool_result's content,
    and 4 x 2,000 for an image or document (a flat 2,000 tokens). Keys, quotes and ids are not counted,
    unlike ``len(repr(m))``."""
    if not isinstance(m, dict):
        return len(str(m))
    c = m.get("content")
    if isinstance(c, str):
        n = len(c)
    else:
        n = blocks_chars(c) if isinstance(c, list) else 0
    for call in m.get("tool_calls") or ():
        if isinstance(call, dict):
            n += len(json.dumps(call.get("function"), ensure_ascii=False, default=str))
    return n


def blocks_chars(content: list) -> int:
    """``content_chars`` of a list of blocks."""
    n = 0
    for b in content:
        if not isinstance(b, dict):
            n += len(str(b))
            continue
        t = b.get("type")
        if t == "text":
            n += len(str(b.get("text", "")))
        elif t == "tool_use":
            n += len(str(b.get("name", ""))) + len(json.dumps(b.get("input"), ensure_ascii=False, default=str))
        elif t == "tool_result":
            c = b.get("content")
            n += len(c) if isinstance(c, str) else (blocks_chars(c) if isinstance(c, list) else 0)
        elif t == "thinking":
            n += len(str(b.get("thinking", "")))
        elif t == "redacted_thinking":
            n += len(str(b.get("data", "")))
        elif t in ("image", "document"):
            n += 4 * IMAGE_TOKENS
        else:
            n += len(json.dumps(b, ensure_ascii=False, default=str))
    return n
