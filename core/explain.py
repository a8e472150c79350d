"""Put a step's boundary into words: where a strategy cut the conversation and why.

Pure (no Qt): ``boundary_explanation(step)`` reads a ``Step``'s working variables and its
``boundary`` edits and returns rows of text for the window's boundary tab, for every strategy
that cuts: the s08 snip (also claude_code's HISTORY_SNIP when it is on) and hermes's
head/middle/tail boundaries. ``find_boundary_step(trace)`` picks the step to explain.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .layers.base import BOUNDARIES, SNIP

SNIP_VARS = ("head_end_initial", "tail_start_initial")

# row kinds: "rule" (the parameters behind the cut), "move" (a cut moved, with its reason),
# "result" (what is kept, what goes), "anchor" (a message kept on purpose), "note", "error"


@dataclass
class BoundaryExplanation:
    title: str
    kind: str                                   # "snip" | "hermes" | "off" | "none"
    rows: list = field(default_factory=list)    # [(kind, text)]
    cuts: list = field(default_factory=list)    # [(message index in the step's input, text)]

    @property
    def tab_title(self) -> str:
        """What a view calls the place it shows this: "Boundaries" for head/middle/tail boundaries."""
        return "Boundaries" if self.kind == "hermes" else "Snip boundary"

    def texts(self, kind: str | None = None) -> list[str]:
        return [t for k, t in self.rows if kind is None or k == kind]


def is_snip_step(step) -> bool:
    return step is not None and all(k in (getattr(step, "vars", None) or {}) for k in SNIP_VARS)


def is_hermes_boundary_step(step) -> bool:
    """A step of a layer whose role is to compute head/middle/tail boundaries (hermes)."""
    return step is not None and getattr(step, "role", "") == BOUNDARIES


def find_boundary_step(trace):
    """The step whose cut the boundary tab explains: a snip that ran, else a boundaries step
    (hermes), else any layer whose role is snip (e.g. claude_code's snip when it is switched off)."""
    if trace is None:
        return None
    steps = list(getattr(trace, "steps", []) or [])
    for s in steps:
        if is_snip_step(s):
            return s
    for s in steps:
        if is_hermes_boundary_step(s):
            return s
    for s in steps:
        if getattr(s, "role", "") == SNIP:
            return s
    return None


def _moves(step, var: str) -> list:
    return [e for e in step.edits if e.kind == "boundary" and e.var == var]


def _reason(text: str) -> str:
    # "compress_end 64 -> 57: token walk: ..." -> "token walk: ..."
    return text.split(": ", 1)[1] if ": " in text else text


def snip_rows(step) -> list:
    """The s08 snip boundaries before and after each guard, each move with its reason."""
    v = step.vars
    n = v.get("messages", len(step.input))
    rows = [("rule", f"{n} messages > max_messages {v.get('max_messages')}: keep_head {v.get('keep_head')}, "
                     f"keep_tail {v.get('keep_tail')} (= max_messages \u2212 keep_head)")]
    moves = {e.var: e for e in step.edits if e.kind == "boundary" and e.var}
    he0, he1 = v.get("head_end_initial"), v.get("head_end_after_guard", v.get("head_end"))
    ts0, ts1 = v.get("tail_start_initial"), v.get("tail_start_after_guard", v.get("tail_start"))

    def why(var):
        e = moves.get(var)
        return " (the guard did not move it)" if e is None else ", because " + _reason(e.text)
    rows.append(("move", f"head_end starts at keep_head = {he0}; after the head guard: {he1}{why('head_end')}"))
    rows.append(("move", f"tail_start starts at n \u2212 keep_tail = {ts0}; after the tail guard: {ts1}"
                         f"{why('tail_start')}"))
    for e in step.edits:
        if e.kind == "note" and ("head_end" in e.text or "tail_start" in e.text):
            rows.append(("note", f"note: {e.text}"))
    if "snipped" in v:
        s = v["snipped"]
        if s > 0:
            rows.append(("result", f"kept messages 0..{he1 - 1} (head) and {ts1}..{n - 1} (tail); snipped {s}: "
                                   f"{he1}..{ts1 - 1}"))
        elif s < 0:
            rows.append(("result", f"head_end {he1} > tail_start {ts1}: snipped {s}, messages {ts1}..{he1 - 1} "
                                   "appear twice"))
        else:
            rows.append(("result", "nothing snipped"))
    if step.error:
        rows.append(("error", f"error: {step.error}"))
    return rows


def hermes_rows(step) -> tuple[list, list]:
    """hermes's head / middle / tail: compress_start and compress_end, where each started, every
    move with its reason, the anchors kept in the tail, and what goes to the summary."""
    v = step.vars or {}
    if "compress_start" not in v or "compress_end" not in v:
        why = step.explain() if hasattr(step, "explain") else ""
        rows = [("note", f"No boundaries were computed: {why}. hermes compacts only when the prune gate fires "
                         "(estimated tokens over the threshold, or trigger=always); see the hermes_prune step.")]
        if step.error:
            rows.append(("error", f"error: {step.error}"))
        return rows, []
    n = len(step.input)
    cs, ce = int(v["compress_start"]), int(v["compress_end"])
    head = v.get("head")
    rows = [("rule", f"{n} messages after the prune pass. The head is protected (system prompt + protect_first_n, "
                     f"first compaction only), the tail is walked back by tokens: tail budget "
                     f"{v.get('tail_budget', 0):,} tokens, soft ceiling {v.get('soft_ceiling', 0):,} (1.5 \u00d7 "
                     f"budget), at least min_tail = {v.get('min_tail')} messages.")]
    start_moves, end_moves = _moves(step, "compress_start"), _moves(step, "compress_end")
    s0 = start_moves[0].old if start_moves else (head if head is not None else cs)
    rows.append(("move", f"compress_start (the first message summarised) starts at {s0}, right after the head"))
    for e in start_moves:
        rows.append(("move", f"compress_start {e.old} \u2192 {e.new}: {_reason(e.text)}"))
    if not start_moves:
        rows.append(("move", f"compress_start stays at {cs} (no anchor moved it)"))
    e0 = end_moves[0].old if end_moves else n
    rows.append(("move", f"compress_end (the first message of the kept tail) starts at {e0}, the end of the list"))
    tt, soft, min_tail = v.get("tail_tokens"), v.get("soft_ceiling"), v.get("min_tail")
    for e in end_moves:
        reason = _reason(e.text)
        if reason.startswith("token walk") and tt is not None and soft is not None:
            k = e0 - e.new if e.new is not None and e0 is not None else None
            if tt > soft:
                reason = (f"token walk from the end: the last {k} message(s) already hold {tt:,} tokens, over the "
                          f"soft ceiling {soft:,}; the walk went past the ceiling only because the tail keeps at "
                          f"least min_tail = {min_tail} messages")
            else:
                reason = (f"token walk from the end: the last {k} message(s) hold {tt:,} tokens, under the soft "
                          f"ceiling {soft:,}; one more would go over")
        rows.append(("move", f"compress_end {e.old} \u2192 {e.new}: {reason}"))
    if not end_moves:
        rows.append(("move", f"compress_end stays at {ce} (no anchor moved it)"))
    lu, la = v.get("last_user"), v.get("last_assistant")
    if lu is not None:
        rows.append(("anchor", f"last real user message: #{lu}, " + (
            "kept in the tail (#10896)" if lu >= ce else "goes to the summary with its turn (it sits right at the "
                                                          "head, #22523)")))
    if la is not None:
        rows.append(("anchor", f"last visible assistant reply: #{la}, " + (
            "kept in the tail (#29824)" if la >= ce else "goes to the summary")))
    mid = max(0, ce - cs)
    rows.append(("result", f"kept head: messages 0..{cs - 1} ({cs}); summarised: {cs}..{ce - 1} ({mid} messages); "
                           f"kept tail: {ce}..{n - 1} ({n - ce})" if mid else
                           f"the middle is empty (compress_start {cs} >= compress_end {ce}): nothing to summarise"))
    if step.error:
        rows.append(("error", f"error: {step.error}"))
    cuts = [(cs, f"\u2702 compress_start = {cs}: {cs}..{ce - 1} summarised, head 0..{cs - 1} kept"),
            (ce, f"\u2702 compress_end = {ce}: tail {ce}..{n - 1} kept")]
    return rows, cuts


def boundary_explanation(step, strategy: str = "") -> BoundaryExplanation:
    """Rows explaining ``step``'s cut (see the module doc); a sentence when no layer cut."""
    if step is None:
        return BoundaryExplanation("Boundary", "none", [("note", f"no layer of {strategy or 'this strategy'} cuts "
                                                                 "the conversation at a boundary")])
    if is_snip_step(step):
        return BoundaryExplanation("Snip boundary: where the cut landed and why", "snip", snip_rows(step))
    if is_hermes_boundary_step(step):
        rows, cuts = hermes_rows(step)
        return BoundaryExplanation("hermes boundaries: head, summarised middle, tail", "hermes", rows, cuts)
    rows = [("note", f"The {step.layer} layer did not cut: {step.explain()}")]
    if step.vars:
        rows += [("note", f"{k} = {val}") for k, val in step.vars.items()]
    return BoundaryExplanation("Snip boundary", "off", rows)


def cut_lines(step) -> tuple[dict, dict]:
    """Cut lines to draw in a message list, before and after the layer: {message index: [(text, kind)]}
    with kind "cut" (where the boundary is) or "initial" (where it started before a guard moved it)."""
    if is_hermes_boundary_step(step):
        ex = boundary_explanation(step)
        lines: dict = {}
        for i, text in ex.cuts:
            lines.setdefault(i, []).append((text, "cut"))
        return lines, dict(lines)        # the layer only computes the cut: same list before and after
    if not is_snip_step(step):
        return {}, {}
    v = step.vars
    he, ts = v.get("head_end"), v.get("tail_start")
    he0, ts0 = v.get("head_end_initial"), v.get("tail_start_initial")
    before: dict = {}
    if he is None or ts is None:
        return {}, {}
    if he0 is not None and he0 != he:
        before.setdefault(he0, []).append((f"head_end started at {he0} (keep_head); the guard moved it to {he}",
                                           "initial"))
    before.setdefault(he, []).append((f"\u2702 head cut: head_end = {he}, messages 0..{he - 1} kept above",
                                      "cut"))
    if ts0 is not None and ts0 != ts:
        before.setdefault(ts0, []).append((f"tail_start started at {ts0} (n \u2212 keep_tail); the guard moved it "
                                           f"to {ts}", "initial"))
    before.setdefault(ts, []).append((f"\u2702 tail cut: tail_start = {ts}, messages {ts}..{len(step.input) - 1} "
                                      "kept below", "cut"))
    after: dict = {}
    snip = next((e for e in step.edits if e.kind == "snip" and e.out is not None), None)
    if snip is not None:
        after.setdefault(snip.out, []).append((f"\u2702 head cut (head_end = {he}): {max(ts - he, 0)} message(s) "
                                               f"{he}..{ts - 1} removed here", "cut"))
        if snip.out + 1 < len(step.messages):
            after.setdefault(snip.out + 1, []).append((f"\u2702 tail cut (tail_start = {ts})", "cut"))
    return before, after
