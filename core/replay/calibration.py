"""Calibration of a replay's token estimates against a recording's usage.

A transcript does not hold everything the API saw: the system prompt, the tools, attachments
and, in an excerpt, the history before the file starts. For recordings with usage, the
difference between the real context tokens and the estimate of the recorded messages is added
to every estimate, so a strategy's threshold compares with reality (``calibrate=True``).
"""
from __future__ import annotations

from array import array

from ..runtime.record import record
from ..pipeline.size import is_additive

NOTE = ("overhead = real context tokens - estimate of the recorded context; fixed = system prompt, tools and "
        "attachments; hidden = history from before the file starts (first segment)")


def default_calibration(conversation, strategies_: list) -> bool:
    """The one rule every replay follows when nobody says (``compactscope replay``, ``--compare`` runs, the
    window's timeline, reports): calibrate when the recording holds usage and one of the strategies replayed
    side by side counts its threshold in tokens (the runs of one comparison decide together, so their tokens
    compare)."""
    from .. import strategies
    metas = getattr(conversation, "meta", None) or ()
    if not any(getattr(m, "usage", None) is not None for m in metas):
        return False
    return any((strategies.get(s) if isinstance(s, str) else s).threshold_unit == "tokens" for s in strategies_)


def calibration_words(result) -> str:
    """Which calibration a replay used, in words (the CLI's calibration line, the timeline's caption)."""
    c = getattr(result, "calibration", None)
    if c:
        return (f"calibrated: +{c['fixed']:,} tokens the API saw beyond the recorded messages (system prompt, tools)"
                + (f" and {c['hidden']:,} of history before the file" if c.get("hidden") else "")
                + " added to every estimate")
    return "not calibrated: " + (getattr(result, "calibration_off", "") or "estimates of the recorded messages only")


class OffsetTokens:
    """A token estimator: the base estimate plus what the API saw beyond the recorded messages."""

    def __init__(self, base, offset: int = 0):
        self.base = base
        self.offset = offset
        self.name = f"{base.name} + recorded overhead"

    def tokens(self, messages, meter, *, system=None, tools=None) -> int:
        return self.base.tokens(messages, meter, system=system, tools=tools) + int(self.offset)


@record
class Overheads:
    """Per call: ``per_call[k]`` = real context tokens - estimate of the recorded context (the
    current segment up to the call), None without usage; ``segment[k]`` = the call's segment
    (0 = before the first real compaction). ``fixed`` = the median overhead at the first call
    after each real compaction (or the first call when there is none): system prompt, tools,
    attachments. ``hidden`` = the first segment's extra history, which the simulated context
    carries until its own first summary."""
    fixed: int
    hidden: int
    per_call: list
    segment: list

    def public(self) -> dict:
        """What ``ReplayResult.calibration`` shows."""
        return {"fixed": self.fixed, "hidden": self.hidden, "note": NOTE}


def measure(conv, msgs, metas, inv, call_at, meter, tok) -> Overheads | None:
    """The overheads of a conversation prepared for replay (``msgs``/``metas`` in the strategy's
    dialect, ``inv`` = conversation index -> prepared index, ``call_at`` = prepared index of each
    call); None when no call has usage."""
    starts = sorted({inv.get(s, s) for s in (conv.segments or [0])} | {0})
    seg_of: list = []
    per_call: list = []
    si = 0
    # an additive estimator counts a segment's start up to a call from running sums of its per-message
    # figure (a slice and a sum per call was quadratic in the segment's length: hermes at 10k messages)
    prefix = None
    if is_additive(tok):
        fig, fn, acc = tok.figure, tok.figure_fn, 0
        prefix = array("q", [0])
        for m in msgs:
            acc += meter.figure(m, fig, fn)
            prefix.append(acc)
    for j in call_at:
        while si + 1 < len(starts) and starts[si + 1] <= j:
            si += 1
        seg_of.append(si)
        u = metas[j].usage if j < len(msgs) else None
        if u is None or u.context_tokens <= 0:
            per_call.append(None)
            continue
        a = starts[si]
        if prefix is not None and a <= j <= len(msgs):
            est = tok.tokens_from(prefix[j] - prefix[a], j - a, msgs[a] if j > a else None)
        else:
            est = tok.tokens(msgs[a:j], meter)
        per_call.append(u.context_tokens - est)
    known = [(s, o) for s, o in zip(seg_of, per_call) if o is not None]
    if not known:
        return None
    firsts = []
    seen = set()
    for s, o in known:
        if s > 0 and s not in seen:
            seen.add(s)
            firsts.append(o)
    seg0 = [o for s, o in known if s == 0]
    if firsts:
        firsts.sort()
        fixed = firsts[len(firsts) // 2]
        hidden = max(0, (seg0[-1] if seg0 else fixed) - fixed)
    else:
        fixed, hidden = known[0][1], 0
    return Overheads(max(0, fixed), hidden, per_call, seg_of)


class Calibrator:
    """Walks the overheads call by call: before call k, ``before_call(k)`` sets the estimator's
    offset (the fixed overhead once the simulated context has summarised, else everything the
    real context carried) and returns the overhead of the uncompacted history (added to the raw
    curve); ``after_call(summaries)`` notes a simulated summary."""

    def __init__(self, overheads: Overheads, base_tokens):
        self.overheads = overheads
        self.tokens = OffsetTokens(base_tokens)
        self._last_over: int | None = None
        self._compacted = False
        self._followed = 0          # the real segment whose context the replay runs on (following reality)
        self._shift = 0
        self._uncompacted = 0

    def before_call(self, k: int, hold: bool = False) -> int:
        """``hold``: the call checks the context of the segment before (following reality, at the first call
        after a real compaction): the overheads stay as they were."""
        o = self.overheads
        if hold and k > 0:
            return self._uncompacted
        over, seg = o.per_call[k], o.segment[k]
        known = seg == self._followed
        if known and over is not None:
            self._last_over = over + self._shift
        uncompacted = self._last_over if known and self._last_over is not None else o.fixed + o.hidden
        self.tokens.offset = o.fixed if self._compacted else uncompacted
        self._uncompacted = uncompacted
        return uncompacted

    def follow_segment(self, segment: int, shift: int = 0) -> None:
        """The replay goes on from the real context of ``segment``: its recorded overheads hold again
        (``shift``: tokens the context holds beyond the recorded segment, e.g. the copies a compaction re-sent,
        taken off)."""
        self._followed, self._shift, self._last_over, self._compacted = segment, shift, None, False

    def after_call(self, summaries: int) -> None:
        self._compacted = self._compacted or summaries > 0
