"""Loading a file for the window in the background (a preview of its start first), and the cyclic GC paused
while a worker builds a big long-lived result."""
from __future__ import annotations

import os
import threading
from pathlib import Path

from ..analysis import present
from ..runtime.gcpause import gc_paused


BACKGROUND_LOAD_BYTES = 4_000_000      # a file this big loads in the background (the window stays live)


INFER_LOCK = threading.Lock()         # Session._infer's cache is written by the load's worker too


# The start of a big JSONL file, shown while the whole file loads: a few screens of rows (the 10k bench
# session: 176 messages). Less to prepare and show beside the loading worker than 1 MB (578 messages): the
# open's longest stall at 10k went 80-101 -> 65-67 ms. Files whose first lines are longer are read on up to
# PREVIEW_MAX_BYTES, so that a preview still has lines.
PREVIEW_BYTES = 300_000


PREVIEW_MAX_BYTES = 1_000_000


def load_for_view(path: str, state=None, prepare=None):
    """Load a file in the background: first its start (a JSONL file cut at a line: its first messages,
    posted as a partial result so the list shows rows at once), then the whole file, with what the first
    views draw of it (block sizes, the message metadata by identity, and what ``prepare(conversation)``
    makes: ``Session._prepare``) computed here too."""
    from ..loaders import load
    if state is not None:
        preview = read_preview(path)
        if preview is not None and not state.cancel.is_set():
            made_for_view(preview)
            state.set_partial_result(preview)
    # out of the cyclic GC (see _loaded): a collection that walks 100k+ loaded objects in this thread
    # holds the interpreter for seconds, and the window with it
    with gc_paused():
        result = load(path)
        for conv in result.conversations[:1]:
            made_for_view(conv, prepare, bars=False)
    return result


def made_for_view(conv, prepare=None, bars: bool = True) -> None:
    """What the first views of a conversation draw of it, made in the load's worker: the message metadata by
    identity, the chart's block sizes (``bars``: the whole file's are made after its first result is shown,
    ``Session.prepare_lists``: ~1.2 s at 100k messages), and ``prepare(conv)`` (``Session._prepare``)."""
    conv.meta_by_identity()
    present.shown(len(conv.messages))
    if bars:
        present.size_bars(conv.history())
    if prepare is not None:
        prepare(conv)


def read_preview(path: str):
    """The conversation in the first ``PREVIEW_BYTES`` of a JSONL file, or up to ``PREVIEW_MAX_BYTES`` when its
    first two lines are longer (None for another format or when that part does not load on its own)."""
    import tempfile
    from ..loaders import load
    try:
        with open(path, "rb") as f:
            head = f.read(max(PREVIEW_BYTES, PREVIEW_MAX_BYTES))
        cut = head.rfind(b"\n", 0, PREVIEW_BYTES)
        if cut <= 0 or b"\n" not in head[:cut]:
            cut = head.rfind(b"\n")
        if cut <= 0 or not head.lstrip().startswith(b"{") or b"\n" not in head[:cut]:
            return None
        fd, tmp = tempfile.mkstemp(prefix="compactscope-preview-", suffix=Path(path).suffix or ".jsonl")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(head[:cut + 1])
            res = load(tmp)
        finally:
            os.unlink(tmp)
        conv = res.conversations[0] if res.conversations else None
        return conv if conv is not None and conv.messages else None
    except Exception:  # noqa: BLE001 - a preview is a courtesy: the real load says what is wrong
        return None


def checked_verdict(cross_check, trace):
    """A cross-check's verdict, made with the cyclic GC paused: hermes's copies every message it compares
    (copy.deepcopy), and the full collections that many new objects set off held the interpreter lock ~0.1 s
    each (UI stalls at 100k messages). The copies are dropped (by reference count) when it returns."""
    with gc_paused():
        return cross_check.run(trace)
