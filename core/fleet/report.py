"""``compactscope fleet-report``: a fleet's results as one self-contained HTML page.

The same figures as the window's fleet view (``figures``), drawn as inline SVG, plus a what-if table
for a few thresholds and the sessions worth a look. Built on the per-session report's parts
(``core.report``): its style sheet and search script, its Content-Security-Policy (no network at
all), its axis ticks and number formats, its tables, and its atomic write. Every text from a results
file is escaped.
"""
from __future__ import annotations

import os
import time
from html import escape as esc

import numpy as np

from ..report import html as rhtml
from ..report.svg import GREY, nice_ticks, short, svg_open, y_grid
from ..model.describe import num
from . import figures
from .figures import Bars, Histogram, nice_step
from .model import FleetData, fmt_num

DEFAULT_WHATIF = [100_000.0, 120_000.0, 150_000.0, 167_000.0, 180_000.0]


def histogram_svg(h: Histogram) -> str:
    """Overlaid step outlines (filled lightly), one per series, and the marker lines."""
    W, H, L, R, T, B = 900, 300, 64, 16, 42, 44
    pw, ph = W - L - R, H - T - B
    e = h.edges
    x0, x1 = float(e[0]), float(e[-1])
    top = max([int(s.counts.max()) if len(s.counts) else 0 for s in h.series] + [1]) * 1.08
    ticks = nice_ticks(top)
    top = ticks[-1]

    def x(v):
        return L + (float(v) - x0) / (x1 - x0 or 1) * pw

    def y(v):
        return T + ph - v / top * ph
    out = [svg_open(W, H, h.title), y_grid(ticks, y, L, W - R)]
    integer = len(e) > 1 and float(e[0]) % 1 == 0.5 or float(e[0]) % 1 == -0.5
    step = max(nice_step(x1 - x0, 8), 1.0 if integer else 0.0)
    v = np.ceil(x0 / step) * step
    while v <= x1 + 1e-9:
        out.append(f'<text x="{x(v):.1f}" y="{T + ph + 16}" text-anchor="middle" fill="currentColor">'
                   f'{esc(short(v) if abs(v) >= 1000 else f"{v:.0f}")}</text>')
        v += step
    out.append(f'<text x="{L + pw / 2:.1f}" y="{H - 6}" text-anchor="middle" fill="currentColor">'
               f'{esc(h.xlabel)}</text>')
    for s in h.series:
        if not s.counts.sum():
            continue
        pts = [(x(e[0]), y(0))]
        for i, c in enumerate(s.counts):
            pts += [(x(e[i]), y(c)), (x(e[i + 1]), y(c))]
        pts.append((x(e[-1]), y(0)))
        d = " ".join(f"{a:.1f},{b:.1f}" for a, b in pts)
        out.append(f'<polygon points="{d}" fill="{s.color}" fill-opacity="0.16" stroke="{s.color}" '
                   f'stroke-width="1.6"><title>{esc(s.label)}: {int(s.counts.sum()):,}</title></polygon>')
    for i, (v, label, color) in enumerate(h.lines):
        if not x0 <= v <= x1:
            continue
        xx = x(v)
        out.append(f'<line x1="{xx:.1f}" x2="{xx:.1f}" y1="{T}" y2="{T + ph}" stroke="{color}" stroke-width="1.5" '
                   f'stroke-dasharray="6 4"/><text x="{xx + 4:.1f}" y="{T + 12 + 13 * (i % 3):.1f}" '
                   f'fill="{color}">{esc(label)}</text>')
    lx: float = L
    for s in h.series:
        text = f"{s.label} ({int(s.counts.sum()):,})"
        out.append(f'<rect x="{lx}" y="12" width="14" height="8" fill="{s.color}" fill-opacity="0.6"/>'
                   f'<text x="{lx + 18}" y="20" fill="currentColor">{esc(text)}</text>')
        lx += 30 + 6.0 * len(text)
    out.append("</svg>")
    return "".join(out)


