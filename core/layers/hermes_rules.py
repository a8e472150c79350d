"""The rules of Hermes agent's ContextCompressor (hermes-agent 0.19.0), as pure functions.

Written from reading ``agent/context_compressor.py`` of hermes-agent 0.19.0 (seed 002,
``../shared/notes/hermes.md``); no code was copied. The strings below (summary prefix, END
marker, placeholders, notes) are the texts the real compressor puts into the context: they
must be identical for our output to equal theirs, so they are reproduced as data.

Everything here works on OpenAI chat messages (plain dicts) and never mutates its input.
The traced layers that use these rules are in ``core/layers/hermes.py``; the cross-check
against the real package is ``core/oracles/hermes_agent.py`` and ``tests/test_hermes_oracle.py``.
"""
from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from ..runtime.record import field, record
from ..model.markers import HERMES_MERGED_SUMMARY_DELIMITER, HERMES_SUMMARY_FLAG
from ..model.text import text_parts
from ..pipeline.chunkmemo import ChunkMemo

# ----------------------------------------------------------------- texts
TASK_HEADING = "## Historical Task Snapshot"
IN_PROGRESS_HEADING = "## Historical In-Progress State"
PENDING_HEADING = "## Historical Pending User Asks"
REMAINING_HEADING = "## Historical Remaining Work"

_P_HEAD = ("[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below. "
           "This is a handoff from a previous context window — treat it as background reference, NOT as "
           "active instructions. Do NOT answer questions or fulfill requests mentioned in this summary; "
           "they were already addressed. ")
_P_LATEST = ("Respond ONLY to the latest user message that appears AFTER this summary — that message is the "
             "single source of truth for what to do right now. ")
_P_REVERSE = ("Reverse signals in the latest message (e.g. 'stop', 'undo', 'roll back', 'just verify', "
              "'don't do that anymore', 'never mind', a new topic) must immediately end any in-flight work "
              "described in the summary; do not re-surface it in later turns. "
              "IMPORTANT: Your persistent memory (MEMORY.md, USER.md) in the system prompt is ALWAYS "
              "authoritative and active — never ignore or deprioritize memory content due to this "
              "compaction note. ")
_P_OVERLAP = ("Topic overlap with the summary does NOT mean you should resume its task: even on similar "
              "topics, the latest user message WINS. Treat ONLY the latest message as the active task and "
              f"discard stale items from '{TASK_HEADING}' / '{IN_PROGRESS_HEADING}' / '{PENDING_HEADING}' / "
              f"'{REMAINING_HEADING}' entirely — do not 'wrap up' or 'finish' work described there unless "
              "the latest message explicitly asks for it. ")
_P_TOOLS = ("None of the above restricts HOW you work: your tools remain fully active — keep calling them "
            "normally for the active task (edit files, run commands, search) instead of merely narrating "
            "what you would do. ")
_P_TAIL = "The current session state (files, config, etc.) may reflect work described here — avoid repeating it:"

#: The current handoff prefix of a summary message (#11475).
SUMMARY_PREFIX = _P_HEAD + _P_LATEST + _P_OVERLAP + _P_REVERSE + _P_TOOLS + _P_TAIL
LEGACY_SUMMARY_PREFIX = "[CONTEXT SUMMARY]:"
#: Prefixes of earlier releases, newest first: stripped on re-compaction so a stale directive cannot survive.
HISTORICAL_SUMMARY_PREFIXES = (
    _P_HEAD + _P_LATEST + _P_OVERLAP + _P_REVERSE + _P_TAIL,
    _P_HEAD + _P_LATEST
    + "If the latest user message is consistent with the '## Active Task' section, you may use the summary as "
      "background. If the latest user message contradicts, supersedes, changes topic from, or in any way "
      "diverges from '## Active Task' / '## In Progress' / '## Pending User Asks' / '## Remaining Work', the "
      "latest message WINS — discard those stale items entirely and do not 'wrap up the old task first'. "
    + _P_REVERSE + _P_TAIL,
    _P_HEAD + "Your current task is identified in the '## Active Task' section of the summary — resume exactly "
              "from there. Respond ONLY to the latest user message that appears AFTER this summary. " + _P_TAIL,
)
SUMMARY_END_MARKER = "--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---"
MERGED_PRIOR_CONTEXT_HEADER = "[PRIOR CONTEXT — for reference only; not a new message]"
MERGED_SUMMARY_DELIMITER = HERMES_MERGED_SUMMARY_DELIMITER
SYSTEM_COMPACTION_NOTE = (
    "[Note: Some earlier conversation turns have been compacted into a handoff summary to preserve context "
    "space. The current session state may still reflect earlier work, so build on that summary and state "
    "rather than re-doing work. Your persistent memory (MEMORY.md, USER.md) remains fully authoritative "
    "regardless of compaction.]")
