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

from .model import Report, ReplayFacts, StageFacts, SummaryText, build_report
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
    (render_markdown if fmt == "md" else render_html)(report, out)


def write_report(report: Report, path: str, fmt: str | None = None) -> str:
    """Write the report to ``path`` (atomically: a temporary file renamed at the end); returns the format."""
    import os
    import tempfile
    fmt = format_for(path, fmt)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".report-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="replace", newline="\n") as f:
            render(report, f, fmt)
        umask = os.umask(0o022)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)        # mkstemp makes it private; a report is an ordinary file
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return fmt


__all__ = ["Report", "ReplayFacts", "StageFacts", "SummaryText", "build_report", "render_html",
           "render_markdown", "render", "write_report", "format_for", "FORMATS"]
