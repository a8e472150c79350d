"""Inline SVG charts for the HTML report: sizes per stage against the threshold, and the replay's sawtooth.

Plain strings, no dependency, nothing fetched: every colour and label is in the markup (presentation
attributes, no ``style`` attributes, so the report's Content-Security-Policy can forbid inline styles).
Every text that comes from a file is escaped.
"""
from __future__ import annotations

import math
from html import escape

from ..replay.views import pre_tokens_text

BLUE, ORANGE, RED, GREY, GREEN = "#2563eb", "#ea580c", "#dc2626", "#94a3b8", "#16a34a"
RUN_COLORS = ["#2563eb", "#0d9488", "#be123c", "#a16207", "#4d7c0f", "#6d28d9", "#db2777"]


def fmt(v) -> str:
    try:
        return f"{float(v):,.0f}"
    except (TypeError, ValueError):
        return str(v)


def nice_ticks(top: float, n: int = 5) -> list[float]:
    """Round tick values from 0 to at least ``top``."""
    if not top or top <= 0 or not math.isfinite(top):
        return [0.0, 1.0]
    raw = top / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    k = math.ceil(top / step - 1e-9)
    return [i * step for i in range(k + 1)]


def short(v: float) -> str:
    """400k, 1.5M, 12: an axis label."""
    v = float(v)
    for div, suf in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            s = f"{v / div:.1f}".rstrip("0").rstrip(".")
            return s + suf
    return f"{v:.0f}"


def svg_open(W: int, H: int, label: str, cls: str = "chart") -> str:
    """The opening tag every chart shares (sized by its viewBox, text in the page's colour)."""
    return (f'<svg class="{cls}" viewBox="0 0 {W} {H}" role="img" aria-label="{escape(label)}" '
            'xmlns="http://www.w3.org/2000/svg" font-family="sans-serif" font-size="11">')


def y_grid(ticks: list, y, left: float, right: float) -> str:
    """Horizontal grid lines at ``ticks`` (``y(value)`` -> pixel) with their labels left of ``left``."""
    return "".join(f'<line x1="{left}" x2="{right}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="{GREY}" '
                   f'stroke-opacity="0.35"/><text x="{left - 6}" y="{y(t) + 4:.1f}" text-anchor="end" '
                   f'fill="currentColor">{short(t)}</text>' for t in ticks)


def stage_chart(labels: list[str], values: list[float], unit: str, threshold: float | None = None,
                threshold_text: str = "", title: str = "") -> str:
    """Bars: one per stage (Original, after each layer), with their values, and the threshold line."""
    n = max(len(values), 1)
    W, H, L, R, T, B = 760, 270, 64, 16, 28, 58
    pw, ph = W - L - R, H - T - B
    top = max([v for v in values if v is not None] + ([threshold] if threshold else []) + [1]) * 1.08
    ticks = nice_ticks(top)
    top = ticks[-1]

    def y(v):
        return T + ph - (v / top) * ph
    out = [svg_open(W, H, title or unit)]
    if title:
        out.append(f'<text x="{L}" y="16" font-size="13" font-weight="bold" fill="currentColor">'
                   f'{escape(title)}</text>')
    out.append(y_grid(ticks, y, L, W - R))
    slot = pw / n
    bw = max(4.0, min(60.0, slot * 0.6))
    rot = n > 7
    prev = None
    for i, (lab, v) in enumerate(zip(labels, values)):
        cx = L + slot * (i + 0.5)
        v = v or 0
        changed = prev is not None and v != prev
        color = BLUE if i == 0 or not changed else (GREEN if prev is not None and v < prev else ORANGE)
        out.append(f'<rect x="{cx - bw / 2:.1f}" y="{y(v):.1f}" width="{bw:.1f}" height="{max(T + ph - y(v), 0):.1f}" '
                   f'fill="{color}" fill-opacity="0.8"><title>{escape(lab)}: {fmt(v)} {escape(unit)}</title></rect>')
        out.append(f'<text x="{cx:.1f}" y="{y(v) - 4:.1f}" text-anchor="middle" fill="currentColor">{short(v)}</text>')
        if rot:
            out.append(f'<text x="{cx:.1f}" y="{T + ph + 12}" text-anchor="end" fill="currentColor" '
                       f'transform="rotate(-30 {cx:.1f} {T + ph + 12})">{escape(lab)}</text>')
        else:
            out.append(f'<text x="{cx:.1f}" y="{T + ph + 16}" text-anchor="middle" fill="currentColor">'
                       f'{escape(lab)}</text>')
        prev = v
    if threshold:
        ty = y(threshold)
        out.append(f'<line x1="{L}" x2="{W - R}" y1="{ty:.1f}" y2="{ty:.1f}" stroke="{RED}" stroke-width="2" '
                   f'stroke-dasharray="6 4"/><text x="{W - R}" y="{ty - 5:.1f}" text-anchor="end" fill="{RED}">'
                   f'{escape(threshold_text or "threshold " + fmt(threshold))}</text>')
    out.append(f'<text x="{L}" y="{H - 4}" fill="currentColor">{escape(unit)}</text></svg>')
    return "".join(out)


def _poly(points: list[tuple[float, float]], color: str, width: float = 1.5, dash: str = "",
          title: str = "") -> str:
    if not points:
        return ""
    d = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    extra = f' stroke-dasharray="{dash}"' if dash else ""
    t = f"<title>{escape(title)}</title>" if title else ""
    return (f'<polyline points="{d}" fill="none" stroke="{color}" stroke-width="{width}" '
            f'stroke-linejoin="round"{extra}>{t}</polyline>')


