"""Mixture-of-Agents reference view, and the iteration budget of Hermes' turn loop (seed 002).

``moa_reference_view(messages)`` is what the *reference* (advisory) models of Hermes' MoA loop
see: a disposable copy of the transcript made only of plain user/assistant text turns:

* the system prompt is dropped;
* an assistant turn keeps its text, and its ``tool_calls`` are rendered as
  ``[called tool: name(args)]`` lines;
* every ``tool`` result is folded into the preceding assistant turn as a
  ``[tool result: ...]`` block, capped to a head+tail preview (4,000 chars by default:
  the first and last 2,000 with ``[... N chars omitted ...]`` between);
* image-only user turns become a placeholder, empty user turns and empty assistant turns vanish;
* the view always ends on a user turn: when the transcript ends with the agent, a synthetic
  advisory request is appended (a trailing assistant turn would read as a prefill).

The acting model always gets the full transcript; this view is only what the advisors read.
It is a pure function returning a ``LayerOutput`` (origin map, edits in words), so the window
can show it like any layer; ``MOA_LAYER`` exposes it as an extra layer of the hermes strategy.

``IterationBudget`` models the per-agent iteration cap of the turn loop: each model call
consumes one iteration; a compaction restart (the loop compacts and re-sends instead of
getting an answer) refunds the iteration it consumed, so compaction never eats the budget
while the cap still bounds real model turns.
"""
from __future__ import annotations

import json
from typing import Any

from ..runtime.record import field, record
from ..layers.base import VIEW, Layer, LayerContext
from ..layers.hermes import HermesParams
from ..model.text import visible_text
from ..pipeline.trace import CONVERT, DROP, INSERT, REPLACE, Edit, LayerOutput

REFERENCE_TOOL_RESULT_CHARS = 4000
ADVISORY_REQUEST = (
    "[The conversation above is the current state of the task. Give your most intelligent judgement: what is "
    "going on, what should happen next, what risks or mistakes you see, and how the acting agent should proceed.]")
NON_TEXT_USER = "[user sent non-text content (e.g. an image attachment)]"


def preview(text: str, budget: int = REFERENCE_TOOL_RESULT_CHARS) -> str:
    """Head and tail halves of ``budget`` with the omitted count between them."""
    if not text or len(text) <= budget:
        return text
    half = budget // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} chars omitted ...]\n{text[-half:]}"


def render_calls(calls: Any) -> str:
    lines = []
    for c in calls or []:
        fn = (c.get("function") or {}) if isinstance(c, dict) else {}
        name = fn.get("name") or (c.get("name") if isinstance(c, dict) else "") or "tool"
        args = fn.get("arguments")
        if isinstance(args, str):
            text = args
        elif args is not None:
            try:
                text = json.dumps(args, ensure_ascii=False)
            except (TypeError, ValueError):
                text = str(args)
        else:
            text = ""
        lines.append(f"[called tool: {name}({text})]" if text else f"[called tool: {name}]")
    return "\n".join(lines)


