"""The fleet's figures as data: the window's fleet view and the HTML report draw the same bins.

Each figure is a ``Histogram`` (shared bin edges, one count series per kind, vertical marker lines)
or ``Bars`` (one value per strategy). Computed with numpy from a ``FleetData`` and, for the what-if
threshold, a ``Reevaluation``. Pure Python, no Qt.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..runtime.record import field, record
from .model import FleetData, Reevaluation, fmt_num

REAL, REAL_MANUAL, REPLAY, WHATIF, OTHER = "#ea580c", "#f59e0b", "#2563eb", "#dc2626", "#64748b"
RUNS = ["#0d9488", "#be123c", "#a16207", "#4d7c0f", "#6d28d9", "#db2777"]


@record
class Series:
    label: str
    counts: np.ndarray
    color: str


@record
class Histogram:
    key: str
    title: str
    xlabel: str
    edges: np.ndarray                     # len(counts) + 1
    series: list[Series]
    lines: list[tuple[float, str, str]] = field(default_factory=list)    # (x, label, color)
    note: str = ""                        # what to read from it, in words

    @property
    def empty(self) -> bool:
        return not any(int(s.counts.sum()) for s in self.series)


@record
class Bars:
    key: str
    title: str
    labels: list[str]
    values: list[float]
    colors: list[str]
    unit: str
    note: str = ""


def nice_step(span: float, n: int) -> float:
    """A round bin width (1, 2, 2.5 or 5 x 10^k) giving about ``n`` bins over ``span``."""
    raw = max(span, 1e-9) / max(n, 1)
    mag = 10 ** np.floor(np.log10(raw))
    return float(next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw))


def _edges(values: list[np.ndarray], n: int = 30, integer: bool = False, lo: float | None = None,
           hi: float | None = None, keep: Sequence[float] = (), tails: float = 1.0) -> np.ndarray:
    """Round bin edges over the values' central range (the ``tails`` percent at each end fall into the
    end bins), widened to show ``keep`` (the threshold lines); integers get bins centred on whole numbers."""
    parts = [v[np.isfinite(v)] for v in values if len(v)]
    allv = np.concatenate(parts) if parts else np.zeros(0)       # a group with no compaction at all
    if not len(allv):
        return np.arange(-0.5, 2.0, 1.0) if integer else np.linspace(0, 1, n + 1)
    a = float(np.percentile(allv, tails)) if lo is None else lo
    b = float(np.percentile(allv, 100 - tails)) if hi is None else hi
    for k in keep:
        a, b = min(a, k), max(b, k)
    if integer:
        width = max(1.0, nice_step(b - a + 1, n))
        a, b = np.floor(a / width) * width, np.ceil(b / width) * width
        return np.arange(a - 0.5, b + width, width)
    width = nice_step(b - a, n)
    a, b = np.floor(a / width) * width, np.ceil(b / width) * width
    if b <= a:
        b = a + width
    return np.arange(a, b + width / 2, width)


def _count(v: np.ndarray, edges: np.ndarray) -> np.ndarray:
    v = v[np.isfinite(v)]
    v = np.clip(v, edges[0], edges[-1])
    return np.histogram(v, bins=edges)[0]


def pre_tokens(data: FleetData, r: Reevaluation | None) -> Histogram:
    """Where compaction fires: the context at each real compaction (preTokens), and where the replay's
    threshold and the what-if threshold would have fired."""
    pre, auto = data.real_pre_tokens()
    at_t = r.pre_tokens.astype(np.float64) if r is not None else np.zeros(0)
    sims = data.sim_pre_tokens()
    marks = data.replayed_thresholds() + ([r.threshold] if r is not None and not r.per_session else [])
    edges = _edges([pre, at_t, sims], 40, keep=marks)
    series = [Series("real, automatic", _count(pre[auto], edges), REAL),
              Series("real, /compact or forced", _count(pre[~auto], edges), REAL_MANUAL),
              Series(f"{data.strategy} replayed", _count(sims, edges), REPLAY)]
    lines = [(t, f"replayed {fmt_num(t)}", REPLAY) for t in data.replayed_thresholds()]
    if r is not None:
        series.append(Series(f"at {fmt_num(r.threshold)}", _count(at_t, edges), WHATIF))
        if not r.per_session:
            lines.append((r.threshold, f"what-if {fmt_num(r.threshold)}", WHATIF))
    note = ""
    if len(pre[auto]):
        a = pre[auto]
        note = (f"{len(a):,} real automatic compactions fired at {fmt_num(np.percentile(a, 10))}-"
                f"{fmt_num(np.percentile(a, 90))} {data.unit} (10th-90th percentile, median {fmt_num(np.median(a))})")
    return Histogram("pre", "Where compaction fires", f"context at the compaction ({data.unit})", edges, series,
                     lines, note)


def distance(data: FleetData, r: Reevaluation | None) -> Histogram:
    """First simulated minus first real automatic compaction, in calls (negative: earlier than real)."""
    ok = data.ok & (data.first_sim >= 0) & (data.first_real >= 0)
    d = (data.first_sim - data.first_real)[ok].astype(np.float64)
    dt = r.distance[np.isfinite(r.distance)] if r is not None else np.zeros(0)
    both = np.concatenate([d, dt])
    lo = max(float(both.min()), -30.0) if len(both) else -5.0      # one bin per call; beyond +-30 in the end bins
    hi = min(float(both.max()), 30.0) if len(both) else 5.0
    edges = _edges([d, dt], 61, integer=True, lo=min(lo, -2.0), hi=max(hi, 2.0))
    series = [Series(f"{data.strategy} replayed", _count(d, edges), REPLAY)]
    if r is not None:
        series.append(Series(f"at {fmt_num(r.threshold)}", _count(dt, edges), WHATIF))
    lines = [(0.0, "the real compaction", REAL)]
    note = ""
    if len(d):
        note = (f"replayed: median {np.median(d):+.0f} calls, within 2 calls in {int((np.abs(d) <= 2).sum())} of "
                f"{len(d)} sessions")
        if r is not None and len(dt):
            note += f"; at {fmt_num(r.threshold)}: median {np.median(dt):+.0f} calls"
    return Histogram("distance", "Prediction distance", "first simulated - first real automatic compaction (calls; "
                     "beyond 30 in the end bins)",
                     edges, series, lines, note)


def compactions(data: FleetData, r: Reevaluation | None) -> Histogram:
    ok = data.ok & (data.calls > 0)
    real = data.real_compactions[ok].astype(np.float64)
    sim = data.sim_compactions[ok].astype(np.float64)
    at_t = r.compactions[ok].astype(np.float64) if r is not None else np.zeros(0)
    # sessions that never compact are most of a fleet: the figure shows the others, the note counts them
    edges = _edges([real[real > 0], sim[sim > 0], at_t[at_t > 0]], 25, integer=True, lo=1, tails=0.5)
    series = [Series("real", _count(real[real > 0], edges), REAL),
              Series(f"{data.strategy} replayed", _count(sim[sim > 0], edges), REPLAY)]
    if r is not None:
        series.append(Series(f"at {fmt_num(r.threshold)}", _count(at_t[at_t > 0], edges), WHATIF))

    def words(v, name):
        return f"{name}: {int(v.sum()):,} in {int((v > 0).sum()):,} sessions ({int((v == 0).sum()):,} without any)"
    note = "; ".join([words(real, "real"), words(sim, "replayed")]
                     + ([words(at_t, f"at {fmt_num(r.threshold)}")] if r is not None else []))
    return Histogram("compactions", "Compactions per session", "compactions in the session (sessions with at "
                     "least one)", edges, series, [], note)


def tokens_sent(data: FleetData, r: Reevaluation | None) -> Bars:
    runs = data.tokens_by_run(r)
    labels, values, colors = [], [], []
    k = 0
    for label, v in runs:
        labels.append(label)
        values.append(float(np.nansum(v)))
        if label == "real":
            colors.append(REAL)
        elif label.endswith("(replayed)"):
            colors.append(REPLAY)
        elif r is not None and label.endswith(f"at {fmt_num(r.threshold)}"):
            colors.append(WHATIF)
        else:
            colors.append(RUNS[k % len(RUNS)])
            k += 1
    base = next((v for lab, v in zip(labels, values) if lab.endswith("(replayed)")), 0.0)
    note = "; ".join(f"{lab}: {(v - base) / base * 100:+.1f}%" for lab, v in zip(labels, values)
                     if base and not lab.endswith("(replayed)"))
    return Bars("tokens", "Tokens sent per strategy (the whole fleet)", labels, values, colors, "tokens",
                ("vs the replay: " + note) if note else "")


def all_figures(data: FleetData, r: Reevaluation | None) -> list:
    return [pre_tokens(data, r), distance(data, r), compactions(data, r), tokens_sent(data, r)]


def whatif_table(data: FleetData, thresholds: list[float]) -> list[dict]:
    """One row per threshold: what the whole fleet would do."""
    ok = data.ok & (data.calls > 0)
    base = float(np.nansum(data.sim_tokens[ok]))
    real = float(np.nansum(data.total_input[ok]))
    rows = []
    for t in thresholds:
        r = data.reevaluate(t)
        d = r.distance[ok & np.isfinite(r.distance)]
        sent = float(np.nansum(r.tokens_sent[ok])) if data.unit == "tokens" else float("nan")   # chars otherwise
        rows.append({"threshold": t, "compactions": r.total_compactions, "sessions": r.fired_sessions,
                     "median_distance": float(np.median(d)) if len(d) else None,
                     "within_2": int((np.abs(d) <= 2).sum()) if len(d) else 0, "with_real": len(d),
                     "tokens_sent": sent, "vs_replay": (sent - base) / base * 100 if base and sent == sent else None,
                     "vs_real": (sent - real) / real * 100 if real and sent == sent else None})
    return rows
