"""Put a step's boundary into words: where a strategy cut the conversation and why.

Pure (no Qt): ``boundary_explanation(step)`` reads a ``Step``'s working variables and its
``boundary`` edits and returns rows of text for the window's boundary tab, for every strategy
that cuts: the s08 snip (also claude_code's HISTORY_SNIP when it is on) and hermes's
head/middle/tail boundaries. ``find_boundary_step(trace)`` picks the step to explain.
"""
from __future__ import annotations

from ..runtime.record import field, record
from ..layers.base import BOUNDARIES, BUDGET, MICRO, SNIP
from ..pipeline.trace import PERSIST, REPLACE

SNIP_VARS = ("head_end_initial", "tail_start_initial")
# what the seed README's snip_compact lacks, compared with the course code (seed 000): it has both guards
README_LACKS = ("the overlap check (head_end >= tail_start: return the list unchanged) and the bounds checks "
                "(head_end > 0; 0 < tail_start < len(messages))")

# row kinds: "rule" (the parameters behind the cut), "move" (a cut moved, with its reason),
# "result" (what is kept, what goes), "anchor" (a message kept on purpose), "note", "error"


@record
class BoundaryExplanation:
    """Why a boundary layer (snip, Hermes' head and tail) cut where it did: rows of reasons and the cuts."""
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
    readme = v.get("variant") == "readme"
    if readme:
        rows.insert(1, ("rule", f"the README code: the same two guards, without {README_LACKS}"))
    if "snipped" in v:
        s = v["snipped"]
        if s > 0:
            rows.append(("result", f"kept messages 0..{he1 - 1} (head) and {ts1}..{n - 1} (tail); snipped {s}: "
                                   f"{he1}..{ts1 - 1}"))
        elif s < 0:
            rows.append(("result", f"head_end {he1} > tail_start {ts1}: snipped {s}, messages {ts1}..{he1 - 1} "
                                   "appear twice"))
        elif readme:
            rows.append(("result", f"head_end {he1} = tail_start {ts1}: snipped 0, yet the placeholder "
                                   f"{placeholder_of(step)!r} is inserted: one message more, nothing removed"))
        else:
            rows.append(("result", f"head_end {he1} >= tail_start {ts1}: head and tail overlap, the overlap check "
                                   "returns the list unchanged (nothing snipped)"))
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
            "kept in the tail: hermes never summarises the newest request away (hermes-agent issue #10896)"
            if lu >= ce else "goes to the summary with its whole turn: it sits right after the head, and keeping "
                             "it would split its turn (hermes-agent issue #22523)")))
    if la is not None:
        rows.append(("anchor", f"last visible assistant reply: #{la}, " + (
            "kept in the tail: the model still sees its own last answer (hermes-agent issue #29824)"
            if la >= ce else "goes to the summary")))
    mid = max(0, ce - cs)
    rows.append(("result", f"kept head: messages 0..{cs - 1} ({cs}); summarised: {cs}..{ce - 1} ({mid} messages); "
                           f"kept tail: {ce}..{n - 1} ({n - ce})" if mid else
                           f"the middle is empty (compress_start {cs} >= compress_end {ce}): nothing to summarise"))
    if step.error:
        rows.append(("error", f"error: {step.error}"))
    cuts = [(cs, f"\u2702 compress_start = {cs}: {cs}..{ce - 1} summarised, head 0..{cs - 1} kept"),
            (ce, f"\u2702 compress_end = {ce}: tail {ce}..{n - 1} kept")]
    return rows, cuts


def placeholder_of(step) -> str | None:
    """The placeholder text a snip step inserted (None when it inserted none)."""
    e = next((e for e in getattr(step, "edits", ()) if e.kind == "snip" and e.data and "placeholder" in e.data), None)
    return e.data["placeholder"] if e is not None else None


def _outcome(step) -> str:
    """What a snip step did to the list, in a few words."""
    v = step.vars
    he, ts, s = v.get("head_end"), v.get("tail_start"), v.get("snipped")
    if step.error:
        return f"fails: {step.error}"
    if not is_snip_step(step):
        return f"leaves the list alone: {step.explain()}"
    if s is None or s == 0 and not step.changed:
        return f"stops at head_end {he} >= tail_start {ts} and returns the list unchanged"
    return f"removes messages {he}..{ts - 1} ({s}) and inserts {placeholder_of(step)!r}"