def moa_reference_view(messages: list, preview_chars: int = REFERENCE_TOOL_RESULT_CHARS) -> LayerOutput:
    """The advisory copy of an OpenAI-dialect transcript that MoA reference models see."""
    out: list[dict] = []
    origin: list = []
    edits: list[Edit] = []
    folded = calls_rendered = dropped = 0
    last_user = None
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            continue
        role, content = m.get("role"), m.get("content")
        text = visible_text(content)
        if role == "system":
            edits.append(Edit(DROP, f"message {i}: system prompt dropped (not advisory signal)", message=i))
            dropped += 1
            continue
        if role == "user":
            if not text.strip() and isinstance(content, list) and content:
                text = NON_TEXT_USER
            if not text.strip():
                edits.append(Edit(DROP, f"message {i}: empty user turn dropped", message=i))
                dropped += 1
                continue
            last_user = text
            out.append({"role": "user", "content": text})
            origin.append(i)
        elif role == "assistant":
            parts = [text.strip()] if text.strip() else []
            rendered = render_calls(m.get("tool_calls"))
            if rendered:
                parts.append(rendered)
                calls_rendered += len(m.get("tool_calls") or [])
                edits.append(Edit(CONVERT, f"message {i}: {len(m.get('tool_calls') or [])} tool call(s) rendered "
                                           "as text", message=i))
            if parts:
                out.append({"role": "assistant", "content": "\n".join(parts)})
                origin.append(i)
            else:
                edits.append(Edit(DROP, f"message {i}: empty assistant turn dropped", message=i))
                dropped += 1
        elif role == "tool":
            short = preview(text, preview_chars)
            block = f"[tool result: {short}]"
            if out and out[-1]["role"] == "assistant":
                out[-1] = {**out[-1], "content": out[-1]["content"] + "\n" + block}
                where = f"folded into turn {len(out) - 1}"
            else:
                out.append({"role": "assistant", "content": block})
                origin.append(i)
                where = "kept as its own assistant line (nothing to fold into)"
            folded += 1
            edits.append(Edit(REPLACE, f"message {i}: tool result {where}" +
                              (f", previewed {len(text):,} -> {len(short):,} chars" if short != text else ""),
                              message=i, tool_id=m.get("tool_call_id"), old_len=len(text), new_len=len(short)))
        else:
            edits.append(Edit(DROP, f"message {i}: role {role!r} ignored", message=i))
            dropped += 1
    if out and out[-1]["role"] == "assistant":
        out.append({"role": "user", "content": ADVISORY_REQUEST})
        origin.append(None)
        edits.append(Edit(INSERT, "advisory request appended so the view ends on a user turn", out=len(out) - 1))
    if not out and last_user is not None:
        out, origin = [{"role": "user", "content": last_user}], [None]
    v = {"preview_chars": preview_chars, "tool_results_folded": folded, "tool_calls_rendered": calls_rendered,
         "dropped": dropped, "messages_in": len(messages), "messages_out": len(out)}
    note = (f"reference view: {len(messages)} -> {len(out)} text-only turns; {calls_rendered} tool call(s) as "
            f"text, {folded} result(s) folded into previews of at most {preview_chars:,} chars, {dropped} dropped")
    return LayerOutput(out, origin, edits, v, note)


def _moa_layer(messages: list, ctx: LayerContext) -> LayerOutput:
    return moa_reference_view(messages, HermesParams.of(ctx).moa_preview_chars)


MOA_LAYER = Layer("moa_reference_view", _moa_layer,
                  "what Mixture-of-Agents reference models see: no system prompt, tool calls as text, results "
                  "folded into capped previews, ending on a user turn", label="MoA view", role=VIEW)


@record
class IterationBudget:
    """The turn loop's iteration cap.

    * ``consume()`` takes one iteration for a model call and returns False when the cap is
      reached (the loop must stop);
    * ``refund()`` gives one back; the loop calls it when a call was not a real turn: a
      compaction restart (compress, then re-send) refunds the iteration it consumed;
    * ``used`` never goes below 0 and never above ``max_total``; ``remaining = max_total - used``.

    ``events`` records what happened, for replay: ("consume" | "refused" | "refund", used after).
    """
    max_total: int = 90
    used: int = 0
    events: list = field(default_factory=list)

    @property
    def remaining(self) -> int:
        return max(0, self.max_total - self.used)

    def consume(self) -> bool:
        if self.used >= self.max_total:
            self.events.append(("refused", self.used))
            return False
        self.used += 1
        self.events.append(("consume", self.used))
        return True

    def refund(self) -> None:
        if self.used > 0:
            self.used -= 1
        self.events.append(("refund", self.used))

    def compaction_restart(self) -> None:
        """The call that just consumed an iteration ended in a compaction and a retry: give it back."""
        self.refund()


def simulate_turns(model_calls: list[str], max_total: int = 90) -> tuple[IterationBudget, int]:
    """Replay a sequence of loop events through a budget: each item is ``"turn"`` (a real model
    turn) or ``"compact"`` (a call that ended in a compaction restart). Returns the budget and
    how many events ran before the cap stopped the loop."""
    budget = IterationBudget(max_total)
    ran = 0
    for ev in model_calls:
        if not budget.consume():
            break
        ran += 1
        if ev == "compact":
            budget.compaction_restart()
    return budget, ran


def budget_for_replay(result: Any, max_total: int = 90) -> tuple[IterationBudget, int | None]:
    """Walk a ``core.replay.ReplayResult`` through an iteration budget: each model call consumes
    one iteration; a call before which the strategy compacted first consumed one for the
    compaction restart and got it refunded. Returns the budget and the index of the first call
    the cap would have refused (None if the whole recording fits)."""
    budget = IterationBudget(max_total)
    for call in getattr(result, "calls", []):
        if getattr(call, "compacted", False):
            if not budget.consume():
                return budget, call.index
            budget.compaction_restart()
        if not budget.consume():
            return budget, call.index
    return budget, None
