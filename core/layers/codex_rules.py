"""The rules of OpenAI Codex CLI's local context compaction (codex-rs ``core/src/compact.rs`` and what it
calls), written from its source for Compactscope: pure functions over Codex's Responses items as the
loader maps them into OpenAI chat messages (``core.loaders.codex``). No Qt, no I/O.

* **The limit**: ``min(model_auto_compact_token_limit, 90% of model_context_window)``; the 90% alone when no
  limit is set (``auto_compact_token_limit_with_override``); a limit <= 0 is no limit.
* **The figure it is checked against** (``get_total_token_usage``): the ``total_tokens`` the last model
  response reported, plus Codex's estimate of every item recorded after that response (tool outputs, a
  new user message): ``ceil(bytes / 4)`` of each item serialized as JSON. Without a reported response
  (the start, or right after a compaction) the whole history is estimated, the base instructions included
  (``recompute_token_usage``).
* **When**: after a model response that needs a follow-up (it called tools), before the next request: mid
  turn; and before the first request of a user turn: pre turn.
* **The compaction request**: the history plus one user message holding the compaction prompt, no tools.
* **The new history** (``build_compacted_history``): the user's own messages, newest first within
  ``COMPACT_USER_MESSAGE_MAX_TOKENS`` (the one that overflows cut in the middle), the earlier summaries and
  Codex's own context messages left out; then the summary behind ``SUMMARY_PREFIX``. Mid turn, the initial
  context (the developer messages and the environment context) goes just before the last real user
  message (``InitialContextInjection::BeforeLastUserMessage``); pre turn it is re-sent at the next turn.
"""
from __future__ import annotations

import json
from typing import Any, Callable

COMPACT_USER_MESSAGE_MAX_TOKENS = 20_000
CONTEXT_SHARE = 0.9                   # the auto-compact limit is at most 90% of the window
# Codex's templates/compact/summary_prefix.md (the start of every compaction summary message; a fact of the
# requests the CLI sends, needed to tell its summaries apart from the user's messages)
SUMMARY_PREFIX = ("Another language model started to solve this problem and produced a summary of its thinking "
                  "process. You also have access to the state of the tools that were used by that language model. "
                  "Use this to build on the work that has already been done and avoid duplicating work. Here is the "
                  "summary produced by the other language model, use the information in this summary to assist "
                  "with your own analysis:")
# the first sentence of Codex's templates/compact/prompt.md (how its compaction request is recognised); the rest
# of the prompt below is Compactscope's own wording of what it asks for
PROMPT_OPENING = "You are performing a CONTEXT CHECKPOINT COMPACTION."
COMPACT_PROMPT = (PROMPT_OPENING + " Write a handoff summary for another model that will resume the task: the "
                  "progress and decisions so far, the constraints and preferences that matter, what is left to do, "
                  "and any data needed to continue. Be concise and structured.")
NO_SUMMARY = "(no summary available)"
# Codex's own context messages in the user role (event_mapping: not the user's words, never kept as a prompt)
CONTEXTUAL_OPENINGS = ("<environment_context>", "<user_instructions>", "# agents.md instructions",
                       "<user_shell_command>", "<turn_aborted>", "<subagent_notification>", "<skills_instructions>",
                       "<collaboration_mode>", "<permissions instructions>", "<model_switch>", "<personality_spec>",
                       "<apps_instructions>")


def limit(auto_compact_token_limit: int | None, context_window: int | None) -> int | None:
    """Codex's auto-compact limit: the configured one (a value <= 0 is none) against 90% of the window."""
    cap = int(context_window * 9) // 10 if context_window and context_window > 0 else None
    conf = auto_compact_token_limit if auto_compact_token_limit and auto_compact_token_limit > 0 else None
    if cap is not None and conf is not None:
        return min(conf, cap)
    return cap if cap is not None else conf


def approx_tokens(text: str) -> int:
    """Codex's ``approx_token_count``: UTF-8 bytes / 4, rounded up."""
    return (len(text.encode("utf-8", "surrogatepass")) + 3) // 4


def truncate_middle(text: str, max_tokens: int) -> str:
    """Codex's ``truncate_text`` with a token budget: the first and last halves of ``4 x max_tokens`` bytes,
    the cut said in the middle as ``…N tokens truncated…``."""
    raw = text.encode("utf-8", "surrogatepass")
    budget = max(max_tokens, 0) * 4
    if len(raw) <= budget:
        return text
    left = budget // 2
    right = len(raw) - (budget - left)
    while 0 < left < len(raw) and (raw[left] & 0xC0) == 0x80:
        left -= 1
    while right < len(raw) and (raw[right] & 0xC0) == 0x80:
        right += 1
    removed = (len(raw) - budget + 3) // 4
    return (raw[:left].decode("utf-8", "replace") + f"\u2026{removed} tokens truncated\u2026"
            + raw[right:].decode("utf-8", "replace"))


