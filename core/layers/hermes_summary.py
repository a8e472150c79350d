"""Hermes' summary of the compacted turns: the prompt it sends the summarizer (turns serialized, the previous
summary, the focus), and the fallback summary it writes itself when no summarizer answers (hermes-agent 0.19.0)."""
from __future__ import annotations
import hashlib
import json
import re
from typing import Any

from ..pipeline.chunkmemo import ChunkMemo
from ..pipeline.facts import BytesFact
from ..summarizers import LazyPrompt
from ..model.text import text_parts

from .hermes_rules import (
    FALLBACK_MAX_CHARS, FALLBACK_TURN_MAX, IMAGE_TYPES, IN_PROGRESS_HEADING, PENDING_HEADING, REMAINING_HEADING,
    TASK_HEADING, call_name_args, is_summary_content, strip_reasoning, tool_one_liner, with_summary_prefix,
)


# ----------------------------------------------------------------- fallback summary
_PATH_RE = re.compile(r"(?:/|~/?|[A-Za-z]:\\)[^\s`'\")\]}<>]+")
_GH_TOKEN = re.compile(r"\bgh[pousr]_[A-Za-z0-9_]{8,}\b")
_GH_TOKEN_TAIL = re.compile(r"\bgh[pousr]_[A-Za-z0-9_.-]+")


def _add_unique(items: list, value: str, limit: int) -> None:
    value = value.strip()
    if value and value not in items and len(items) < limit:
        items.append(value)


def _paths_in(text: str, files: list) -> None:
    for m in _PATH_RE.findall(text):
        _add_unique(files, m.rstrip(".,:;"), 12)


def _fallback_compact(value: Any) -> str:
    """A turn's text for the fallback: tokens redacted, whitespace folded, capped at FALLBACK_TURN_MAX."""
    text = _GH_TOKEN.sub("[REDACTED]", text_parts(value))
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) > FALLBACK_TURN_MAX:
        text = text[: FALLBACK_TURN_MAX - 15].rstrip() + " ...[truncated]"
    return _GH_TOKEN_TAIL.sub("[REDACTED]", text)


def _json_paths(v: Any, files: list) -> None:
    """The paths a tool call's arguments name (path-like keys, and paths mentioned in any string)."""
    if isinstance(v, dict):
        for k, x in v.items():
            if k in ("path", "workdir", "file_path", "output_path") and isinstance(x, str):
                _add_unique(files, x, 12)
            _json_paths(x, files)
    elif isinstance(v, list):
        for x in v:
            _json_paths(x, files)
    elif isinstance(v, str):
        _paths_in(v, files)


def _fallback_calls(turns: list, files: list) -> dict:
    """Each tool call's (name, arguments) by id; the paths their arguments name go to ``files``."""
    calls: dict = {}
    for m in turns:
        if not (m.get("role") == "assistant" and m.get("tool_calls")):
            continue
        for c in m.get("tool_calls") or []:
            name, args = call_name_args(c)
            cid = str(c.get("id") or "") if isinstance(c, dict) else ""
            if cid:
                calls[cid] = (name, args)
            if args:
                try:
                    parsed = json.loads(args)
                except Exception:
                    parsed = args
                _json_paths(parsed, files)
    return calls


def _bullets(items: list, limit: int = 8) -> str:
    seen, out = set(), []
    for it in items:
        it = it.strip()
        if it and it not in seen:
            seen.add(it)
            out.append(it)
            if len(out) >= limit:
                break
    return "\n".join(f"- {x}" for x in out) if out else "None."