def bars_svg(b: Bars) -> str:
    """Horizontal bars, one per strategy, with their totals."""
    n = max(len(b.values), 1)
    W, L, R, T, row = 900, 230, 90, 10, 26
    H = T + row * n + 28
    pw = W - L - R
    top = max(b.values + [1])
    ticks = nice_ticks(top, 6)
    top = ticks[-1]
    out = [svg_open(W, H, b.title)]
    for t in ticks:
        xx = L + t / top * pw
        out.append(f'<line x1="{xx:.1f}" x2="{xx:.1f}" y1="{T}" y2="{T + row * n}" stroke="{GREY}" '
                   f'stroke-opacity="0.35"/><text x="{xx:.1f}" y="{T + row * n + 14}" text-anchor="middle" '
                   f'fill="currentColor">{short(t)}</text>')
    for i, (label, v, color) in enumerate(zip(b.labels, b.values, b.colors)):
        yy = T + i * row + 4
        w = max(1.0, v / top * pw)
        out.append(f'<text x="{L - 8}" y="{yy + 13}" text-anchor="end" fill="currentColor">{esc(label)}</text>'
                   f'<rect x="{L}" y="{yy}" width="{w:.1f}" height="{row - 8}" fill="{color}" fill-opacity="0.8">'
                   f'<title>{esc(label)}: {v:,.0f} {esc(b.unit)}</title></rect>'
                   f'<text x="{L + w + 6:.1f}" y="{yy + 13}" fill="currentColor">{esc(short(v))}</text>')
    out.append(f'<text x="{L + pw / 2:.1f}" y="{H - 2}" text-anchor="middle" fill="currentColor">'
               f'{esc(b.unit)} sent, summed over every call of every session</text></svg>')
    return "".join(out)


def _pct(v) -> str:
    return "" if v is None else f"{v:+.1f}%"


def default_whatif(g: FleetData) -> list[float]:
    """The what-if table's thresholds for a group: Claude Code's usual range around 155k-167k, else a few
    round numbers around the group's own median threshold."""
    m = g.default_threshold()
    if g.unit == "tokens" and 100_000 <= m <= 250_000:
        return DEFAULT_WHATIF
    return sorted({float(f"{m * f:.2g}") for f in (0.5, 0.75, 0.9, 1.1, 1.25)} | {g.whatif_default()})


def render(data: FleetData, out, thresholds: list[float] | None = None) -> None:
    """The page: the run in words, then one section per strategy the sessions were replayed with (each
    with its figures, its what-if table and its sessions: Claude Code's 155k compactions and Inspect's 4k
    ones are never drawn on one axis), then the rows left out (duplicates, sessions not replayed, errors).
    A ``thresholds`` value goes to the group whose replayed thresholds are nearest to it."""
    w = out.write
    groups = data.groups()
    mine: dict = {}
    for t in thresholds or []:
        g = data.group_for(t)
        if g is not None:
            mine.setdefault(g.label, []).append(t)
    title = f"Fleet: {data.n:,} sessions"
    meta = data.meta
    w(rhtml.page_start(title, "Compactscope fleet"))
    w(f"<h1>{esc(title)}</h1>")
    cfg = data.config
    runs = ", ".join(f"{r_.label} ({r_.strategy})" for r_ in cfg.compare)
    how = (f"strategy <b>{esc(cfg.strategy)}</b>" if cfg.strategy else "each file with its own pipeline") + \
        " and each session's inferred defaults"
    w(f'<p class="sub">{esc(os.path.abspath(data.path))} \u00b7 {how}'
      + (f" and --set {esc(str(cfg.params))}" if cfg.params else "")
      + (f" \u00b7 compared with {esc(runs)}" if runs else "") + f" \u00b7 written {esc(str(meta.get('created', '')))}"
      "</p>")
    several = len(groups) > 1
    toc = [("overview", "In words")]
    for k, g in enumerate(groups):
        if several:
            toc.append((f"g{k}-group", g.strategy))
        else:
            toc += [("fires", "Where compaction fires"), ("whatif", "What another threshold would do"),
                    ("distance", "Prediction distance"), ("per", "Compactions per session"), ("tokens", "Tokens sent"),
                    ("sessions", "Sessions")]
    toc.append(("others", "Rows left out"))
    w('<nav class="toc">' + "".join(f'<a href="#{a}">{esc(t)}</a>' for a, t in toc) + "</nav>")
    w('<h2 id="overview">In words</h2><ul>' + "".join(f"<li>{esc(x)}</li>" for x in
                                                      data.overview_lines(thresholds[0] if thresholds else None)) + "</ul>")
    for k, g in enumerate(groups):
        _group(g, w, mine.get(g.label), f"g{k}-" if several else "", several)
    _others(data, w)
    w(rhtml.page_end(f'Made by Compactscope on {time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())} from '
                     f"{os.path.basename(data.path)}. Self-contained: its style, script and charts are inside this "
                     "file, and its Content-Security-Policy forbids any network request."))


