"""What the stepper and the message list show: the stage, the view mode, the selection, the tab and filters, and what is drawn on the shown list."""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .. import strategies
from ..analysis.session_events import compaction_stage
from ..analysis.explain import cut_lines, find_boundary_step, is_snip_step, lost_results
from ..model.contexts import is_context
from ..pipeline.align import CHANGED, DUPLICATED, INSERTED, REMOVED, RowKinds, align
from ..pipeline.memo import IdentityCache
from .state import AFTER, BEFORE, FILTER_KEYS, TABS, ChartSeries, StageInfo, StageView, stage_label

if TYPE_CHECKING:
    from .model import Session


def view_stage(view: dict, steps: list) -> int:
    """The stage a saved or asked-for view (``apply_view``) opens at over ``steps``: its number, a layer's name
    (lessons), "last" or "changed" (the first layer that changed the list); the original (0) for anything else (a
    saved state edited by hand)."""
    stage = view.get("stage") or 0
    if isinstance(stage, str):
        stage = len(steps) if stage == "last" else \
            compaction_stage(steps) if stage == "changed" else \
            next((k + 1 for k, st in enumerate(steps) if st.layer == stage), 0)
    try:
        k = int(stage)
    except (TypeError, ValueError, OverflowError):
        k = 0
    return max(0, min(k, len(steps)))


