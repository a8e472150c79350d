"""The report's events and retention sections: what happened in the conversation in call order
(``core.analysis.session_events``) and what each real and simulated compaction kept and lost (``core.analysis.retention``).
``gather`` makes the facts (from the report's replay when it kept its inputs, else a replay of its own);
``html`` and ``markdown`` write the two sections."""
from __future__ import annotations

from typing import Any, Callable

from ..runtime.record import field, record
from ..model.describe import clip

MAX_EVENTS = 2000          # a report lists at most this many events (the rest counted)


@record
class HistoryFacts:
    events: list = field(default_factory=list)        # session_events.Event
    retention: list = field(default_factory=list)     # retention.Retention
    strategy: str = ""
    error: str = ""                                   # why there are none (the replay failed)


def gather(conv: Any, engine: Any, replay_result: Any = None) -> HistoryFacts:
    """The events and the retention of ``conv`` under ``engine``'s strategy (``replay_result``: a replay that kept
    its inputs, reused)."""
    from ..analysis.session_events import history_events, replay_for
    from ..analysis.retention import retention
    res = replay_result if replay_result is not None and replay_result.inputs else None
    try:
        if res is None:
            res = replay_for(conv, engine.fork())
        return HistoryFacts(history_events(conv, res), retention(conv, res), res.strategy)
    except Exception as e:         # a strategy that cannot replay this file: the sections say so, the report stands
        return HistoryFacts(history_events(conv, None), retention(conv, None), engine.strategy.name,
                            f"the replay failed ({type(e).__name__}: {e}); only the real compactions are listed")


def _where(call: Any) -> str:
    return "end" if call is None else f"call {call}"


def _retention_title(r: Any) -> str:
    where = "at the end of the file" if r.call is None else f"before call {r.call}"
    return f"{r.kind} compaction {where} (segment {r.segment}): {r.replaced_messages} message(s) replaced, " \
           f"{len(r.kept)} item(s) kept, {len(r.lost)} lost"


def _last_request(r: Any) -> str | None:
    last = r.last_request()
    if last is None:
        return None
    return f"The user's last request was {'kept' if last[1] else 'LOST'}: {clip(last[0].text, 200)}"


def html(rep: Any, w: Callable[[str], Any], esc: Callable[[str], str], table: Callable[..., str]) -> None:
    h = getattr(rep, "history", None)
    if h is None:
        return
    w(f'<h2 id="events">Events ({len(h.events):,})</h2>')
    w('<p class="sub">What happened, in call order: the real compactions the file records, the simulated ones of '
      f'{esc(h.strategy)}, layers that changed the context, API findings, divergences between simulation and '
      'reality, and compaction loops (a compaction soon after another that freed little).</p>')
    if h.error:
        w(f'<p class="note">{esc(h.error)}</p>')
    rows = [[_where(e.call), e.segment, e.kind.replace("_", " "), e.text] for e in h.events[:MAX_EVENTS]]
    if rows:
        w(table(["call", "segment", "event", "what"], rows, frozenset({1})))
    else:
        w("<p>Nothing happened: no compaction, no layer changed the context, no finding.</p>")
    if len(h.events) > MAX_EVENTS:
        w(f"<p>\u2026 and {len(h.events) - MAX_EVENTS:,} more.</p>")
    w(f'<h2 id="retention">What each compaction kept and lost ({len(h.retention)})</h2>')
    w('<p class="sub">For each compaction, the items of the context it replaced (the user\'s requests, file paths, '
      'tools, errors, names and numbers that recur): <b>kept</b> when the item is in what replaced it (the summary '
      'and whatever was restored after it, up to the next model reply), <b>lost</b> when it is not there at all.</p>')
    for r in h.retention:
        w(f'<div class="summ {"real" if r.kind == "real" else "sim"}"><h3>{esc(_retention_title(r))}</h3>')
        line = _last_request(r)
        if line:
            w(f"<p><b>{esc(line)}</b></p>")
        items = [["kept", i.kind, i.text] for i in r.kept] + [["LOST", i.kind, i.text] for i in r.lost]
        if items:
            w(table(["", "item", "text"], [[a, b, clip(c, 300)] for a, b, c in items]))
        w("</div>")


def markdown(rep: Any, w: Callable[[str], Any], md: Callable[[str], str], table: Callable[..., str]) -> None:
    h = getattr(rep, "history", None)
    if h is None:
        return
    w(f"## Events ({len(h.events):,})\n\n")
    w(f"What happened, in call order (the simulated compactions are {md(h.strategy)}'s).\n\n")
    if h.error:
        w(f"Note: {md(h.error)}\n\n")
    rows = [[_where(e.call), str(e.segment), e.kind.replace("_", " "), e.text] for e in h.events[:MAX_EVENTS]]
    w(table(["call", "segment", "event", "what"], rows) if rows else "Nothing happened.\n\n")
    if len(h.events) > MAX_EVENTS:
        w(f"\u2026 and {len(h.events) - MAX_EVENTS:,} more.\n\n")
    w(f"## What each compaction kept and lost ({len(h.retention)})\n\n")
    w("Kept: the item is in what replaced the context (the summary and whatever was restored after it, up to the "
      "next model reply); lost: it is not there at all.\n\n")
    for r in h.retention:
        w(f"### {md(_retention_title(r))}\n\n")
        line = _last_request(r)
        if line:
            w(f"**{md(line)}**\n\n")
        items = [["kept", i.kind, clip(i.text, 300)] for i in r.kept] + \
            [["LOST", i.kind, clip(i.text, 300)] for i in r.lost]
        if items:
            w(table(["", "item", "text"], items))