def timeline_chart(runs: list, unit: str = "tokens") -> str:
    """The replay's sawtooth: x = model call, y = context tokens (or chars). The main run (first) shows
    the raw growth without compaction, the context before and after its pipeline at every call, its
    threshold, its summaries, and the real context and real compactions when the file recorded them;
    every other run is one line (the context it sent)."""
    main = runs[0]
    calls = main.calls
    n = max(len(calls), 1)
    W, H, L, R, T, B = 900, 340, 70, 16, 40, 40
    pw, ph = W - L - R, H - T - B
    tok = unit == "tokens"

    def val(c, before=False):
        if tok:
            return c.tokens_before if before else c.tokens_after
        return c.size_before if before else c.size_after
    thr = main.threshold
    approx = ""
    if thr is not None and main.threshold_unit != unit:
        thr = thr / 4 if tok else thr * 4
        approx = "\u2248 "
    values = [val(c, True) for r in runs for c in r.calls] + [c.raw_tokens if tok else c.raw_size for c in calls]
    values += [c.real_tokens for c in calls if tok and c.real_tokens]
    top = max(values + ([thr] if thr else []) + [1]) * 1.05
    ticks = nice_ticks(top)
    top = ticks[-1]

    def x(i):
        return L + (pw * i / (n - 1) if n > 1 else pw / 2)

    def y(v):
        return T + ph - (v / top) * ph
    out = [svg_open(W, H, "context per model call", "chart timeline"), y_grid(ticks, y, L, W - R)]
    for t in nice_ticks(n - 1, 8) if n > 1 else [0]:
        if t <= n - 1:
            out.append(f'<text x="{x(t):.1f}" y="{T + ph + 16}" text-anchor="middle" fill="currentColor">'
                       f'{int(t)}</text>')
    out.append(f'<text x="{L + pw / 2:.1f}" y="{H - 6}" text-anchor="middle" fill="currentColor">model call</text>')
    # real compactions: vertical lines
    for ev in main.real_events:
        k = ev.get("call")
        if k is None:
            continue
        xx = x(k)
        out.append(f'<line x1="{xx:.1f}" x2="{xx:.1f}" y1="{T}" y2="{T + ph}" stroke="{ORANGE}" stroke-width="1.5" '
                   f'stroke-dasharray="3 3"><title>real {escape(str(ev.get("trigger") or ""))} compaction before '
                   f'call {k} ({escape(pre_tokens_text(ev.get("pre_tokens")))})</title></line>')
    out.append(_poly([(x(i), y(c.raw_tokens if tok else c.raw_size)) for i, c in enumerate(calls)], GREY, 1.2,
                     "4 3", "without compaction"))
    if tok:
        seg: list = []
        for i, c in enumerate(calls):
            if not c.real_tokens:          # not recorded (or a failed call's zero usage)
                if seg:
                    out.append(_poly(seg, ORANGE, 2, "", "real context (usage)"))
                seg = []
            else:
                seg.append((x(i), y(c.real_tokens)))
        out.append(_poly(seg, ORANGE, 2, "", "real context (usage)"))
    for r, color in zip(runs[1:], RUN_COLORS[1:] * 10):
        out.append(_poly([(x(i), y(val(c))) for i, c in enumerate(r.calls)], color, 1.5, "",
                         f"{r.label}: context sent"))
    saw = []
    for i, c in enumerate(calls):
        saw.append((x(i), y(val(c, True))))
        saw.append((x(i), y(val(c))))
    out.append(_poly(saw, BLUE, 1.8, "", f"{main.label}: context before and after the pipeline"))
    for i, c in enumerate(calls):
        if c.compacted:
            xx, yy = x(i), y(val(c, True))
            what = "summary" if c.summaries else "compaction (" + ", ".join(c.fired) + ")"
            out.append(f'<path d="M{xx:.1f},{yy - 7:.1f} l5,9 h-10 z" fill="{BLUE}"><title>{escape(main.label)}: '
                       f'{escape(what)} before call {i}, {fmt(val(c, True))} \u2192 {fmt(val(c))} {escape(unit)}'
                       f'</title></path>')
    if thr:
        ty = y(thr)
        out.append(f'<line x1="{L}" x2="{W - R}" y1="{ty:.1f}" y2="{ty:.1f}" stroke="{RED}" stroke-width="1.5" '
                   f'stroke-dasharray="6 4"/><text x="{W - R}" y="{ty - 5:.1f}" text-anchor="end" fill="{RED}">'
                   f'threshold {approx}{fmt(thr)} {escape(unit)}</text>')
    legend = [(BLUE, f"{main.label} (before/after)"), (GREY, "without compaction")]
    if tok and any(c.real_tokens is not None for c in calls):
        legend.append((ORANGE, "real context / real compaction"))
    legend += [(c, r.label) for r, c in zip(runs[1:], RUN_COLORS[1:] * 10)]
    lx: float = L
    for color, text in legend:
        out.append(f'<rect x="{lx}" y="12" width="14" height="4" fill="{color}"/><text x="{lx + 18}" y="18" '
                   f'fill="currentColor">{escape(text)}</text>')
        lx += 26 + 6.2 * len(text)
    out.append("</svg>")
    return "".join(out)