SUMMARY_FLAG = HERMES_SUMMARY_FLAG             # in-process key marking the summary message
DB_PERSISTED = "_db_persisted"                # session-store marker, stripped from every copy (#57491)
DUPLICATE_TEXT = "[Duplicate tool output — same content as a more recent call]"
PRUNED_PLACEHOLDER = "[Old tool output cleared to save context space]"
SCREENSHOT_TEXT = "[screenshot removed to save context]"
ATTACHED_IMAGE_TEXT = "[Attached image — stripped after compression]"
TOOL_CALL_REMOVED = "(tool call removed)"

# ----------------------------------------------------------------- numbers
CHARS_PER_TOKEN = 4
IMAGE_TOKENS_BUDGET = 1600           # per image in the tail/prune budget walks
IMAGE_TOKENS_ROUGH = 1500            # per image in the rough (preflight) estimate
MIN_CONTEXT = 64_000                 # threshold floor (MINIMUM_CONTEXT_LENGTH)
SMALL_WINDOW = 512_000               # under this the threshold pct is raised to >= 0.75
SMALL_WINDOW_PCT = 0.75
MIN_WINDOW_TRIGGER = 0.85            # when the floor reaches the window
MIN_SUMMARY_TOKENS = 2000
SUMMARY_RATIO = 0.20
SUMMARY_TOKENS_CEILING = 10_000
MAX_TAIL_FLOOR = 8
DEDUP_MIN_CHARS = 200
PRUNE_MIN_CHARS = 200
ARGS_SHRINK_OVER = 500
ARGS_HEAD = 200
FALLBACK_MAX_CHARS = 8000
FALLBACK_TURN_MAX = 700
ACTIVE_TASK_MAX = 1400
IMAGE_TYPES = frozenset({"image_url", "input_image", "image"})
REPLAY_KEYS = ("reasoning", "reasoning_content", "reasoning_details", "codex_reasoning_items",
               "codex_message_items")
SYNTHETIC_USER_FLAGS = ("_todo_snapshot_synthetic", "_empty_recovery_synthetic", "_verification_stop_synthetic",
                        "_pre_verify_synthetic")
SYNTHETIC_USER_PREFIXES = (
    "[System: Your previous response was truncated",
    "[System: The previous response was cut off",
    "[System: Your previous tool call",
    "[Your active task list was preserved across context compression]",
    "[IMPORTANT: Background process ",
)