def _group(data: FleetData, w, thresholds: list[float] | None, p: str, several: bool) -> None:
    """One strategy's section: its figures, what-if table and sessions."""
    whatif = sorted(set(thresholds or default_whatif(data)))
    focus = (thresholds or [data.whatif_default()])[0]
    r = data.reevaluate(focus)
    ok = data.ok & (data.calls > 0)
    if several:
        formats = sorted({f for f, k in zip(data.strings("format"), data.ok) if k and f})
        w(f'<h2 id="{p}group">{esc(data.strategy)}: {int(data.ok.sum()):,} session(s) '
          f'({esc(", ".join(formats))})</h2>')
    figs = {f.key: f for f in figures.all_figures(data, r)}
    h = "h3" if several else "h2"

    def fig(key, anchor, intro):
        f = figs[key]
        w(f'<{h} id="{p}{anchor}">{esc(f.title)}</{h}><p class="sub">{esc(intro)}</p>')
        w(histogram_svg(f) if isinstance(f, Histogram) else bars_svg(f))
        if f.note:
            w(f"<p>{esc(f.note)}</p>")
    fig("pre", "fires", f"The context ({data.unit}) at every compaction: the real ones as the sessions recorded them "
        "(preTokens), the replay's at each session's inferred threshold, and the what-if threshold's. The dashed "
        "lines are the thresholds.")
    rows = figures.whatif_table(data, whatif)
    w(f'<{h} id="{p}whatif">What another threshold would do</{h}><p class="sub">Every session re-evaluated at one '
      "threshold from its stored token series, without replaying (docs/fleet.md). Distance: the first "
      "compaction's call minus the real first automatic compaction's, over the sessions that have both.</p>")
    body = [[fmt_num(x["threshold"]), x["compactions"], x["sessions"],
             "" if x["median_distance"] is None else f"{x['median_distance']:+.0f}",
             f"{x['within_2']}/{x['with_real']}", "" if x["tokens_sent"] != x["tokens_sent"] else
             fmt_num(x["tokens_sent"]), _pct(x["vs_replay"]),
             _pct(x["vs_real"])] for x in rows]
    replayed = [f"replayed ({'/'.join(fmt_num(t) for t in data.replayed_thresholds())})",
                int(data.sim_compactions[ok].sum()), int((data.sim_compactions[ok] > 0).sum()),
                _median_str((data.first_sim - data.first_real)[ok & (data.first_sim >= 0) & (data.first_real >= 0)]),
                "", fmt_num(np.nansum(data.sim_tokens[ok])), "", ""]
    w(rhtml.table(["threshold", "compactions", "sessions compacting", "median distance (calls)",
                    "within 2 calls", "tokens sent", "vs the replay", "vs real"], [replayed] + body,
                   numeric={1, 2, 3, 4, 5, 6, 7}))
    fig("distance", "distance", "How many calls after (+) or before (-) the real first automatic compaction the "
        "simulation first compacts, per session with a real one.")
    fig("compactions", "per", "Sessions by their number of compactions.")
    fig("tokens", "tokens", "What these sessions sent to the model: the real sessions (usage), the replay, each "
        "--compare run, and the what-if threshold.")
    _sessions(data, r, w, h, p)


