"""Loaders: a file in, a ``LoadResult`` (one or more ``Conversation``) out.

The format is detected from the content, never the file extension. One module
per format; each exposes ``FORMAT`` (its name), ``sniff(probe) -> bool`` and
``load(probe) -> LoadResult``. ``load(path)`` tries them in order, then makes what
no reader or writer could handle valid (``base.normalise_result``: lone surrogates, NaN,
huge integers, over-deep nesting), reporting each message it touched. The source
file is only ever opened for reading, and only when it is a regular file.
"""
from __future__ import annotations

import importlib
from typing import NoReturn
from pathlib import Path

from ..model.conversation import LoadResult
from ..runtime.gcpause import gc_paused_load
from .base import JSONDecodeError, LoadError, Probe, loads_lenient, normalise_result, read_json_document, read_probe

# Tried in order: the most specific formats first.
_MODULES = [
    "codex",
    "claude_code",
    "recording",
    "inspect",
    "hermes_db",
    "gemini_jsonl",
    "gemini",
    "openai_chat",
    "anthropic_messages",
]


def _loaders():
    for name in _MODULES:
        try:
            yield importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as e:
            if e.name and e.name.endswith(f"loaders.{name}"):
                continue   # not built yet
            raise


def detect(path: str | Path) -> str:
    """The name of the format of the file at ``path``; LoadError when none fits."""
    probe = read_probe(path)
    fmt = sniff_format(probe)
    if fmt is None:
        raise LoadError(str(path), 0, probe.describe_unknown())
    return fmt


def sniff_format(probe: Probe) -> str | None:
    """The name of the format the first bytes in ``probe`` show (the loader ``load`` would pick), or None."""
    for mod in _loaders():
        if mod.sniff(probe):
            return mod.FORMAT
    return None


def not_transcript(path: str | Path) -> str:
    """Why the file at ``path`` is no transcript (a text document, an HTTP request log), "" when it may be one."""
    from .side_files import kind
    return kind(read_probe(path))


def load(path: str | Path) -> LoadResult:
    """Load any supported file. Raises ``LoadError`` (with file and line) and nothing else."""
    probe = read_probe(path)
    probe.keep_document = True          # a one-line document's first look is its read (``Probe.take_document``)
    _refuse_side_file(probe)
    for mod in _loaders():
        if mod.sniff(probe):
            if not getattr(mod, "TAKES_PROBED_DOCUMENT", False):
                probe.take_document()     # (let go: this loader reads the file its own way)
            try:
                with gc_paused_load():
                    result = mod.load(probe)
                    probe.take_document()
                    normalise_result(result)
                return result
            except LoadError:
                raise
            except (MemoryError, RecursionError) as e:
                raise LoadError(str(path), 0, f"the file is too large or too deeply nested to load "
                                              f"({type(e).__name__})") from None
            except Exception as e:  # a loader bug must still not show the user a traceback
                raise LoadError(str(path), 0, f"could not read it as {mod.FORMAT}: {type(e).__name__}: {e}") from e
    _raise_unknown(probe)


def _refuse_side_file(probe: Probe) -> None:
    from .side_files import REQUEST_LOG, kind
    if kind(probe) == REQUEST_LOG:
        raise LoadError(str(probe.path), 0, REQUEST_LOG)


def _raise_unknown(probe: Probe) -> NoReturn:
    """No loader took the file: say where its JSON breaks, if it does, else what was expected."""
    if probe.starts_with(b"{", b"[") and probe.size <= 64 * 1024 * 1024:
        first = probe.first_json_lines(3)
        if not first or first[0] is None:
            read_json_document(probe.path)   # raises LoadError with line and column when broken
        elif len(first) < 3 or None in first:
            # JSON lines, too few or too broken to tell the format: name the first broken line
            lines = probe.head.split(b"\n")
            if len(probe.head) < probe.size:
                lines = lines[:-1]
            for n, raw in enumerate(lines, 1):
                if raw.strip():
                    try:
                        loads_lenient(raw)
                    except (RecursionError, *JSONDecodeError):
                        raise LoadError(str(probe.path), n, "broken JSON on this line, and the lines before it "
                                        "are too few to tell the format: " + probe.describe_unknown()) from None
    raise LoadError(str(probe.path), 0, probe.describe_unknown())


__all__ = ["load", "detect", "sniff_format", "not_transcript", "LoadError", "Probe", "read_probe"]