# ----------------------------------------------------------------- token estimates
def _content_budget_chars(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    if not isinstance(content, list):
        return len(str(content or ""))
    n = 0
    for part in content:
        if isinstance(part, str):
            n += len(part)
        elif not isinstance(part, dict):
            n += len(str(part))
        elif _ptype(part) in IMAGE_TYPES:
            n += IMAGE_TOKENS_BUDGET * CHARS_PER_TOKEN
        else:
            t = part.get("text", "") or ""
            n += len(t) if isinstance(t, str) else len(str(t))
    return n


def _ptype(part: dict) -> str | None:
    """A part's type when it is a string (anything else is no type: never a set member)."""
    t = part.get("type")
    return t if isinstance(t, str) else None


def _replay_chars(value: Any) -> int:
    if value is None or value == "":
        return 0
    if isinstance(value, str):
        return len(value)
    try:
        return len(json.dumps(value, ensure_ascii=False, sort_keys=True, default=str))
    except (TypeError, ValueError):
        return len(str(value))


def budget_tokens(msg: dict) -> int:
    """Tokens of one message in the tail and prune walks: content // 4 + 10, the whole repr of
    every tool call // 4 (#28053), and each replay field (reasoning, codex items...) // 4 (#55572)."""
    n = _content_budget_chars(msg.get("content") or "") // CHARS_PER_TOKEN + 10
    for call in msg.get("tool_calls") or []:
        if isinstance(call, dict):
            n += len(str(call)) // CHARS_PER_TOKEN
    for key in REPLAY_KEYS:
        n += _replay_chars(msg.get(key)) // CHARS_PER_TOKEN
    return n


def _rough_chars_and_images(msg: Any) -> tuple[int, int]:
    if not isinstance(msg, dict):
        return len(str(msg)), 0
    shadow: dict = {}
    images = 0
    for k, v in msg.items():
        if k == "_anthropic_content_blocks":
            if isinstance(v, list):
                images += sum(1 for p in v if isinstance(p, dict) and p.get("type") == "image")
            continue
        if k == "content" and isinstance(v, list):
            parts = []
            for p in v:
                if isinstance(p, dict) and _ptype(p) in IMAGE_TYPES:
                    parts.append({"type": p.get("type"), "image": "[stripped]"})
                    images += 1
                else:
                    parts.append(p)
            shadow[k] = parts
        elif k == "content" and isinstance(v, dict) and v.get("_multimodal"):
            shadow[k] = v.get("text_summary", "")
            inner = v.get("content")
            if isinstance(inner, list):
                images += sum(1 for p in inner if isinstance(p, dict) and _ptype(p) in ("image", "image_url"))
        else:
            shadow[k] = v
    return len(str(shadow)), images


ROUGH_FIGURE = "hermes_rough"       # per message: rough chars + 6,000 per image (additive, see rough_tokens)
BUDGET_FIGURE = "hermes_budget"     # per message: budget_tokens


def _plain_for_rough(msg: dict) -> bool:
    """The rough estimate's shadow copy of ``msg`` prints exactly like ``msg`` (no image part, no
    Anthropic blocks, no multimodal wrapper): its rough chars are the message's repr size."""
    if "_anthropic_content_blocks" in msg:
        return False
    c = msg.get("content")
    if isinstance(c, list):
        return not any(isinstance(p, dict) and _ptype(p) in IMAGE_TYPES for p in c)
    return not (isinstance(c, dict) and c.get("_multimodal"))


def rough_units(msg: Any, meter: Any = None) -> int:
    """One message's share of the rough estimate: its chars + 6,000 per image, so that
    ``rough_tokens(ms) == (sum(rough_units(m)) + 3) // 4`` (6,000 = 4 x 1,500 divides evenly).
    With a ``SizeMeter`` a plain message's chars are its cached repr size (the same figure
    every strategy's size uses)."""
    if meter is not None and isinstance(msg, dict) and _plain_for_rough(msg):
        return meter.raw_size(msg)
    c, i = _rough_chars_and_images(msg)
    return c + i * IMAGE_TOKENS_ROUGH * CHARS_PER_TOKEN


def _budget_figure(msg: Any, meter: Any) -> int:
    return budget_tokens(msg)


def budget_tokens_of(msg: Any, meter: Any = None) -> int:
    """``budget_tokens``, cached per message object in ``meter`` when one is given."""
    return budget_tokens(msg) if meter is None else meter.figure(msg, BUDGET_FIGURE, _budget_figure)


def rough_tokens(messages: list, meter: Any = None) -> int:
    """The preflight estimate: (chars of each message's repr, images blanked, + 3) // 4 plus 1,500 per image.
    With a ``SizeMeter`` every message's figure is computed once (and a list measured before costs nothing)."""
    if meter is not None:
        return (meter.total(messages, ROUGH_FIGURE, rough_units) + 3) // 4
    chars = images = 0
    for m in messages:
        c, i = _rough_chars_and_images(m)
        chars += c
        images += i
    return (chars + 3) // 4 + images * IMAGE_TOKENS_ROUGH


def tools_tokens(tools: Any) -> int:
    """The rough estimate of the tool schemas: for each tool (OpenAI ``function`` or flat) its name,
    its description and its parameters as compact JSON, (chars + 3) // 4; not the repr of the list."""
    if not isinstance(tools, list):
        return 0
    chars = 0
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        fn = tool.get("function")
        spec = fn if isinstance(fn, dict) else tool
        name, desc, params = spec.get("name") or "", spec.get("description") or "", spec.get("parameters") or {}
        chars += (len(name) if isinstance(name, str) else 0) + (len(desc) if isinstance(desc, str) else 0)
        try:
            chars += len(json.dumps(params, ensure_ascii=False, separators=(",", ":")))
        except (TypeError, ValueError):
            chars += len(str(params))
    return (chars + 3) // 4


class HermesTokens:
    """Token estimator of the hermes strategy: the rough request estimate
    (messages, plus the system prompt when it is not in the list, plus tool schemas)."""
    name = "hermes rough (chars+3)//4, images 1,500"

    def __init__(self):
        self._extra: tuple | None = None      # (system, tools, tokens): the last ones measured

    def _extra_tokens(self, system: Any, tools: Any) -> int:
        last = self._extra
        if last is not None and last[0] is system and last[1] is tools:
            return last[2]
        n = 0
        if system:
            text = system if isinstance(system, str) else json.dumps(system, ensure_ascii=False, default=str)
            n += (len(text) + 3) // 4
        if tools:
            n += tools_tokens(tools)
        self._extra = (system, tools, n)
        return n

    figure = ROUGH_FIGURE

    def figure_fn(self, m, meter) -> int:
        return rough_units(m, meter)

    def tokens_from(self, total: int, n: int, lead: Any = None, *, system=None, tools=None) -> int:
        if not system or (isinstance(lead, dict) and lead.get("role") == "system"):
            system = None
        return (total + 3) // 4 + self._extra_tokens(system, tools)

    def tokens(self, messages, meter=None, *, system=None, tools=None) -> int:
        total = meter.total(messages, ROUGH_FIGURE, rough_units) if meter is not None else \
            sum(rough_units(m) for m in messages)
        return self.tokens_from(total, len(messages), messages[0] if messages else None, system=system, tools=tools)


# ----------------------------------------------------------------- threshold
@record(frozen=True)
class Budgets:
    context_length: int
    max_tokens: int | None
    threshold_pct: float          # after the small-window raise
    threshold_tokens: int
    tail_budget: int
    max_summary_tokens: int
    why: str


def budgets(context_length: int, threshold_pct: float = 0.50, max_tokens: int | None = None,
            summary_target_ratio: float = 0.20) -> Budgets:
    """The trigger threshold and the tail and summary budgets for a window."""
    max_tokens = max_tokens if isinstance(max_tokens, int) and max_tokens > 0 else None
    pct = threshold_pct
    why = []
    if context_length and context_length < SMALL_WINDOW and pct < SMALL_WINDOW_PCT:
        pct = SMALL_WINDOW_PCT
        why.append(f"pct raised to {SMALL_WINDOW_PCT} (window under {SMALL_WINDOW:,})")
    window = context_length - (max_tokens or 0)
    if window <= 0:
        window = context_length
    value = int(window * pct)
    floored = max(value, MIN_CONTEXT)
    if window > 0 and floored >= window:
        threshold = max(1, min(int(window * MIN_WINDOW_TRIGGER), window - 1))
        why.append(f"the {MIN_CONTEXT:,} floor reaches the usable window {window:,}: 85% of it")
    else:
        threshold = floored
        why.append(f"int({window:,} x {pct}) = {value:,}" + (f", floored at {MIN_CONTEXT:,}" if floored > value else ""))
    ratio = max(0.10, min(summary_target_ratio, 0.80))
    return Budgets(context_length, max_tokens, pct, threshold, int(threshold * ratio),
                   min(int(context_length * 0.05), SUMMARY_TOKENS_CEILING), "; ".join(why))


def summary_budget(turns: list, max_summary_tokens: int, meter: Any = None) -> int:
    return max(MIN_SUMMARY_TOKENS, min(int(rough_tokens(turns, meter) * SUMMARY_RATIO), max_summary_tokens))


# ----------------------------------------------------------------- content helpers
def append_text(content: Any, text: str, prepend: bool = False) -> Any:
    if content is None:
        return text
    if isinstance(content, str):
        return text + content if prepend else content + text
    if isinstance(content, list):
        part = {"type": "text", "text": text}
        return [part, *content] if prepend else [*content, part]
    return text + str(content) if prepend else str(content) + text


def is_image_part(p: Any) -> bool:
    return isinstance(p, dict) and _ptype(p) in IMAGE_TYPES


def has_images(content: Any) -> bool:
    return isinstance(content, list) and any(is_image_part(p) for p in content)


# ----------------------------------------------------------------- summary prefix
def strip_summary_prefix(summary: str | None) -> str:
    text = (summary or "").strip()
    if MERGED_SUMMARY_DELIMITER in text:
        text = text.split(MERGED_SUMMARY_DELIMITER, 1)[1].strip()
    for prefix in (SUMMARY_PREFIX, LEGACY_SUMMARY_PREFIX, *HISTORICAL_SUMMARY_PREFIXES):
        if text.startswith(prefix):
            text = text[len(prefix):].lstrip()
            break
    if text.endswith(SUMMARY_END_MARKER):
        text = text[: -len(SUMMARY_END_MARKER)].rstrip()
    return text


def with_summary_prefix(summary: str) -> str:
    body = strip_summary_prefix(summary)
    return f"{SUMMARY_PREFIX}\n{body}" if body else SUMMARY_PREFIX


def is_summary_content(content: Any) -> bool:
    text = text_parts(content).lstrip()
    if MERGED_SUMMARY_DELIMITER in text:
        text = text.split(MERGED_SUMMARY_DELIMITER, 1)[1].lstrip()
    return text.startswith((SUMMARY_PREFIX, LEGACY_SUMMARY_PREFIX, *HISTORICAL_SUMMARY_PREFIXES))


def _last_summary_in(chunk: list) -> int:
    """The index in ``chunk`` of its last summary message, -1 when it has none."""
    for i in range(len(chunk) - 1, -1, -1):
        if is_summary_content(chunk[i].get("content")):
            return i
    return -1


# each fixed chunk of messages[start:end] -> where its last summary is: a parameter change moving the cut over
# 100k messages reads the messages of the chunks after the change only
_SUMMARY_AT: ChunkMemo[int] = ChunkMemo(_last_summary_in, size=2048, max_chunks=160)


def latest_summary(messages: list, start: int, end: int) -> tuple[int | None, str]:
    """(index, body) of the last summary message in ``messages[start:end]``; (None, "") when there is none."""
    start = max(start, 0)
    end = min(end, len(messages))
    span = messages[start:end]
    size = _SUMMARY_AT.size
    if not _SUMMARY_AT.remembers(len(span)):
        at = _last_summary_in(span)
        return (None, "") if at < 0 else (start + at, strip_summary_prefix(text_parts(messages[start + at].get("content"))))
    for k in range(((len(span) - 1) // size) * size, -1, -size):
        at = _SUMMARY_AT.chunk_result(span[k:k + size])
        if at >= 0:
            i = start + k + at
            return i, strip_summary_prefix(text_parts(messages[i].get("content")))
    return None, ""


# ----------------------------------------------------------------- reply cleaning and grounding
_REASONING_TAGS = ("think", "thinking", "reasoning", "REASONING_SCRATCHPAD", "thought")
_TOOL_XML_TAGS = ("tool_call", "tool_calls", "tool_result", "function_call", "function_calls")


def strip_reasoning(text: str) -> str:
    """Drop inline reasoning blocks and stray tool-call XML from an LLM reply."""
    if not text:
        return ""
    if "<" not in text:             # every pattern below starts at a "<": nothing to drop (no regex run)
        return text
    flags = re.DOTALL | re.IGNORECASE
    for tag in _REASONING_TAGS:
        text = re.sub(rf"<{tag}>.*?</{tag}>", "", text, flags=flags)
    for tag in _TOOL_XML_TAGS:
        text = re.sub(rf"<{tag}\b[^>]*>.*?</{tag}>", "", text, flags=flags)
    text = re.sub(r"(?:(?<=^)|(?<=[\n\r.!?:]))[ \t]*<function\b[^>]*\bname\s*=[^>]*>(?:(?:(?!</function>).)*)"
                  r"</function>", "", text, flags=flags)
    alt = "|".join(_REASONING_TAGS)
    text = re.sub(rf"(?:^|\n)[ \t]*<(?:{alt})\b[^>]*>.*$", "", text, flags=flags)
    text = re.sub(rf"</?(?:{alt})>\s*", "", text, flags=re.IGNORECASE)
    text = re.sub(r"</(?:tool_call|tool_calls|tool_result|function_call|function_calls|function)>\s*", "", text,
                  flags=re.IGNORECASE)
    return text


def _user_text_for_realness(msg: dict) -> str:
    c = msg.get("content")
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "\n".join(str(p.get("text") or p.get("content") or "") for p in c if isinstance(p, dict))
    return ""


def is_real_user(msg: Any) -> bool:
    """A human turn, not user-role scaffolding (synthetic flags, runtime notices, a summary)."""
    if not isinstance(msg, dict) or msg.get("role") != "user":
        return False
    if any(msg.get(f) for f in SYNTHETIC_USER_FLAGS):
        return False
    text = _user_text_for_realness(msg).strip()
    if not text or text.startswith(SYNTHETIC_USER_PREFIXES):
        return False
    return not is_summary_content(text)


def task_snapshot(turns: list) -> str | None:
    for m in reversed(turns):
        if not is_real_user(m):
            continue
        text = text_parts(m.get("content")).strip()
        if not text:
            continue
        text = re.sub(r"\s+", " ", text)
        if len(text) > ACTIVE_TASK_MAX:
            text = text[: ACTIVE_TASK_MAX - 15].rstrip() + " ...[truncated]"
        return (f"User asked (deterministic, from compacted turns): {text!r}\n"
                "Historical only; newer protected-tail messages after this summary win.")
    return None


_TASK_SECTION = re.compile(rf"(?ms)^{re.escape(TASK_HEADING)}\s*\n.*?(?=^## |\Z)")


def ground_task_snapshot(summary: str, turns: list) -> str:
    """Replace (or add) the task-snapshot section with the newest real user turn, verbatim."""
    snap = task_snapshot(turns)
    if not snap:
        return summary
    body = strip_summary_prefix(summary)
    section = f"{TASK_HEADING}\n{snap}\n\n"
    if _TASK_SECTION.search(body):
        return _TASK_SECTION.sub(lambda _m: section, body, count=1).strip()
    return f"{section}{body}".strip()


# ----------------------------------------------------------------- tool-call helpers
def call_name_args(call: Any) -> tuple[str, str]:
    if isinstance(call, dict):
        fn = call.get("function") or {}
        return str(fn.get("name") or "unknown"), str(fn.get("arguments") or "")
    return "unknown", ""


def call_id(call: Any) -> str:
    """The id a sanitation pass matches results against: ``call_id`` first, else ``id``."""
    if isinstance(call, dict):
        return call.get("call_id", "") or call.get("id", "") or ""
    return ""


def _s(args: dict, key: str, default: str = "") -> str:
    v = args.get(key, default)
    return v if isinstance(v, str) else (str(v) if v is not None else default)


def tool_one_liner(name: Any, raw_args: Any, content: Any) -> str:
    """The informative one-line replacement of an old tool result, per tool."""
    try:
        return _one_liner(name, raw_args, content)
    except Exception:  # a malformed historical call must never break compaction
        n = len(content) if isinstance(content, str) else 0
        return f"[{name}] ({n:,} chars result)"


def _one_liner(name: Any, raw_args: Any, content: Any) -> str:
    try:
        args = json.loads(raw_args) if raw_args else {}
    except (ValueError, TypeError):
        args = {}
    if not isinstance(args, dict):
        args = {}
    text = content or ""
    size = len(text)
    lines = text.count("\n") + 1 if text.strip() else 0
    g = args.get
    if name == "terminal":
        cmd = _s(args, "command")
        cmd = cmd[:77] + "..." if len(cmd) > 80 else cmd
        m = re.search(r'"exit_code"\s*:\s*(-?\d+)', text)
        return f"[terminal] ran `{cmd}` -> exit {m.group(1) if m else '?'}, {lines} lines output"
    if name == "read_file":
        return f"[read_file] read {g('path', '?')} from line {g('offset', 1)} ({size:,} chars)"
    if name == "write_file":
        written = _s(args, "content").count("\n") + 1 if g("content") else "?"
        return f"[write_file] wrote to {g('path', '?')} ({written} lines)"
    if name == "search_files":
        m = re.search(r'"total_count"\s*:\s*(\d+)', text)
        return (f"[search_files] {g('target', 'content')} search for '{g('pattern', '?')}' in {g('path', '.')} "
                f"-> {m.group(1) if m else '?'} matches")
    if name == "patch":
        return f"[patch] {g('mode', 'replace')} in {g('path', '?')} ({size:,} chars result)"
    if name in ("browser_navigate", "browser_click", "browser_snapshot", "browser_type", "browser_scroll",
                "browser_vision"):
        url, ref = g("url", ""), g("ref", "")
        detail = f" {url}" if url else (f" ref={ref}" if ref else "")
        return f"[{name}]{detail} ({size:,} chars)"
    if name == "web_search":
        return f"[web_search] query='{g('query', '?')}' ({size:,} chars result)"
    if name == "web_extract":
        urls = g("urls", [])
        first = urls[0] if isinstance(urls, list) and urls else "?"
        if isinstance(first, dict):
            first = first.get("url") or first.get("href") or "?"
        elif not isinstance(first, str):
            first = "?"
        if isinstance(urls, list) and len(urls) > 1:
            first += f" (+{len(urls) - 1} more)"
        return f"[web_extract] {first} ({size:,} chars)"
    if name == "delegate_task":
        goal = _s(args, "goal")
        goal = goal[:57] + "..." if len(goal) > 60 else goal
        return f"[delegate_task] '{goal}' ({size:,} chars result)"
    if name == "execute_code":
        code = _s(args, "code")
        preview = code[:60].replace("\n", " ") + ("..." if len(code) > 60 else "")
        return f"[execute_code] `{preview}` ({lines} lines output)"
    if name in ("skill_view", "skills_list", "skill_manage"):
        return f"[{name}] name={g('name', '?')} ({size:,} chars)"
    if name == "vision_analyze":
        return f"[vision_analyze] '{_s(args, 'question')[:50]}' ({size:,} chars)"
    if name == "memory":
        return f"[memory] {g('action', '?')} on {g('target', '?')}"
    if name == "todo":
        return "[todo] updated task list"
    if name == "clarify":
        return "[clarify] asked user a question"
    if name == "text_to_speech":
        return f"[text_to_speech] generated audio ({size:,} chars)"
    if name == "cronjob":
        return f"[cronjob] {g('action', '?')}"
    if name == "process":
        return f"[process] {g('action', '?')} session={g('session_id', '?')}"
    first = "".join(f" {k}={str(v)[:40]}" for k, v in list(args.items())[:2])
    return f"[{name}]{first} ({size:,} chars result)"


def shrink_args_json(args: str, head: int = ARGS_HEAD) -> str:
    """Shorten long string values inside a JSON arguments string, keeping it valid JSON;
    arguments that are not JSON are returned unchanged (#11762)."""
    try:
        value = json.loads(args)
    except (ValueError, TypeError, RecursionError):
        return args

    def walk(v):
        if isinstance(v, str):
            return v[:head] + "...[truncated]" if len(v) > head else v
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v
    try:
        return json.dumps(walk(value), ensure_ascii=False)
    except RecursionError:      # arguments nested deeper than Python recurses (found by bench_fuzz): as they are
        return args


def dedup_key(text: str) -> str:
    return hashlib.md5(text.encode("utf-8", errors="replace")).hexdigest()[:12]


# ----------------------------------------------------------------- boundaries
@record
class Cut:
    """Where the tail starts, and every step that moved it (for the stepper)."""
    index: int
    steps: list = field(default_factory=list)    # (var, old, new, reason)
    vars: dict = field(default_factory=dict)

    def move(self, new: int, reason: str) -> None:
        if new != self.index:
            self.steps.append((self.index, new, reason))
        self.index = new


def align_forward(messages: list, i: int) -> int:
    while i < len(messages) and messages[i].get("role") == "tool":
        i += 1
    return i


def align_backward(messages: list, i: int) -> int:
    if i <= 0 or i >= len(messages):
        return i
    j = i - 1
    while j >= 0 and messages[j].get("role") == "tool":
        j -= 1
    if j >= 0 and messages[j].get("role") == "assistant" and messages[j].get("tool_calls"):
        return j
    return i


def last_user_index(messages: list, head_end: int) -> int:
    for i in range(len(messages) - 1, head_end - 1, -1):
        m = messages[i]
        if m.get("role") == "user" and not is_summary_content(m.get("content")):
            return i
    return -1


def last_assistant_index(messages: list, head_end: int) -> int:
    """The last assistant message with visible text; else the last assistant message of any kind."""
    any_ = -1
    for i in range(len(messages) - 1, head_end - 1, -1):
        m = messages[i]
        if m.get("role") != "assistant":
            continue
        if any_ < 0:
            any_ = i
        c = m.get("content")
        if isinstance(c, str) and c.strip():
            return i
        if isinstance(c, list):
            for p in c:
                if isinstance(p, dict):
                    t = p.get("text") or p.get("content")
                    if isinstance(t, str) and t.strip():
                        return i
    return any_


def turn_pair_end(messages: list, user: int) -> int:
    i = user + 1
    if i >= len(messages) or messages[i].get("role") != "assistant":
        return i
    i += 1
    while i < len(messages) and messages[i].get("role") == "tool":
        i += 1
    return i


def tail_cut(messages: list, head_end: int, budget: int, protect_last_n: int, meter: Any = None) -> Cut:
    """Walk back from the end by tokens (soft ceiling 1.5x the budget, a floor of 3-8 messages),
    then apply every anchor: tool groups, the last real user message, the last assistant reply."""
    n = len(messages)
    available = max(0, n - head_end - 1)
    floor = max(3, min(protect_last_n, MAX_TAIL_FLOOR))
    min_tail = min(floor, max(3, available - 2), available) if available > 1 else 0
    soft = int(budget * 1.5)
    acc = 0
    cut = Cut(n, vars={"tail_budget": budget, "soft_ceiling": soft, "min_tail": min_tail})
    idx = n
    for i in range(n - 1, head_end - 1, -1):
        t = budget_tokens_of(messages[i], meter)
        if acc + t > soft and (n - i) >= min_tail:
            break
        acc += t
        idx = i
    if acc <= soft:
        why = f"token walk: {acc:,} tokens fit under the soft ceiling {soft:,} (1.5 x {budget:,})"
    else:
        why = (f"token walk: the last {n - idx} message(s) hold {acc:,} tokens, over the soft ceiling {soft:,} "
               f"(1.5 x {budget:,}), kept because the tail keeps at least min_tail={min_tail}")
    cut.move(idx, why)
    if cut.index <= head_end and 0 < acc <= soft:
        acc2, idx = 0, cut.index
        for j in range(n - 1, head_end - 1, -1):
            t = budget_tokens_of(messages[j], meter)
            if acc2 + t > budget and (n - j) >= min_tail:
                idx = j
                break
            acc2 += t
            idx = j
        cut.move(idx, f"everything fit under the soft ceiling: re-walked with the plain budget {budget:,}")
    cut.vars["tail_tokens"] = acc
    fallback = n - min_tail
    cut.move(min(cut.index, fallback), f"keep at least min_tail={min_tail} messages")
    if cut.index <= head_end:
        cut.move(max(fallback, head_end + 1), "the tail swallowed the head: cut right after the head")
    cut.move(align_backward(messages, cut.index), "pulled back so an assistant(tool_calls) and its results stay together")
    # the last real user message stays in the tail (#10896), without splitting its turn pair (#22523)
    u = last_user_index(messages, head_end)
    cut.vars["last_user"] = u
    if 0 <= u < cut.index:
        adj = max(u, head_end + 1)
        if adj > u:
            cut.move(max(turn_pair_end(messages, u), head_end + 1),
                     f"last user message {u} sits at the head: its whole turn pair goes to the summary")
        else:
            cut.move(adj, f"anchor: the last user message ({u}) stays in the tail")
    # the last visible assistant reply stays in the tail (#29824)
    a = last_assistant_index(messages, head_end)
    cut.vars["last_assistant"] = a
    if 0 <= a < cut.index:
        cut.move(max(align_backward(messages, a), head_end + 1),
                 f"anchor: the last assistant reply ({a}) stays in the tail")
    cut.move(align_forward(messages, max(cut.index, head_end + 1)), "moved past tool results at the cut")
    return cut
