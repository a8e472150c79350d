"""Self-contained reports of what a compaction did: one HTML file (no network at all) or Markdown.

Pure Python, no Qt. ``build_report`` gathers the facts into a ``Report`` (what the file is, the run's
every layer with its before/after and edits, the boundary explanation, the API findings, every real and
simulated summary in full, and optionally the replay's timeline and strategy comparison);
``render_html`` and ``render_markdown`` write it to a text stream, streaming as they go.

    from compactscope.core.report import build_report, write_report
    rep = build_report(load(path), engine)
    write_report(rep, "out.html")            # or "out.md", or fmt="md"
"""
from __future__ import annotations

from .model import Report, ReplayFacts, StageFacts, SummaryText, build_report, session_report, session_request
from .html import render_html
from .markdown import render_markdown

FORMATS = ("html", "md")


def format_for(path: str, fmt: str | None = None) -> str:
    """The report format: ``fmt`` when given, else from the file name (``.md``/``.markdown`` = md)."""
    if fmt:
        if fmt not in FORMATS:
            raise ValueError(f"a report is html or md, not {fmt!r}")
        return fmt
    return "md" if str(path).lower().endswith((".md", ".markdown")) else "html"


def render(report: Report, out, fmt: str = "html") -> None:
    """Write the report to ``out`` in the run's language (``core.report.lang``: English as the renderers write it,
    else translated by the core catalogue)."""
    from .lang import localized
    stream = localized(out, fmt)
    (render_markdown if fmt == "md" else render_html)(report, stream)
    if stream is not out and hasattr(stream, "buf"):
        stream.flush()


def write_text(path, render_to) -> None:
    """Write what ``render_to(stream)`` writes to ``path`` as UTF-8, atomically (``core.safeio``: a temporary
    file beside it takes the name at the end; a symlink at ``path`` is refused; a new file gets the user's
    usual mode)."""
    from ..files.safeio import TEXT_ERRORS, atomic_path, new_file_mode
    with atomic_path(path, mode=new_file_mode(path)) as tmp:
        with open(tmp, "w", encoding="utf-8", errors=TEXT_ERRORS, newline="\n") as f:
            render_to(f)


def write_report(report: Report, path: str, fmt: str | None = None) -> str:
    """Write the report to ``path`` (``write_text``); returns the format."""
    fmt = format_for(path, fmt)
    write_text(path, lambda f: render(report, f, fmt))
    return fmt


__all__ = ["Report", "ReplayFacts", "StageFacts", "SummaryText", "build_report", "session_report", "session_request", "render_html",
           "render_markdown", "render", "write_report", "write_text", "format_for", "FORMATS"]