def variant_rows(step, vstep) -> list:
    """Where the README snip (``vstep``) differs from the course code's (``step``), for every case: the same cut
    (only the placeholder differs), "snipped 0" with a placeholder, a negative snip duplicating messages, an
    IndexError at the list's ends, or cuts that land elsewhere. Rows of kind "same" or "differ"."""
    if step is None or vstep is None:
        return []
    n = len(step.input)
    if vstep.error:
        return [("differ", f"The README code fails: {vstep.error}. It lacks the bounds checks (head_end > 0; "
                           f"0 < tail_start < len(messages)), so it reads past the list's end; the course code "
                           f"{_outcome(step)}.")]
    if not is_snip_step(vstep) and not is_snip_step(step):
        return [("same", f"Both leave the list alone: {n} messages <= max_messages "
                         f"{(step.vars or {}).get('max_messages')}.")]
    v = vstep.vars
    he, ts, s = v.get("head_end"), v.get("tail_start"), v.get("snipped")
    grow = (f"{n} → {len(vstep.messages)} messages, {vstep.size_before:,} → {vstep.size_after:,} chars"
            if vstep.size_after is not None else f"{n} → {len(vstep.messages)} messages")
    if s is not None and s < 0:
        return [("differ", f"The README code cuts at head_end {he} > tail_start {ts}: snipped {s}, so messages "
                           f"{ts}..{he - 1} appear twice ({grow}). It lacks the overlap check; the course code "
                           f"{_outcome(step)}.")]
    if s == 0:
        return [("differ", f"The README code inserts {placeholder_of(vstep)!r} although it cuts nothing ({grow}: "
                           f"the size grows). It lacks the overlap check; the course code {_outcome(step)}.")]
    g = step.vars or {}
    if is_snip_step(step) and (g.get("head_end"), g.get("tail_start")) == (he, ts) and step.changed:
        return [("same", f"Both cut at the same place: messages {he}..{ts - 1} ({s}). Only the placeholder "
                         f"differs: {placeholder_of(step)!r} against {placeholder_of(vstep)!r}. The README code "
                         f"would differ only when the guards push head_end to tail_start or past it, or when the "
                         f"cut falls at the list's ends.")]
    why = ""
    if v.get("head_end_initial") == 0:
        why = (" With keep_head 0 the README head guard reads messages[-1], the LAST message, because it lacks "
               "the head_end > 0 check.")
    return [("differ", f"The cuts differ: the course code {_outcome(step)}; the README code {_outcome(vstep)}."
                       + why)]


@record(frozen=True)
class LostResult:
    """A tool result a layer replaced with a placeholder although nobody persisted it and the model never saw
    it (it is in the latest batch, after the last assistant message): its content is now nowhere."""
    step: int                 # index in trace.steps
    edit: int                 # index in that step's edits
    message: int              # input message index
    tool_id: str | None
    chars: int
    budget_after: str | None  # the budget layer that runs after it in this order (too late), if any

    @property
    def text(self) -> str:
        t = (f"LOST: {self.tool_id} ({self.chars:,} chars) was replaced by a placeholder, yet nothing persisted "
             f"it and the model has not seen it (it is in the latest batch): its content is neither in the "
             f"context nor on disk")
        if self.budget_after:
            t += f"; {self.budget_after} runs after this layer in this order, too late to persist it"
        return t


def _fresh_start(messages: list) -> int:
    """Index of the first message after the last assistant message (the batch the model has not seen)."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if isinstance(m, dict) and m.get("role") == "assistant":
            return i + 1
    return 0


def lost_results(trace, label=None) -> list[LostResult]:
    """Results a micro layer replaced before any layer persisted them, from the latest batch (see
    ``LostResult``): what goes wrong when micro runs before budget (``--order``), and seed 001's "micro can
    replace results the model has not seen yet when one batch has more than keep_recent results".
    ``label(layer name) -> str`` names the layers (default: the names)."""
    from ..layers.s08 import persisted_reference
    steps = list(getattr(trace, "steps", None) or [])
    persisted: set = set()
    out: list[LostResult] = []
    for k, s in enumerate(steps):
        if s.role == MICRO and s.edits:
            fresh = _fresh_start(s.input)
            later = next((t.layer for t in steps[k + 1:] if t.role == BUDGET), None)
            for j, e in enumerate(s.edits):
                if e.kind != REPLACE or e.message is None or e.message < fresh or e.tool_id in persisted:
                    continue
                old = _block_content(s.input, e.message, e.block)
                if isinstance(old, str) and persisted_reference(old) is not None:
                    continue
                out.append(LostResult(k, j, e.message, e.tool_id, e.old_len or 0,
                                      (label(later) if label and later else later)))
        for e in s.edits:
            if e.kind == PERSIST and e.tool_id:
                persisted.add(e.tool_id)
    return out


def _block_content(messages: list, mi: int, bi):
    try:
        m = messages[mi]
        if bi is None:
            return m.get("content")
        return m["content"][bi].get("content")
    except (IndexError, KeyError, TypeError, AttributeError):
        return None


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
