"""Files that lie beside transcripts and are none: told apart by content, so a folder of sessions can be
opened or enumerated without a list of names.

* **a request log**: JSON lines, each one HTTP request a fake or recording server received
  (``{request_index, body, ...}``: the body is what the agent sent, e.g. the ``requests.jsonl`` beside a
  Gemini CLI or Codex session). It is the ground truth of what the agent sent, not a session: loading one
  says so, and names what to open instead;
* **documentation**: text with no JSON, SQLite or zip content (a README, a manifest).

``not_a_transcript(path)`` answers which (None for anything else); as a loader (the last in the detection
order) a request log is refused with that sentence.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from .base import LoadError, Probe, read_probe

FORMAT = "request-log"
REQUEST_LOG = "request log"
DOCUMENTATION = "documentation"


def _is_request(rec: Any) -> bool:
    return isinstance(rec, dict) and isinstance(rec.get("request_index"), int) and isinstance(rec.get("body"), dict)


def sniff(probe: Probe) -> bool:
    if not probe.starts_with(b"{"):
        return False
    return _is_request(probe.first_line_value())


def _is_documentation(probe: Probe) -> bool:
    head = probe.head
    if not head or probe.starts_with(b"{", b"[") or head.startswith((b"SQLite format 3\x00", b"PK\x03\x04")):
        return False
    if b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as e:
        return len(head) - e.start < 4 and len(head) < probe.size     # a character cut by the probe's end
    return True


def not_a_transcript(path: str | Path) -> str | None:
    """``"request log"`` or ``"documentation"`` for a file that is known not to be a transcript, else None."""
    try:
        probe = read_probe(path)
    except LoadError:
        return None
    if sniff(probe):
        return REQUEST_LOG
    if _is_documentation(probe):
        return DOCUMENTATION
    return None


def load(probe: Probe):
    raise LoadError(str(probe.path), 1, "a request log (one HTTP request the agent sent a line, as a fake or "
                                        "recording server writes it), not a session: open the session file beside "
                                        "it (Gemini CLI: session-*.jsonl; Codex: rollout-*.jsonl)")