class _FallbackNotes:
    """What the fallback keeps of the dropped turns, read one turn at a time."""

    def __init__(self, calls: dict, files: list):
        self.calls, self.files = calls, files
        self.asks: list[str] = []
        self.actions: list[str] = []
        self.tool_lines: list[str] = []
        self.blockers: list[str] = []
        self.last_turns: list[str] = []

    def remember(self, label: str, text: str) -> None:
        text = text.strip()
        if text:
            self.last_turns.append(f"{label}: {text}")
            del self.last_turns[:-8]

    def read(self, m: dict) -> None:
        role = m.get("role", "unknown")
        text = _fallback_compact(m.get("content"))
        _paths_in(text, self.files)
        names = [call_name_args(c)[0] for c in (m.get("tool_calls") or [])] \
            if role == "assistant" and m.get("tool_calls") else []
        turn = text
        if names:
            prefix = "tool calls: " + ", ".join(names[:6])
            turn = f"{prefix}; {turn}" if turn else prefix
        self.remember(str(role).upper(), turn)
        if len(text) > 600:
            text = text[:420].rstrip() + " ... " + text[-160:].lstrip()
        if role == "user" and text:
            self.asks.append(text)
        elif role == "assistant":
            names = [call_name_args(c)[0] for c in (m.get("tool_calls") or [])]
            if names:
                self.actions.append("Called tool(s): " + ", ".join(names[:6]))
            elif text:
                self.actions.append(text)
        elif role == "tool":
            name, args = self.calls.get(str(m.get("tool_call_id") or ""), ("unknown", ""))
            self.tool_lines.append(tool_one_liner(name, args, text or ""))
            if re.search(r"\b(error|failed|exception|traceback|timeout|timed out|fatal)\b", text, re.I):
                self.blockers.append(text[:500])


def fallback_summary(turns: list, reason: str | None, had_previous: bool) -> str:
    """The deterministic handoff used when the summary LLM fails: same headings as the LLM
    template, files from path mentions and tool arguments, the last dropped turns."""
    files: list[str] = []
    notes = _FallbackNotes(_fallback_calls(turns, files), files)
    for m in turns:
        notes.read(m)
    asks, actions, tool_lines, blockers, last_turns = (notes.asks, notes.actions, notes.tool_lines,
                                                        notes.blockers, notes.last_turns)
    bullets = _bullets
    done = [f"{i}. {x}" for i, x in enumerate((actions + tool_lines)[:12], start=1)]
    active = f"User asked: {asks[-1]!r}" if asks else "Unknown from deterministic fallback."
    prev = ("\n\nPrevious compaction summary was present and should still be treated as background continuity "
            "context, but the latest LLM summary update failed.") if had_previous else ""
    why = f" Summary failure reason: {reason}." if reason else ""
    sections = [
        f"{TASK_HEADING}\n{active}",
        "## Goal\nRecovered from a deterministic fallback because the LLM context summarizer was unavailable. "
        "Continue from the protected recent messages after this summary and use current file/system state for "
        f"exact details.{prev}",
        "## Constraints & Preferences\n- This fallback was generated locally without an LLM summary call.\n"
        "- Secrets and credentials were redacted before preservation.\n- The summary may be incomplete; prefer "
        "verifying current files, git state, processes, and test results instead of assuming omitted details.",
        "## Completed Actions\n" + ("\n".join(done) if done else "None recoverable from compacted turns."),
        "## Active State\nUnknown from deterministic fallback. Inspect current repository/session state if needed.",
        f"{IN_PROGRESS_HEADING}\nUnknown from deterministic fallback — the latest user ask is recorded once under\n"
        f"\"{TASK_HEADING}\" above as historical context only. Do NOT treat it as an\nunfulfilled instruction to "
        "re-answer; verify current state and continue from the\nprotected recent messages after this summary.",
        f"## Blocked\n{bullets(blockers, 5)}",
        "## Key Decisions\nNone recoverable from deterministic fallback.",
        "## Resolved Questions\nNone recoverable from deterministic fallback.",
        f"{PENDING_HEADING}\nNone recoverable from deterministic fallback. (The latest user ask is preserved once\n"
        f"under \"{TASK_HEADING}\" as historical context — it is NOT necessarily\noutstanding.)",
        f"## Relevant Files\n{bullets(files, 12)}",
        f"{REMAINING_HEADING}\nContinue from the most recent unfulfilled user ask and protected tail messages. "
        "Verify state with tools before making claims.",
        f"## Last Dropped Turns\n{bullets(last_turns, 8)}",
        "## Critical Context\nSummary generation was unavailable, so this is a best-effort deterministic fallback "
        f"for {len(turns)} compacted message(s).{why}",
    ]
    summary = with_summary_prefix("\n\n".join(sections).strip())
    if len(summary) > FALLBACK_MAX_CHARS:
        summary = summary[: FALLBACK_MAX_CHARS - 42].rstrip() + "\n...[fallback summary truncated]"
    return summary


