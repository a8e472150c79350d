"""The fleet's sessions as a table: columns, values (text to show, number to sort by), filters, and
which call a row opens in the debugger. Qt-free: ``widgets/fleet_view.py`` adapts it to a Qt model.
"""
from __future__ import annotations

import json
import os

import numpy as np

from ..runtime.record import record
from .config import version_key
from .model import FleetData, Reevaluation, fmt_num


@record(frozen=True)
class Column:
    key: str
    title: str
    tip: str
    numeric: bool = True
    call: bool = False          # a model call: double-clicking this cell opens the session there


COLUMNS = [
    Column("session", "session", "the session file (under the fleet's common folder), and which of its sessions "
           "(an Inspect sample, a hermes chain) when it holds several", numeric=False),
    Column("strategy", "strategy", "the strategy it was replayed with (the file's own pipeline unless --strategy "
           "named one)", numeric=False),
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
    Column("error", "note", "why the file could not be loaded or replayed, why the strategy did not replay it, "
           "or the row that holds the same session (the figures count it once)", numeric=False),
]
KEYS = [c.key for c in COLUMNS]
FILTERS = {"all": "every session", "real": "with a real compaction", "differ": "replay and reality differ by "
           "more than 2 calls", "whatif": "compacting at T", "errors": "with an error",
           "left_out": "left out of the figures (duplicate, not replayed)"}


class SessionTable:
    """Rows = every row of ``data`` (sessions, duplicates, errors); the ``*_at`` columns follow ``reeval``
    (set by the threshold slider) for the rows of the group it was made for (``set_reevaluation``)."""

    def __init__(self, data: FleetData):
        self.data = data
        paths = [p or "" for p in data.paths]
        self.root = os.path.commonpath(paths) if len(set(paths)) > 1 else os.path.dirname(paths[0]) if paths else ""
        samples = data.strings("sample")
        self.names = [(os.path.relpath(p, self.root) if self.root else p) + (f" [{s}]" if s else "")
                      for p, s in zip(paths, samples)]
        self.versions = data.strings("version")
        self.strategies = data.strings("strategy")
        self.inferred = data.strings("inferred")
        self.peak = data.column("peak_context_tokens")
        self.notes = [self._note(i) for i in range(data.n)]
        formats, models = data.strings("format"), data.strings("model")
        self._hay = [" ".join(str(x or "") for x in (n, v, e, f, m, st)).lower()
                     for n, v, e, f, m, st in zip(self.names, self.versions, self.notes, formats, models,
                                                  self.strategies)]
        self.reeval: Reevaluation | None = None
        self._pos: dict = {}         # row -> its position in the re-evaluated group

    def _note(self, i: int) -> str:
        d = self.data
        if d.errors[i]:
            return d.errors[i]
        if d.not_replayed[i]:
            return f"not replayed: {d.not_replayed[i]}"
        if d.duplicate_of[i]:
            path, _, k = d.duplicate_of[i].rpartition("#")
            name = os.path.relpath(path, self.root) if self.root and path else path
            return f"the same session as {name}" + (f" #{k}" if k not in ("", "0") else "") + " (counted there)"
        return ""

    def __len__(self) -> int:
        return self.data.n

    def set_reevaluation(self, r: Reevaluation | None, group: FleetData | None = None) -> None:
        """``r`` made over ``group`` (a ``FleetData.groups`` subset; None: over ``data`` itself)."""
        self.reeval = r
        self._pos = {} if group is None else {int(j): k for k, j in enumerate(group.index)}

    def _at(self, i: int) -> int | None:
        """Row ``i``'s position in the re-evaluation, None when it is not part of it."""
        if self.reeval is None:
            return None
        if not self._pos:
            return i if i < len(self.reeval.compactions) else None
        return self._pos.get(i)

    def sort_value(self, i: int, key: str):
        """A number (or text) to sort by; missing values sort last."""
        if key == "session":
            return self.names[i]
        if key == "version":
            return _version_key(self.versions[i])
        if key == "error":
            return self.notes[i]
        if key == "strategy":
            return self.strategies[i] or ""
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
        if key in ("first_at", "at", "sent_at"):
            j = self._at(i)
            if j is None or r is None:
                return None
            if key == "first_at":
                return int(r.first_call[j]) if r.first_call[j] >= 0 else None
            if key == "at":
                return int(r.compactions[j]) if d.calls[i] > 0 else None
            return float(r.tokens_sent[j]) if np.isfinite(r.tokens_sent[j]) else None
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
        if key == "strategy":
            return self.strategies[i] or ""
        if key == "error":
            return self.notes[i]
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
        if self.notes[i]:
            lines.append(self.notes[i])
        return "\n".join(lines)

    def matches(self, i: int, text: str = "", kind: str = "all") -> bool:
        """Does row i pass the filter: ``text`` in its file, version, format or error, and ``kind``
        (one of ``FILTERS``)?"""
        d = self.data
        if kind == "real" and d.real_compactions[i] <= 0:
            return False
        if kind == "errors" and not d.errors[i]:
            return False
        if kind == "left_out" and not (d.duplicate_of[i] or d.not_replayed[i]):
            return False
        if kind == "differ":
            if not (d.first_sim[i] >= 0 and d.first_real[i] >= 0 and abs(d.first_sim[i] - d.first_real[i]) > 2):
                return False
        if kind == "whatif":
            j = self._at(i)
            if j is None or self.reeval is None or not self.reeval.compactions[j] > 0:
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
        return {"path": d.paths[i], "conversation": d.conversations[i], "call": self.open_call(i, key),
                "strategy": d.strings("strategy")[i] or d.config.strategy, "params": params}


def _version_key(v):
    return (1, ()) if not v else (0, tuple(version_key(str(v))))
