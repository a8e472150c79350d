"""Files that sit beside transcripts but are none: a text document (a README, notes) and an HTTP request log
(one request a line, as a proxy or a scripted server wrote it: ``{request_index, path, headers?, body, ...}``).
``kind(probe)`` says which, in words ("" when the file may be a transcript); ``core.loaders.load`` refuses
them with that sentence instead of guessing a format. Told by content, never by the file's name."""
from __future__ import annotations

from .base import Probe

TEXT_DOCUMENT = "a text document (no JSON, JSONL, SQLite or zip content), not a transcript"
REQUEST_LOG = ("an HTTP request log (one request body a line, with its index), not a session transcript: "
               "open the session file the agent wrote beside it (Gemini CLI: session-*.jsonl; Codex: rollout-*.jsonl)")


def _request_record(x) -> bool:
    return isinstance(x, dict) and isinstance(x.get("request_index"), int) and isinstance(x.get("body"), dict)


def kind(probe: Probe) -> str:
    """Why the probed file is not a transcript, or "" when it may be one."""
    head = probe.head
    if head.startswith((b"PK\x03\x04", b"SQLite format 3\x00")):
        return ""
    if not probe.starts_with(b"{", b"["):
        return TEXT_DOCUMENT
    lines = [x for x in probe.first_json_lines(3) if x is not None]
    if not lines and probe.starts_with(b"{"):
        v = probe.first_line_value()
        lines = [v] if v is not None else []
    if lines and all(_request_record(x) for x in lines):
        return REQUEST_LOG
    return ""