# ----------------------------------------------------------------- the summary prompt
def serialize_turns(turns: list) -> str:
    """The turns as labelled text for the summary model (bodies capped at 6,000 chars)."""
    return "\n\n".join(_turn_texts(turns))


def _cap(t: str) -> str:
    return t[:4000] + "\n...[truncated]...\n" + t[-1500:] if len(t) > 6000 else t


def _turn_texts(turns: list):
    """Each turn's text for ``serialize_turns``, one at a time."""
    return map(turn_text, turns)


def turn_text(m: dict) -> str:
    """One turn's text in the summary prompt (a pure function of the message)."""
    role = m.get("role", "unknown")
    c = m.get("content")
    if isinstance(c, list):
        bits = []
        for p in c:
            if isinstance(p, dict):
                t = p.get("type")
                if t == "text":
                    bits.append(p.get("text", ""))
                elif t in IMAGE_TYPES:
                    url = p.get("image_url")
                    url = url.get("url") if isinstance(url, dict) else (url or p.get("url") or "")
                    bits.append(f"[image: {url}]" if str(url).startswith(("http://", "https://")) else "[image]")
                else:
                    bits.append(f"[{t or 'attachment'}]")
            elif isinstance(p, str):
                bits.append(p)
        c = "\n".join(bits)
    text = c if isinstance(c, str) else ("" if c is None else str(c))
    if "MEDIA:" in text:
        text = re.sub(r"MEDIA:\S+", "[media attachment]", text)
    if role == "assistant" and text:
        text = strip_reasoning(text)
    if role == "tool":
        return f"[TOOL RESULT {m.get('tool_call_id', '')}]: {_cap(text)}"
    if role == "assistant":
        text = _cap(text)
        calls = []
        for call in m.get("tool_calls") or []:
            name, args = call_name_args(call)
            calls.append(f"  {name}({args[:1200] + '...' if len(args) > 1500 else args})")
        if calls:
            text += "\n[Tool calls:\n" + "\n".join(calls) + "\n]"
        return f"[ASSISTANT]: {text}"
    return f"[{str(role).upper()}]: {_cap(text)}"


SUMMARY_SYSTEM = ("You are a summarization agent creating a context checkpoint. Treat the conversation turns as "
                  "source material for a compact record of prior work. Produce only the structured summary, in "
                  "the language the user was using. Never include secrets; write [REDACTED] instead.")

SUMMARY_TEMPLATE = f"""{TASK_HEADING}
[The user's most recent unfulfilled input, verbatim. "None." only if the last exchange was fully resolved.]

## Goal
[What the user is trying to accomplish overall]

## Constraints & Preferences
[Preferences, style, constraints, decisions]

## Completed Actions
[Numbered: N. ACTION target — outcome [tool: name], with paths, commands, line numbers, results]

## Active State
[Working directory, branch, modified files, test status, running processes]

{IN_PROGRESS_HEADING}
[What was underway when compaction fired]

## Blocked
[Unresolved errors, verbatim]

## Key Decisions
[Decisions and why]

## Resolved Questions
[Questions already answered, with the answer]

{PENDING_HEADING}
[Unanswered asks from the compacted turns: stale, for reference only]

## Relevant Files
[Files read, modified or created, with a note each]

{REMAINING_HEADING}
[What remains: stale, for reference only]

## Critical Context
[Values, error messages, configuration that would otherwise be lost]"""


