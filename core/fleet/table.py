"""The fleet's sessions as a table: columns, values (text to show, number to sort by), filters, and
which call a row opens in the debugger. Qt-free: ``widgets/fleet_view.py`` adapts it to a Qt model.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

import numpy as np

from .config import version_key
from .model import FleetData, Reevaluation, fmt_num


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    tip: str
    numeric: bool = True
    call: bool = False          # a model call: double-clicking this cell opens the session there


COLUMNS = [
    Column("session", "session", "the session file (under the fleet's common folder)", numeric=False),
    Column("version", "version", "the highest Claude Code version in the file", numeric=False),
    Column("calls", "calls", "model calls replayed"),
    Column("real", "real", "compactions the file records"),
    Column("first_real", "first real auto", "the call before which the first automatic compaction happened",
           call=True),
    Column("first_sim", "first replayed", "the replay's first automatic summary, at the session's own threshold",
           call=True),
    Column("distance", "distance", "first replayed - first real automatic compaction (calls)"),
    Column("first_at", "first at T", "the first compaction at the slider's threshold", call=True),
    Column("at", "compactions at T", "compactions at the slider's threshold"),
    Column("sent_at", "tokens at T", "context tokens sent over the session at the slider's threshold"),
    Column("peak", "peak real", "the largest real context (usage)"),
    Column("threshold", "replayed at", "the threshold the session was replayed with (inferred from it)"),
    Column("error", "error", "why the file could not be loaded or replayed", numeric=False),
]
KEYS = [c.key for c in COLUMNS]
FILTERS = {"all": "every session", "real": "with a real compaction", "differ": "replay and reality differ by "
           "more than 2 calls", "whatif": "compacting at T", "errors": "with an error"}


class SessionTable:
    """Rows = sessions of ``data``; the ``*_at`` columns follow ``reeval`` (set by the threshold slider)."""

    def __init__(self, data: FleetData):
        self.data = data
        paths = [p or "" for p in data.paths]
        self.root = os.path.commonpath(paths) if len(paths) > 1 else os.path.dirname(paths[0]) if paths else ""
        self.names = [os.path.relpath(p, self.root) if self.root else p for p in paths]
        self.versions = data.strings("version")
        self.inferred = data.strings("inferred")
        self.peak = data.column("peak_context_tokens")
        formats, models = data.strings("format"), data.strings("model")
        self._hay = [" ".join(str(x or "") for x in (n, v, e, f, m)).lower()
                     for n, v, e, f, m in zip(self.names, self.versions, data.errors, formats, models)]
        self.reeval: Reevaluation | None = None

    def __len__(self) -> int:
        return self.data.n

    def set_reevaluation(self, r: Reevaluation | None) -> None:
        self.reeval = r

    def sort_value(self, i: int, key: str):
        """A number (or text) to sort by; missing values sort last."""
        d, r = self.data, self.reeval
        if key == "session":
            return self.names[i]
        if key == "version":
            return _version_key(self.versions[i])
        if key == "error":
            return d.errors[i] or ""
        v = self._number(i, key)
        return float("inf") if v is None else float(v)

    def _number(self, i: int, key: str):
        d, r = self.data, self.reeval
        if key == "calls":
            return int(d.calls[i])
        if key == "real":
            return int(d.real_compactions[i])
        if key == "first_real":
            return int(d.first_real[i]) if d.first_real[i] >= 0 else None
        if key == "first_sim":
            return int(d.first_sim[i]) if d.first_sim[i] >= 0 else None
        if key == "distance":
            return int(d.first_sim[i] - d.first_real[i]) if d.first_sim[i] >= 0 and d.first_real[i] >= 0 else None
        if key == "first_at":
            return int(r.first_call[i]) if r is not None and r.first_call[i] >= 0 else None
        if key == "at":
            return int(r.compactions[i]) if r is not None and d.calls[i] > 0 else None
        if key == "sent_at":
            return float(r.tokens_sent[i]) if r is not None and np.isfinite(r.tokens_sent[i]) else None
        if key == "peak":
            return float(self.peak[i]) if np.isfinite(self.peak[i]) else None
        if key == "threshold":
            return float(d.thresholds[i]) if np.isfinite(d.thresholds[i]) else None
        raise KeyError(key)

    def text(self, i: int, key: str) -> str:
        if key == "session":
            return self.names[i]
        if key == "version":
            return self.versions[i] or ""
        if key == "error":
            return self.data.errors[i] or ""
        v = self._number(i, key)
        if v is None:
            return ""
        if key == "distance":
            return f"{v:+d}"
        if key in ("sent_at", "peak", "threshold"):
            return fmt_num(v)
        return f"{v:,}"

    def tooltip(self, i: int) -> str:
        d = self.data
        lines = [d.paths[i]]
        inferred = self.inferred[i]
        if inferred:
            try:
                for k, why in (json.loads(inferred).get("reasons") or {}).items():
                    lines.append(f"{k}: {why}")
            except ValueError:
                pass
        if d.errors[i]:
            lines.append(d.errors[i])
        return "\n".join(lines)

    def matches(self, i: int, text: str = "", kind: str = "all") -> bool:
        """Does row i pass the filter: ``text`` in its file, version, format or error, and ``kind``
        (one of ``FILTERS``)?"""
        d = self.data
        if kind == "real" and d.real_compactions[i] <= 0:
            return False
        if kind == "errors" and not d.errors[i]:
            return False
        if kind == "differ":
            if not (d.first_sim[i] >= 0 and d.first_real[i] >= 0 and abs(d.first_sim[i] - d.first_real[i]) > 2):
                return False
        if kind == "whatif" and not (self.reeval is not None and self.reeval.compactions[i] > 0):
            return False
        if text:
            hay = self._hay[i]
            return all(w in hay for w in text.lower().split())
        return True

    def open_call(self, i: int, key: str | None = None) -> int:
        """The call a double-click opens: the clicked call column's, else the first real automatic
        compaction, else the replay's first summary, else the first call at T, else 0."""
        if key is not None:
            col = COLUMNS[KEYS.index(key)] if key in KEYS else None
            if col is not None and col.call:
                v = self._number(i, key)
                if v is not None:
                    return int(v)
        for k in ("first_real", "first_sim", "first_at"):
            v = self._number(i, k)
            if v is not None:
                return int(v)
        return 0

    def open_spec(self, i: int, key: str | None = None) -> dict:
        """Everything the window needs to open row i where it matters: path, call, strategy and the
        parameters it was replayed with (its inferred defaults and the run's --set)."""
        d = self.data
        try:
            params = json.loads(d.strings("params")[i] or "{}")
        except ValueError:
            params = {}
        return {"path": d.paths[i], "call": self.open_call(i, key), "strategy": d.strings("strategy")[i]
                or d.config.strategy, "params": params}


def _version_key(v):
    return (1, ()) if not v else (0, tuple(version_key(str(v))))