# ------------------------------------------------------------------ what a message is, for Codex
def text_of(m: Any) -> str:
    """The text of a message's content: a string, or its text parts joined (images carry none)."""
    c = m.get("content") if isinstance(m, dict) else None
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "".join(p.get("text", "") for p in c if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def is_summary_text(text: str) -> bool:
    return text.startswith(SUMMARY_PREFIX + "\n")


def is_contextual_text(text: str) -> bool:
    head = text.lstrip()[:40].lower()
    return head.startswith(CONTEXTUAL_OPENINGS)


def is_user_prompt(m: Any) -> bool:
    """A message the user typed (Codex's ``TurnItem::UserMessage``): role user, not one of Codex's own context
    messages, not an earlier compaction summary."""
    if not isinstance(m, dict) or m.get("role") != "user":
        return False
    t = text_of(m)
    return not is_contextual_text(t) and not is_summary_text(t)


def is_summary(m: Any) -> bool:
    return isinstance(m, dict) and m.get("role") == "user" and is_summary_text(text_of(m))


def is_initial_context(m: Any) -> bool:
    """What Codex's ``build_initial_context`` makes: developer messages and its user-role context messages."""
    if not isinstance(m, dict):
        return False
    if m.get("role") in ("developer", "system"):
        return True
    return m.get("role") == "user" and is_contextual_text(text_of(m))


# ------------------------------------------------------------------ Codex's token estimate of items
def _parts(m: dict, kind: str) -> list:
    c = m.get("content")
    if isinstance(c, str):
        return [{"type": kind, "text": c}] if c else []
    out = []
    for p in c if isinstance(c, list) else ():
        if isinstance(p, dict) and isinstance(p.get("text"), str):
            out.append({"type": kind, "text": p["text"]})
        elif isinstance(p, dict) and p.get("type") in ("image_url", "input_image"):
            out.append({"type": "input_image", "image_url": "(image)"})
    return out


def items_of(m: Any) -> list[dict]:
    """The Responses items a chat message stands for, as Codex serializes them (for its byte estimate)."""
    if not isinstance(m, dict):
        return []
    role = m.get("role")
    if role == "tool":
        c = m.get("content")
        out = c if isinstance(c, str) else text_of(m)
        return [{"type": "function_call_output", "call_id": str(m.get("tool_call_id") or ""), "output": out}]
    if role == "assistant":
        items: list[dict] = []
        r = m.get("reasoning_content")
        if isinstance(r, str) and r:
            items.append({"type": "reasoning", "summary": [{"type": "summary_text", "text": r}]})
        parts = _parts(m, "output_text")
        if parts:
            items.append({"type": "message", "role": "assistant", "content": parts})
        for tc in m.get("tool_calls") or ():
            f = tc.get("function") if isinstance(tc, dict) else None
            f = f if isinstance(f, dict) else {}
            items.append({"type": "function_call", "name": str(f.get("name") or ""),
                          "arguments": str(f.get("arguments") or ""), "call_id": str(tc.get("id") or "")})
        return items
    return [{"type": "message", "role": str(role), "content": _parts(m, "input_text")}]


def item_tokens(item: dict) -> int:
    """Codex's ``estimate_item_token_count``: the item's compact JSON, bytes / 4 rounded up."""
    raw = json.dumps(item, ensure_ascii=False, separators=(",", ":"))
    return (len(raw.encode("utf-8", "surrogatepass")) + 3) // 4


def message_tokens(m: Any) -> int:
    return sum(item_tokens(i) for i in items_of(m))


# ------------------------------------------------------------------ the new history
def _text_tokens(m: Any) -> tuple[str, int]:
    t = text_of(m)
    return t, approx_tokens(t)


def select_user_messages(messages: list, budget: int = COMPACT_USER_MESSAGE_MAX_TOKENS,
                         is_prompt: Callable[[Any], bool] | None = None,
                         text_tokens: Callable[[Any], tuple[str, int]] | None = None) -> list[tuple[int, str, bool]]:
    """The user's prompts Codex keeps, oldest first: ``(index in messages, text, cut)``, taken newest first while
    they fit ``budget`` tokens; the first that does not fit is cut in the middle to what is left, and older ones
    are dropped (``build_compacted_history_with_limit``). ``is_prompt``: ``is_user_prompt`` (or the same answers
    kept per message; ``text_tokens``: a message's ``(text_of, approx_tokens of it)``, or the same kept)."""
    is_prompt = is_prompt or is_user_prompt
    text_tokens = text_tokens or _text_tokens
    picked: list[tuple[int, str, bool]] = []
    remaining = budget
    if budget <= 0:
        return picked
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if not is_prompt(m):
            continue
        if remaining <= 0:
            break
        t, n = text_tokens(m)
        if n <= remaining:
            picked.append((i, t, False))
            remaining -= n
        else:
            picked.append((i, truncate_middle(t, remaining), True))
            break
    picked.reverse()
    return picked


def summary_text(reply: str) -> str:
    """The summary message's text: the prefix, a newline, the model's reply (Codex's ``format!``)."""
    text = f"{SUMMARY_PREFIX}\n{reply}"
    return text if text else NO_SUMMARY


def initial_context(messages: list, is_context: Callable[[Any], bool] | None = None) -> list[int]:
    """Where the initial context lies in ``messages``: each developer message and Codex context message once (the
    first of equal texts), in order; what ``build_initial_context`` would make again for the same turn."""
    is_context = is_context or is_initial_context
    seen: set = set()
    out = []
    for i, m in enumerate(messages):
        if is_context(m):
            key = (m.get("role"), text_of(m))
            if key not in seen:
                seen.add(key)
                out.append(i)
    return out


def insert_before_last_prompt(history: list, context: list,
                              is_prompt: Callable[[Any], bool] | None = None) -> tuple[list, int]:
    """``context`` spliced into ``history`` just before its last real user message, else before the summary (the
    summary stays last), else at the end (``insert_initial_context_before_last_real_user_or_summary``); and where."""
    is_prompt = is_prompt or is_user_prompt
    at = next((k for k in range(len(history) - 1, -1, -1) if is_prompt(history[k])), None)
    if at is None:
        at = next((k for k in range(len(history) - 1, -1, -1) if is_summary(history[k])), len(history))
    return history[:at] + context + history[at:], at