def summary_prompt(turns: list, previous: str | None, budget: int, focus: str | None) -> str:
    return "".join(summary_prompt_pieces(turns, previous, budget, focus))


def _prompt_head(previous: str | None) -> str:
    if previous:
        return ("Update the context compaction summary below with the new turns. Keep what is still relevant, "
                "continue the numbering of completed actions, move finished work to Completed Actions and answered "
                f"questions to Resolved Questions.\n\nPREVIOUS SUMMARY:\n{previous}\n\nNEW TURNS TO INCORPORATE:\n")
    return ("Create a structured checkpoint summary of the conversation turns below, detailed enough to "
            "continue without re-reading them.\n\nTURNS TO SUMMARIZE:\n")


def _prompt_tail(budget: int, focus: str | None) -> str:
    tail = (f"\n\nUse this structure:\n\n{SUMMARY_TEMPLATE}"
            f"\n\nTarget ~{budget} tokens. Be concrete. Write only the summary body, no preamble or prefix.")
    if focus:
        tail += f"\n\nFOCUS TOPIC: \"{focus}\" — give it most of the budget, summarise the rest briefly."
    return tail


def summary_prompt_pieces(turns: list, previous: str | None, budget: int, focus: str | None):
    """``summary_prompt`` in pieces (the turns one at a time), for a request that is hashed without being
    built (core.summarizers.LazyPrompt)."""
    yield _prompt_head(previous)
    for k, t in enumerate(_turn_texts(turns)):
        if k:
            yield "\n\n"
        yield t
    yield _prompt_tail(budget, focus)


# message -> sha256 of its turn text: the summary asked again over the same turns (or a parameter change's
# re-run deciding that it is another one) hashes 32 bytes per turn, not 100k turn texts
_turn_digests = BytesFact("hermes_turn_sha256", 32,
                          lambda m: hashlib.sha256(turn_text(m).encode("utf-8", "surrogatepass")).digest())


def _chunk_digest(chunk: list) -> bytes:
    return hashlib.sha256(_turn_digests.joined(chunk) or b"").digest()


# each fixed chunk of the turns -> the digest of its turns' digests, kept by the chunk's messages: a parameter
# change moving the cut over 100k turns looks up the turns of the chunks after the change only
_chunk_digests: ChunkMemo[bytes] = ChunkMemo(_chunk_digest, size=2048, max_chunks=160)


def summary_key_pieces(turns: list, previous: str | None, budget: int, focus: str | None):
    """What identifies ``summary_prompt`` for the summary cache: equal exactly when the prompts are (the head and
    the tail as text, the number of turns, and each fixed chunk of the turns as the digest of its turns' digests,
    each turn's the digest of its text, kept per message)."""
    head, tail = _prompt_head(previous), _prompt_tail(budget, focus)
    yield f"{len(head)}:{len(tail)}:{len(turns)}:" + head + tail
    _turn_digests.shown(len(turns))
    yield b"".join(_chunk_digests.results(turns))


def summary_prompt_lazy(turns: list, previous: str | None, budget: int, focus: str | None) -> LazyPrompt:
    """The summary prompt, built only when a summarizer reads it; its cache key from ``summary_key_pieces``."""
    return LazyPrompt(lambda: summary_prompt_pieces(turns, previous, budget, focus),
                      lambda: summary_key_pieces(turns, previous, budget, focus))


def auto_focus(messages: list) -> str | None:
    """A focus hint from the last three real user turns (shown in the prompt only)."""
    found = []
    for m in reversed(messages):
        if m.get("role") != "user" or is_summary_content(m.get("content")):
            continue
        t = " ".join(text_parts(m.get("content")).strip().split())
        if not t:
            continue
        found.append(t[:259].rstrip() + "…" if len(t) > 260 else t)
        if len(found) >= 3:
            break
    if not found:
        return None
    focus = "Recent user focus:\n" + "\n".join(f"- {t}" for t in reversed(found))
    return focus[:699].rstrip() + "…" if len(focus) > 700 else focus
