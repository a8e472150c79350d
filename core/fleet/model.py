"""A fleet's results, read back for the view and the report, and a threshold re-evaluated over the
whole fleet from the stored series, without replaying (numpy, vectorised across sessions).

The re-evaluation model (docs/fleet.md): for a session, ``S[k]`` (``series_context``) is what the
threshold would have been compared with at call ``k`` had no summary been made. With a threshold
``T`` the context before the check is ``S[k] - base``; the first call where it reaches ``T`` (or
where the user ran ``/compact``) compacts, and the context drops to ``P``, where the replay's summary
of the same rank left it (``post_levels``; beyond those the session's median, else the fleet's):
``base = S[k] - P``. At the replayed thresholds this reproduces the replay's summaries; at another
threshold it answers "what would T do" without a replay.

All sessions are searched at once: the series of all sessions are laid end to end, each made
non-decreasing (its running maximum) and lifted by ``session index x 2**40``, so one
``np.searchsorted`` finds every active session's next compaction; the loop runs once per
compaction of the busiest session, not once per call.
"""
from __future__ import annotations

import json
import os

import numpy as np

from ..runtime.record import record
from .config import FleetConfig
from .store import read_meta

LIFT = np.int64(1) << np.int64(40)
POST_CAP = 0.8          # a summary leaves at most this share of the threshold (else it would fire again at once)


@record
class Reevaluation:
    threshold: float
    compactions: np.ndarray      # per session: compactions at the threshold (automatic + the user's /compact)
    first_call: np.ndarray       # per session: the first automatic one's call, -1 when none
    distance: np.ndarray         # per session: first_call - first real automatic call (float, nan when either is missing)
    tokens_sent: np.ndarray      # per session: context tokens summed over the calls (float, nan without calls)
    pre_tokens: np.ndarray       # every automatic compaction: the context that crossed the threshold
    fired_sessions: int          # sessions with at least one compaction
    per_session: bool = False    # each session at its own replayed threshold (``threshold`` is their median)

    @property
    def total_compactions(self) -> int:
        return int(self.compactions.sum())


def _flat(col, fill) -> tuple[np.ndarray, np.ndarray]:
    """A list column as (offsets, values): row i is values[offsets[i]:offsets[i + 1]] (int64, nulls = fill)."""
    lists = col.combine_chunks() if hasattr(col, "combine_chunks") else col
    offsets = np.asarray(lists.offsets.to_numpy(), dtype=np.int64)
    values = lists.values.slice(offsets[0], offsets[-1] - offsets[0]) if len(lists) else lists.values
    vals = _filled(values, np.int64, fill) if len(values) else np.zeros(0, dtype=np.int64)
    return offsets - offsets[0], vals


def _filled(col, dtype, fill):
    """A (chunked) arrow column as a numpy array of ``dtype``, nulls replaced by ``fill``."""
    import pyarrow as pa
    import pyarrow.compute as pc
    if isinstance(fill, float) and np.isnan(fill):
        col = pc.cast(col, pa.float64())
    return np.asarray(pc.fill_null(col, fill).to_numpy(zero_copy_only=False), dtype=dtype)


class CallSeries:
    """Every session's per-call series laid end to end (session i is ``[starts[i], ends[i])``): the context ``S``,
    its running maximum ``M`` and that lifted per session ``G``, the real context, the positions of the manual
    compactions and each replay summary's post level."""

    def __init__(self, lists: dict, n: int):
        offsets, self.S = _flat(lists["series_context"], 0)
        self.starts, self.ends = offsets[:-1], offsets[1:]
        self.sid = np.repeat(np.arange(n, dtype=np.int64), self.ends - self.starts)
        self.M = self._running_max(self.S)
        self.G = self.M + self.sid * LIFT
        _, self.real = _flat(lists["series_real"], -1)
        m_off, m_vals = _flat(lists["manual_calls"], 0)
        m_sid = np.repeat(np.arange(n, dtype=np.int64), m_off[1:] - m_off[:-1])
        self.manual_pos = self.starts[m_sid] + m_vals           # flat positions of the /compact calls
        self.m_starts, self.m_ends = m_off[:-1], m_off[1:]
        p_off, self.post_flat = _flat(lists["post_levels"], 0)  # each replay summary's post level, in order
        self.p_starts, self.p_counts = p_off[:-1], p_off[1:] - p_off[:-1]

    def _running_max(self, S: np.ndarray) -> np.ndarray:
        """Per-session running maximum of S (sessions laid end to end)."""
        if not len(S):
            return S.copy()
        # lift each session above the previous one's maximum, take one running max, lower again
        span = np.int64(max(int(S.max()) - min(int(S.min()), 0) + 1, 1))
        lifted = S - min(int(S.min()), 0) + self.sid * span
        return np.maximum.accumulate(lifted) - self.sid * span + min(int(S.min()), 0)