def _median_str(v) -> str:
    return f"{np.median(v):+.0f}" if len(v) else ""


def _root(paths) -> str:
    paths = [p for p in paths if p]
    return os.path.commonpath(paths) if len(set(paths)) > 1 else os.path.dirname(paths[0]) if paths else ""


def _sessions(data: FleetData, r, w, h: str = "h2", p: str = "", limit: int = 150) -> None:
    ok = data.ok & (data.calls > 0)
    w(f'<{h} id="{p}sessions">Sessions</{h}><p class="sub">The {min(limit, int(ok.sum()))} sessions with the most '
      "real compactions, then the largest; every session is in the results file.</p>")
    order = sorted(np.nonzero(ok)[0], key=lambda i: (-data.real_compactions[i], -data.calls[i]))[:limit]
    root = _root(data.paths)
    if root:
        w(f'<p class="sub">Paths below are under {esc(root)}</p>')
    versions, peaks, samples = data.strings("version"), data.column("peak_context_tokens"), data.strings("sample")
    rows = []
    for i in order:
        d = "" if data.first_sim[i] < 0 or data.first_real[i] < 0 else f"{data.first_sim[i] - data.first_real[i]:+d}"
        name = os.path.relpath(data.paths[i], root) if root else data.paths[i]
        rows.append([name + (f" [{samples[i]}]" if samples[i] else ""), versions[i] or "", int(data.calls[i]),
                     int(data.real_compactions[i]),
                     "" if data.first_real[i] < 0 else int(data.first_real[i]),
                     "" if data.first_sim[i] < 0 else int(data.first_sim[i]), d,
                     "" if r is None or r.first_call[i] < 0 else int(r.first_call[i]),
                     "" if np.isnan(peaks[i]) else num(int(peaks[i])), fmt_num(data.thresholds[i])
                     if not np.isnan(data.thresholds[i]) else ""])
    at = f"first at {fmt_num(r.threshold)}" if r is not None else "first at what-if"
    w(rhtml.table(["session", "version", "calls", "real", "first real auto", "first replayed", "distance", at,
                    "peak real tokens", "replayed at"], rows, numeric={2, 3, 4, 5, 6, 7, 8, 9}))


def _others(data: FleetData, w) -> None:
    """The rows no figure counts: the same session found twice, sessions the strategy does not fit, errors."""
    root = _root(data.paths)
    samples = data.strings("sample")

    def name(i):
        n = os.path.relpath(data.paths[i], root) if root else data.paths[i]
        return n + (f" [{samples[i]}]" if samples[i] else "")

    def short_id(rid):
        path, _, k = (rid or "").rpartition("#")
        return (os.path.relpath(path, root) if root and path else path) + (f" #{k}" if k not in ("", "0") else "")
    dups = [[name(i), short_id(d)] for i, d in enumerate(data.duplicate_of) if d]
    skipped = [[name(i), t] for i, t in enumerate(data.not_replayed) if t]
    errs = [[name(i), e] for i, e in enumerate(data.errors) if e]
    w(f'<h2 id="others">Rows left out</h2><p class="sub">{len(dups):,} duplicate(s), {len(skipped):,} not replayed, '
      f"{len(errs):,} with an error.</p>")
    for title, head, rows in ((f"{len(dups):,} row(s) holding a session another row holds (the figures count it "
                               "once)", ["row", "the same session as"], dups),
                              (f"{len(skipped):,} session(s) not replayed", ["session", "why"], skipped),
                              (f"{len(errs):,} file(s) with an error", ["file", "error"], errs)):
        if rows:
            w(f"<h3>{esc(title)}</h3><details><summary>the list</summary>")
            w(rhtml.table(head, rows[:500]))
            w("</details>")


def write_report(results: str | os.PathLike, path: str | os.PathLike, thresholds: list[float] | None = None) -> str:
    """Render ``results`` to ``path`` (atomically: a temporary file beside it takes the name at the end)."""
    from ..report import write_text
    data = FleetData.load(results)
    write_text(path, lambda f: render(data, f, thresholds))
    return str(path)