class ViewPart:
    """What the stepper and the message list show: the stage, the view mode, the selection, the tab and filters, and what is drawn on the shown list."""

    def __init__(self, s: Session):
        self.s = s
        self.stage = 0
        self.view_mode = AFTER
        self.selection: int | None = None           # message index in the shown list
        self.selected_block: int | None = None
        self.shown = 0                             # the stage whose messages the selection indexes
        self.tab = "diff"
        self.filters = {"search": "", "role": "", "block": "", "changed_only": False, "matches_only": False}
        self.align = IdentityCache(align)         # step -> its aligned rows
        # step -> message index -> status, on each side (from the rows; computed with them, in the background)
        # (one byte per message of the side, not a dict entry per changed message)
        self.status_before = IdentityCache(lambda st: {} if not st.changed else RowKinds(
            self.align.get(st), 0, (REMOVED, CHANGED, DUPLICATED), len(st.input)))
        self.status_after = IdentityCache(lambda st: {} if not st.changed else RowKinds(
            self.align.get(st), 1, (INSERTED, CHANGED, DUPLICATED), len(st.messages)))

    def stages(self) -> list[StageInfo]:
        tr = self.s.trace
        if tr is None:
            n = len(self.s.source.source_messages)
            return [StageInfo("original", "Original", "original",
                              f"{n} messages as loaded; the pipeline is running\u2026")]
        first = tr.steps[0].size_before if tr.steps else 0
        out = [StageInfo("original", "Original", "original",
                         f"{len(tr.input)} messages, {first:,} chars as loaded"
                         + (f"; {len(tr.input_findings)} API finding(s)" if tr.input_findings else ""))]
        lost = self.lost()
        for k, s in enumerate(tr.steps):
            n_lost = sum(1 for x in lost if x.step == k)
            out.append(StageInfo(s.layer, stage_label(self.s.setup.strategy, s.layer),
                                 "failed" if s.error else "changed" if s.changed else "unchanged",
                                 s.explain() + (f" \u2014 LOST: {n_lost} result(s) never persisted and never seen"
                                                if n_lost else "")))
        return out

    def lost(self) -> list:
        """Tool results of the latest batch a layer replaced before anything persisted them
        (``core.explain.lost_results``), computed once per trace."""
        tr = self.s.trace
        if tr is None:
            return []
        hit = getattr(self, "_lost", None)
        if hit is None or hit[0] is not tr:
            hit = self._lost = (tr, lost_results(tr, lambda n: stage_label(self.s.setup.strategy, n)))
        return hit[1]

    def current_step(self):
        tr = self.s.trace
        if tr is None or self.stage <= 0 or self.stage > len(tr.steps):
            return None
        return tr.steps[self.stage - 1]

    def stage_messages(self, k: int) -> list:
        if self.s.trace is None:
            return self.s.source.source_messages
        return self.s.trace.stages()[k][1]

    def stage_findings(self, k: int) -> list:
        if self.s.trace is None:
            return []
        return self.s.trace.input_findings if k <= 0 else self.s.trace.steps[k - 1].findings

    def rows_of(self, step) -> Sequence:
        """core.align rows of a step, computed once per step."""
        return self.align.get(step)

    def stage_view(self) -> StageView:
        """The messages of the current stage in the current view mode, with what to draw on them."""
        k, step = self.stage, self.current_step()
        if step is None:
            msgs = self.stage_messages(0)
            cuts, badges = self.s.source.with_marks(msgs, {}, {})
            return StageView(msgs, findings=self.stage_findings(0), cuts=cuts, badges=badges,
                             where="in this real API context, as recorded" if is_context(self.s.source.source_conversation())
                             else "in the conversation as loaded", shown=0)
        rows = self.rows_of(step)
        before, after = cut_lines(step)
        where = "after " + stage_label(self.s.setup.strategy, step.layer)
        if self.view_mode == BEFORE:
            before, bbadges = self.s.source.with_marks(step.input, before, {})
            return StageView(step.input, step, rows, self.status_before.get(step), self.stage_findings(k - 1),
                             before, bbadges, where, k - 1)
        status = self.status_after.get(step)
        badges = {}
        for x in self.lost():
            if self.s.trace.steps[x.step] is step:
                badges[x.message] = "LOST: never persisted"
        if step.summary and step.summary.get("summarizer"):
            who = "summary by " + str(step.summary["summarizer"]).split(" (")[0] + \
                (" (cached)" if step.summary.get("cached") else "")
            badges.update({e.out: who for e in step.edits if e.kind == "summary" and e.out is not None})
        after, badges = self.s.source.with_marks(step.messages, after, badges)
        return StageView(step.messages, step, rows, status, step.findings, after, badges, where, k)

    def set_stage(self, k: int) -> None:
        n = len(self.s.trace.steps) if self.s.trace is not None else 0
        k = max(0, min(int(k), n))
        if k != self.stage:
            self.show_stage(k, remap_from=self.shown)

    def set_view_mode(self, mode: str) -> None:
        if mode not in (AFTER, BEFORE):
            raise ValueError(f"view mode is 'after' or 'before', not {mode!r}")
        if mode != self.view_mode:
            self.view_mode = mode
            self.s.events.view_mode(mode)
            self.show_stage(self.stage, remap_from=self.shown)

    def show_stage(self, k: int, remap_from: int | None) -> None:
        self.stage = k
        view = self.stage_view()
        sel = self.selection
        if sel is not None and remap_from is not None and self.s.trace is not None:
            sel = self.s.trace.map_index(sel, remap_from, view.shown)
        elif sel is None and view.status:
            sel = min(view.status)          # nothing selected: the first message this layer changed
        self.shown = view.shown
        self.selection, self.selected_block = sel, None
        self.s.events.stage(k)
        self.s.events.selection((sel, None))

    def select(self, i: int | None, block: int | None = None) -> None:
        """Select message i of the shown list (and one of its blocks)."""
        if (i, block) != (self.selection, self.selected_block):
            self.selection, self.selected_block = i, block
            self.s.events.selection((i, block))

    def map_index(self, i: int, a: int, b: int) -> int | None:
        """Index in stage b's messages of message i of stage a (None when a layer removed it)."""
        return None if self.s.trace is None else self.s.trace.map_index(i, a, b)

    def boundary_step(self):
        """The step the boundary tab explains (a snip that cut, hermes's boundaries, ...)."""
        step = self.current_step()
        return step if is_snip_step(step) else find_boundary_step(self.s.trace)

    def variant_run(self):
        """The variant run shown beside the main one (s08: the README snip), or None."""
        return self.s.result.variants[0] if self.s.result is not None and self.s.result.variants else None

    def overview(self) -> list[tuple[str, str, str]]:
        """(label, status, explanation) of every layer: the edit list on Original."""
        return [(s.label, s.status, s.explanation) for s in self.stages()[1:]]

    def chart(self) -> ChartSeries | None:
        tr = self.s.trace
        if tr is None:
            return None
        labels = [s.label for s in self.stages()]
        sizes = [tr.steps[0].size_before if tr.steps else self.s.meter.size(tr.input)] + [s.size_after for s in tr.steps]
        tokens = [tr.steps[0].tokens_before if tr.steps else 0] + [s.tokens_after for s in tr.steps]
        th = self.s.setup.strategy.threshold
        if th is None:
            return ChartSeries(labels, sizes, tokens, None, "", "", False)
        try:
            value = th.value(self.s.setup.params)
        except Exception:   # noqa: BLE001 - the chart line is optional
            value = None
        return ChartSeries(labels, sizes, tokens, value, th.unit, th.label, th.movable)

    def status_text(self) -> str:
        tr = self.s.trace
        view = self.stage_view()
        tok_name = tr.token_estimator if tr else "chars/4"
        size_name = tr.size_estimator if tr else "len(str(messages))"
        step = view.step
        size = tokens = None
        if step is not None:
            before = self.view_mode == BEFORE
            size = step.size_before if before else step.size_after
            tokens = step.tokens_before if before else step.tokens_after
        elif tr is not None and tr.steps:
            size, tokens = tr.steps[0].size_before, tr.steps[0].tokens_before
        run = f" \u00b7 run {self.s.runs}, {self.s.result.seconds * 1000:.0f} ms" if self.s.result else ""
        rr = self.s.replay.replay_result
        if self.s.replay.shown_call is not None and rr is not None:
            run += f" \u00b7 model call #{self.s.replay.shown_call} of {len(rr.calls)}"
        return (f"{len(view.messages):,} messages \u00b7 "
                + (f"{size:,} chars ({size_name})" if size is not None else "size: computing\u2026") + " \u00b7 "
                + (f"{tokens:,} tokens ({tok_name})" if tokens is not None else "tokens: computing\u2026")
                + f" \u00b7 strategy {strategies.short_label(self.s.setup.strategy.name)} ({self.s.setup.choice_words()}){run}"
                + (f" \u00b7 {self.s.setup.inferred_text()}" if self.s.setup.inferred_text() else ""))

    def set_tab(self, tab: str) -> None:
        if tab not in TABS:
            raise ValueError(f"tab is one of {', '.join(TABS)}, not {tab!r}")
        if tab != self.tab:
            self.tab = tab
            self.s.events.tab(tab)
        if tab == "timeline" and self.s.replay.replay_stale:
            self.s.replay.run_replay()

    def set_filters(self, **kw) -> None:
        unknown = set(kw) - set(FILTER_KEYS)
        if unknown:
            raise KeyError(f"unknown filter(s) {', '.join(sorted(unknown))} (known: {', '.join(FILTER_KEYS)})")
        new = {**self.filters, **kw}
        if new != self.filters:
            self.filters = new
            self.s.events.filters(dict(new))

    def apply_view(self, view: dict) -> None:
        mode = view.get("mode") or AFTER
        if mode != self.view_mode:
            self.view_mode = mode
            self.s.events.view_mode(mode)
        self.selection = None
        self.show_stage(view_stage(view, self.s.trace.steps if self.s.trace else []), remap_from=None)
        if view.get("selection") is not None:
            self.select(int(view["selection"]), view.get("block"))