class FleetData:
    """Columns of a results file as numpy arrays, plus the flattened series."""

    def __init__(self, path: str, meta: dict, sessions, compactions, lists: dict, label: str | None = None,
                 index: np.ndarray | None = None):
        """``sessions``: the flat columns (a pyarrow Table); ``compactions``: the flat compactions table;
        ``lists``: the list columns (``series_context``, ``series_real``, ``manual_calls``, ``post_levels``);
        ``label``/``index``: a group's strategy and its rows' positions in the whole file (``groups``)."""
        self.path = path
        self.meta = meta
        self.config = FleetConfig.from_json(meta.get("config") or {})
        self.table = sessions                                  # pyarrow Table of the flat columns
        self.lists = lists
        self.n = sessions.num_rows
        self.label = label
        self.index = np.arange(self.n, dtype=np.int64) if index is None else index
        col = sessions.column
        self.paths = col("path").to_pylist()
        self.conversations = [int(c or 0) for c in self.strings("conversation")]
        self.errors = col("error").to_pylist()
        self.failed = np.array([e is not None for e in self.errors], dtype=bool)
        self.duplicate_of = self.strings("duplicate_of")
        self.not_replayed = self.strings("not_replayed")
        # the rows the figures count: replayed, and each session once (a duplicate's session is its original's)
        self.ok = ~self.failed & np.array([d is None and n is None for d, n in zip(self.duplicate_of,
                                                                                 self.not_replayed)], dtype=bool)
        self.calls = _filled(col("calls"), np.int64, 0)
        self.first_real = _filled(col("first_real_auto_call"), np.int64, -1)
        self.first_sim = _filled(col("first_simulated_call"), np.int64, -1)
        self.real_compactions = _filled(col("real_compactions"), np.int64, 0)
        self.sim_compactions = _filled(col("sim_compactions"), np.int64, 0)
        self.total_input = _filled(col("total_input_tokens"), np.float64, np.nan)
        self.sim_tokens = _filled(col("sim_tokens_sent"), np.float64, np.nan)
        self.thresholds = _filled(col("threshold"), np.float64, np.nan)
        units = [u for u, ok in zip(col("threshold_unit").to_pylist(), self.ok) if u and ok]
        self.unit = max(set(units), key=units.count) if units else "tokens"
        self.post_known = _filled(col("post_compaction"), np.float64, np.nan)
        self.series = CallSeries(lists, self.n)
        # the compactions of the rows the figures count
        counted = {(p, c) for p, c, ok in zip(self.paths, self.conversations, self.ok) if ok}
        keep = [(p, int(c or 0)) in counted for p, c in zip(compactions.column("path").to_pylist(),
                                                            compactions.column("conversation").to_pylist())]
        self.comp = compactions.filter(np.array(keep, dtype=bool)) if len(keep) and not all(keep) else compactions
        self.all_comp = compactions

    # ---------------------------------------------------------------- groups
    @property
    def strategy(self) -> str:
        """The strategy these rows were replayed with: a group's own, the one all counted rows share, else
        the run's --strategy (or "own pipelines" when each file had its own)."""
        if self.label:
            return self.label
        names = {s for s, ok in zip(self.strings("strategy"), self.ok) if ok and s}
        return names.pop() if len(names) == 1 else (self.config.strategy or "own pipelines")

    def groups(self) -> list["FleetData"]:
        """The counted rows by the strategy they were replayed with (so Inspect's 4k compactions are never
        mixed with Claude Code's 155k ones), the largest group first; one group when all rows share one."""
        names = self.strings("strategy")
        counts: dict = {}
        for s, ok in zip(names, self.ok):
            if ok and s:
                counts[s] = counts.get(s, 0) + 1
        order = sorted(counts, key=lambda s: (-counts[s], s))
        return [self.subset(np.array([ok and s == name for s, ok in zip(names, self.ok)], dtype=bool), name)
                for name in order]

    def subset(self, mask: np.ndarray, label: str | None = None) -> "FleetData":
        """The rows of ``mask`` as a FleetData of their own (``index``: their positions in this one's file)."""
        import pyarrow as pa
        m = pa.array(mask)
        rows = {(p, c) for p, c, k in zip(self.paths, self.conversations, mask) if k}
        keep = [(p, int(c or 0)) in rows for p, c in zip(self.all_comp.column("path").to_pylist(),
                                                         self.all_comp.column("conversation").to_pylist())]
        return FleetData(self.path, self.meta, self.table.filter(m), self.all_comp.filter(pa.array(keep, pa.bool_())),
                         {n: v.filter(m) for n, v in self.lists.items()}, label or self.label, self.index[mask])

    def row_name(self, i: int) -> str:
        """``PATH#K`` (``duplicate_of``'s form) of row ``i``."""
        from .identity import row_id
        return row_id(self.paths[i], self.conversations[i])

    # ---------------------------------------------------------------- loading
    LISTS = ("series_context", "series_real", "manual_calls", "post_levels")

    @classmethod
    def load(cls, path: str | os.PathLike) -> "FleetData":
        import pyarrow.parquet as pq
        from .store import NESTED_COLUMNS, read_compactions
        meta = read_meta(path)
        f = pq.ParquetFile(str(path))
        nested = {n for n, _, _ in NESTED_COLUMNS}
        flat = [n for n in f.schema_arrow.names if n not in nested]
        present = [n for n in cls.LISTS if n in f.schema_arrow.names]
        t = f.read(columns=flat + present)
        import pyarrow as pa
        empty = pa.array([[]] * t.num_rows, type=pa.list_(pa.int32()))     # a column an older file lacks
        lists = {n: t.column(n) if n in present else empty for n in cls.LISTS}
        return cls(str(path), meta, t.select(flat), read_compactions(path), lists)

    # ---------------------------------------------------------------- derived
    @property
    def runs(self) -> list[dict]:
        """The strategies of the file: the main run and each --compare run (label, key)."""
        return [{"label": self.strategy, "key": ""}] + [{"label": r.label, "key": r.key}
                                                               for r in self.config.compare]

    def column(self, name: str, fill=np.nan, dtype=np.float64) -> np.ndarray:
        if name not in self.table.column_names:
            return np.full(self.n, fill, dtype=dtype)
        return _filled(self.table.column(name), dtype, fill)

    def strings(self, name: str) -> list:
        if name not in self.table.column_names:
            return [None] * self.n
        return self.table.column(name).to_pylist()

    def post_levels(self, threshold) -> np.ndarray:
        """P per session: its replay's post-compaction size; the fleet's median where the replay never
        summarised; capped at POST_CAP x the threshold (a number, or one per session)."""
        post = self.post_known.copy()
        known = post[~np.isnan(post)]
        thr = np.broadcast_to(np.asarray(threshold, dtype=np.float64), (self.n,))
        post[np.isnan(post)] = float(np.median(known)) if len(known) else np.nan
        post = np.where(np.isnan(post), 0.25 * thr, post)
        return np.minimum(post, POST_CAP * thr).astype(np.int64)

    def default_threshold(self) -> float:
        t = self.thresholds[self.ok & ~np.isnan(self.thresholds)]
        return float(np.median(t)) if len(t) else (167_000.0 if self.unit == "tokens" else 50_000.0)

    def whatif_default(self) -> float:
        """The what-if threshold shown when none is given: a round number a little below the median threshold
        the sessions were replayed at (150k for Claude Code's 155k-167k, 50k for hermes' 54,400, 3k for 4,000)."""
        return round_below(0.97 * self.default_threshold())

    def reevaluate(self, threshold) -> Reevaluation:
        """Every session at ``threshold``, from the series: one number for the whole fleet, or one per
        session (``self.thresholds``: each at the threshold it was replayed with; a session without one
        never compacts automatically)."""
        per_session = np.ndim(threshold) > 0
        thr = np.broadcast_to(np.asarray(threshold, dtype=np.float64), (self.n,))
        T = np.where(np.isnan(thr), np.iinfo(np.int64).max // 4, thr).astype(np.int64)
        n = self.n
        S, G = self.series.S, self.series.G
        starts, ends = self.series.starts, self.series.ends
        P = self.post_levels(np.where(np.isnan(thr), 0.0, thr))
        base = np.zeros(n, dtype=np.int64)
        pos = starts.copy()
        mptr = self.series.m_starts.copy()
        count = np.zeros(n, dtype=np.int64)
        first = np.full(n, -1, dtype=np.int64)
        fire_pos, fire_delta, pre = [], [], []
        active = np.nonzero(ends > starts)[0]
        big = np.int64(np.iinfo(np.int64).max)
        n_manual = len(self.series.manual_pos)
        while len(active):
            idx = np.searchsorted(G, active * LIFT + np.minimum(base[active] + T[active], LIFT - 1),
                                  side="left")     # the first call where S - base >= T
            idx = np.maximum(idx, pos[active])
            has_m = mptr[active] < self.series.m_ends[active]
            mpos = np.where(has_m, self.series.manual_pos[np.minimum(mptr[active], max(n_manual - 1, 0))], big) \
                if n_manual else np.full(len(active), big)
            ev = np.minimum(idx, mpos)
            fire = ev < ends[active]
            a, e = active[fire], ev[fire]
            manual = mpos[fire] == e
            before = S[e] - base[a]
            # the replay's own post level for this compaction (its k-th summary), else the session's median
            k = count[a]
            own = k < self.series.p_counts[a]
            post = P[a].copy()
            if own.any():
                post[own] = np.minimum(self.series.post_flat[self.series.p_starts[a[own]] + k[own]], (POST_CAP * T[a[own]]))
            new_base = S[e] - post
            fire_pos.append(e)
            fire_delta.append(new_base - base[a])
            pre.append(before[~manual])
            base[a] = new_base
            count[a] += 1
            auto_first = (~manual) & (first[a] < 0)
            first[a[auto_first]] = e[auto_first] - starts[a[auto_first]]
            pos[a] = e + 1
            mptr[a] += manual
            active = a
        # tokens sent: S minus the base in force at each call
        inc = np.zeros(len(S), dtype=np.int64)
        if fire_pos:
            fp = np.concatenate(fire_pos)
            inc[fp] = np.concatenate(fire_delta)
        cs = np.cumsum(inc)
        before_start = np.where(starts > 0, cs[np.maximum(starts - 1, 0)], 0) if len(S) else np.zeros(n, np.int64)
        base_at = cs - np.repeat(before_start, ends - starts) if len(S) else cs
        sent = (S - base_at).astype(np.float64)
        tokens = np.full(n, np.nan)
        nonempty = ends > starts
        if nonempty.any():
            tokens[nonempty] = np.add.reduceat(sent, starts[nonempty])
        dist = np.where((first >= 0) & (self.first_real >= 0), (first - self.first_real).astype(np.float64), np.nan)
        pre_all = np.concatenate(pre) if pre else np.zeros(0, dtype=np.int64)
        label = float(np.nanmedian(thr)) if per_session and not np.all(np.isnan(thr)) else \
            (float(threshold) if not per_session else float("nan"))
        return Reevaluation(label, count, first, dist, tokens, pre_all, int((count > 0).sum()), per_session)

    # ---------------------------------------------------------------- figures' data
    def real_pre_tokens(self) -> tuple[np.ndarray, np.ndarray]:
        """preTokens of every real compaction and whether it was automatic."""
        kinds = np.array(self.comp.column("kind").to_pylist(), dtype=object)
        pre = _filled(self.comp.column("pre_tokens"), np.float64, np.nan)
        trig = np.array(self.comp.column("trigger").to_pylist(), dtype=object)
        real = (kinds == "real") & ~np.isnan(pre)
        auto = np.array([t not in ("manual", "forced") for t in trig], dtype=bool)
        return pre[real], auto[real]

    def sim_pre_tokens(self) -> np.ndarray:
        """The context at each automatic summary of the main run (what crossed its threshold)."""
        kinds = np.array(self.comp.column("kind").to_pylist(), dtype=object)
        runs = np.array(self.comp.column("run").to_pylist(), dtype=object)
        trig = np.array(self.comp.column("trigger").to_pylist(), dtype=object)
        pre = _filled(self.comp.column("pre_tokens"), np.float64, np.nan)
        keep = (kinds == "simulated") & (runs == "") & (trig == "auto") & ~np.isnan(pre)
        return pre[keep]

    def replayed_thresholds(self, most: int = 3) -> list[float]:
        """The thresholds the sessions were replayed at (inferred per session), the most common first."""
        t = self.thresholds[self.ok & ~np.isnan(self.thresholds)]
        if not len(t):
            return []
        vals, counts = np.unique(t, return_counts=True)
        return [float(v) for v in vals[np.argsort(-counts)][:most]]

    def tokens_by_run(self, reeval: Reevaluation | None = None) -> list[tuple[str, np.ndarray]]:
        """Tokens sent per session, per strategy: the real sessions, each run, and the main run at the
        re-evaluated threshold."""
        ok = self.ok & (self.calls > 0)
        out = []
        if not np.all(np.isnan(self.total_input[ok])):
            out.append(("real", self.total_input[ok]))
        out.append((f"{self.strategy} (replayed)", self.sim_tokens[ok]))
        for r in self.config.compare:
            out.append((r.label, self.column(f"cmp_{r.key}_tokens_sent")[ok]))
        if reeval is not None and self.unit == "tokens":     # (a threshold in chars re-evaluates chars)
            out.append((f"{self.strategy} at {fmt_num(reeval.threshold)}", reeval.tokens_sent[ok]))
        return out

    def rows_line(self) -> str:
        """What the rows are: sessions replayed, duplicates, errors, sessions the strategy does not fit."""
        files = len(set(self.paths))
        dup = sum(1 for d in self.duplicate_of if d)
        skipped = sum(1 for d in self.not_replayed if d)
        ok = self.ok & (self.calls > 0)
        parts = [f"{int(self.ok.sum()):,} replayed"]
        if dup:
            parts.append(f"{dup:,} duplicate(s) of another row (the same session found twice: left out of the "
                         f"figures)")
        if skipped:
            parts.append(f"{skipped:,} not replayed (the strategy is another agent's pipeline)")
        parts.append(f"{int(self.failed.sum()):,} with an error")
        head = f"{self.n:,} session(s)" + (f" in {files:,} file(s)" if files != self.n else "")
        return f"{head}: " + ", ".join(parts) + f", {int(self.calls[ok].sum()):,} model calls"

    def group_for(self, threshold: float) -> "FleetData | None":
        """The group a what-if threshold is meant for: the one whose replayed thresholds are nearest (log scale)."""
        groups = [g for g in self.groups() if g.unit == "tokens"] or self.groups()
        if not groups:
            return None
        return min(groups, key=lambda g: abs(np.log(max(threshold, 1.0)) - np.log(max(g.default_threshold(), 1.0))))

    def overview_lines(self, threshold: float | None = None) -> list[str]:
        """A few lines in words: the rows, then per strategy (each group of sessions replayed with one: Claude
        Code's 155k compactions and Inspect's 4k ones are never mixed) where compaction fires and what another
        threshold would do (``threshold``, for the group it is nearest to; the others at their default)."""
        lines = [self.rows_line()]
        groups = self.groups()
        target = self.group_for(threshold) if threshold and len(groups) > 1 else None
        for g in groups:
            t = threshold if len(groups) == 1 or (target is not None and g.label == target.label) else None
            lines += g.group_lines(t, named=len(groups) > 1)
        return lines

    def group_lines(self, threshold: float | None = None, named: bool = False) -> list[str]:
        """One group's lines (see ``overview_lines``); ``named``: each says which strategy it is about."""
        ok = self.ok & (self.calls > 0)
        who = f"{self.strategy}: " if named else ""
        lines = []
        if named:
            formats = sorted({f for f, k in zip(self.strings("format"), self.ok) if k and f})
            lines.append(f"{self.strategy} ({', '.join(formats)}): {int(self.ok.sum()):,} session(s), "
                         f"{int(self.calls[ok].sum()):,} model calls")
        pre, auto = self.real_pre_tokens()
        if len(pre):
            a = pre[auto]
            lines.append(f"{who}real compactions: {len(pre):,} in {int((self.real_compactions[self.ok] > 0).sum()):,} "
                         f"session(s)" + (f"; automatic ones fired at preTokens {fmt_num(np.percentile(a, 10))}-"
                                         f"{fmt_num(np.percentile(a, 90))} (median {fmt_num(np.median(a))})"
                                         if len(a) else ""))
        sim = self.sim_compactions[ok]
        lines.append(f"{who}{self.strategy} replayed at its inferred threshold (median "
                     f"{fmt_num(self.default_threshold())} {self.unit}): {int(sim.sum()):,} compaction(s) in "
                     f"{int((sim > 0).sum()):,} session(s)")
        d = self.first_sim - self.first_real
        both = ok & (self.first_sim >= 0) & (self.first_real >= 0)
        if both.any():
            lines.append(f"{who}first simulated vs real automatic compaction: median {np.median(d[both]):+.0f} calls, "
                         f"within 2 calls in {int((np.abs(d[both]) <= 2).sum())}/{int(both.sum())} session(s)")
        if ok.any():
            lines.append(who + self.whatif_line(self.reevaluate(threshold or self.whatif_default())))
        return lines

    def whatif_line(self, r: Reevaluation) -> str:
        ok = self.ok & (self.calls > 0)
        base = np.nansum(self.sim_tokens[ok])
        sent = np.nansum(r.tokens_sent[ok])
        change = (sent - base) / base * 100 if base else 0.0
        dist = r.distance[ok & ~np.isnan(r.distance)]
        return (f"at {fmt_num(r.threshold)} {self.unit}: {r.total_compactions:,} compaction(s) in "
                f"{r.fired_sessions:,} session(s)"
                + (f", the first one a median {np.median(dist):+.0f} calls from the real one" if len(dist) else "")
                # a threshold in chars re-evaluates sizes: what it sends is not in tokens
                + (f"; tokens sent {change:+.1f}% vs the replay" if self.unit == "tokens" else ""))


def round_below(v: float) -> float:
    """The largest of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 x 10^k at or below ``v``."""
    if not v or v <= 0 or not np.isfinite(v):
        return float(v or 0)
    mag = 10 ** np.floor(np.log10(v))
    return float(max(m * mag for m in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10) if m * mag <= v * (1 + 1e-9)))


def fmt_num(v) -> str:
    v = float(v)
    if abs(v) >= 1e9:
        return f"{v / 1e9:.2f}G"
    if abs(v) >= 1e6:
        return f"{v / 1e6:.2f}M"
    if abs(v) >= 1e4:
        return f"{v / 1e3:.0f}k"
    return f"{v:,.0f}"


def session_params(data: FleetData, i: int) -> dict:
    """The parameters session ``i`` was replayed with (inferred, then the user's), for opening it."""
    try:
        return json.loads(data.strings("params")[i] or "{}")
    except ValueError:
        return {}
