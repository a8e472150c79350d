"""The replay of the conversation's life: the runs compared, their results, the timeline's cursor and the model call whose pipeline run the stepper shows."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING

from .. import strategies
from ..pipeline.engine import PipelineResult
from ..replay.shared import release
from ..replay.views import timeline_columns
from ..runtime.jobs import Executor, Worker
from .loading import gc_paused
from ..strategies.spec import RUN_FORMAT, compare_runs

if TYPE_CHECKING:
    from .model import Session


class ReplayPart:
    """The replay of the conversation's life: the runs compared, their results, the timeline's cursor and the model call whose pipeline run the stepper shows."""

    def __init__(self, s: Session, ex: Executor):
        self.s = s
        self.replayer = Worker(ex, self._replay_done, self._replay_failed, name="replay")
        self.cursor_after_replay: int | None = None
        # replay
        self.compare_names: list[str] = []
        self.compare_extra = ""
        self.replay_results: list = []
        self.replay_stale = True
        self.cursor: int | None = None
        self.follow = True
        self.replay_free = False                    # timeline replay: free-running (--free), else following reality
        self.shown_call: int | None = None
        self.call_wanted: int | None = None
        self.call_job: int | None = None
        self._iters: list = []
        self.replay_totals: list[dict] = []         # each result's totals() (made with it, in the replay's worker)
        self.columns: dict | None = None             # the first result's timeline_columns() (made with it too)

    @property
    def replay_result(self):
        return self.replay_results[0] if self.replay_results else None

    @property
    def iterations(self) -> list:
        """The first result's ``iterations()`` (made with it)."""
        return self._iters

    @property
    def call_running(self) -> bool:
        """A replayed call's pipeline run is on its way to the stepper."""
        return self.call_job is not None

    def call_caption(self, i: int) -> str:
        rr = self.replay_result
        if rr is None or not 0 <= i < len(rr.calls):
            return ""
        c = rr.calls[i]
        it = self._iters[i]
        fired = ", ".join(c.fired) if c.fired else "nothing fired"
        return (f"model call #{i} of {len(rr.calls)} (before message #{c.message_index}): "
                f"{c.messages_before} \u2192 {c.messages_after} messages, {c.tokens_before:,} \u2192 "
                f"{c.tokens_after:,} tokens; {fired}; user turn {it['turn']}"
                + (f": iterations {it['used']}/{rr.iteration_cap}" if rr.iteration_cap is not None else "")
                + (f" (+{it['refunded']} refunded)" if it["refunded"] else "")
                + (" \u2014 over the iteration cap" if it["refused"] else ""))

    def set_compare(self, names: list[str] | None = None, extra: str | None = None, run: bool = True) -> None:
        """The runs compared with the current one: strategies with their defaults, and runs written as
        [LABEL=]NAME[:K=V,...] separated by ';'."""
        if names is not None:
            known = strategies.available()          # in the registry's order, like the window's boxes
            self.compare_names = [n for n in known if n in names] + [n for n in names if n not in known]
        if extra is not None:
            self.compare_extra = extra
        self.replay_stale = True
        self.s.events.compare({"names": list(self.compare_names), "extra": self.compare_extra})
        if run and self.s.view.tab == "timeline":
            self.run_replay()

    def set_compare_spec(self, spec, run: bool = True) -> None:
        """``--compare`` values (one string or several, each one run or several ';'-separated:
        ``spec.split_runs``, as every command reads them): a bare strategy name ticks it, anything else is an
        extra run."""
        from ..strategies.spec import split_runs
        names: list[str] = []
        extra: list[str] = []
        known = set(strategies.available())
        for part in split_runs(spec):
            (names if part in known else extra).append(part)
        self.set_compare(names, "; ".join(extra), run)

    def compare_configs(self) -> list:
        return compare_runs(self.s.setup.strategy, self.s.setup.params, self.compare_names, self.compare_extra,
                            self.s.source.conversation)          # compared runs infer their defaults too, like --compare

    def run_replay(self) -> None:
        """core.replay over the conversation's life for every run compared, in the background."""
        if self.s.source.conversation is None:
            return
        from ..replay import compare
        try:
            configs = self.compare_configs()
        except (KeyError, ValueError, ImportError) as e:
            self.s.set_error(f"Compare: {e.args[0] if e.args else e}",
                           f"Write each run as NAME or {RUN_FORMAT} separated by ';' "
                           f"(strategies: {', '.join(strategies.available())}).")
            return
        try:
            summ = self.s.setup.summarizer_object()
        except (ValueError, ImportError) as e:
            self.s.set_error(f"Summarizer: {e}", "Choose offline, anthropic[:MODEL] or fixed:TEXT.")
            return
        self.replay_stale = False
        conv, ws = self.s.source.conversation, self.s.workspace
        self.s.events.replay_running(len(configs))
        free = self.replay_free
        if len(configs) != 1:
            self.replayer.start(lambda state: _with_views(compare(conv, configs, workspace=ws, summarizer=summ,
                                                                  cancel=state.cancel, free=free)))
            return
        # one run: the events dock replays the same one (the same strategy, parameters, summarizer, workspace and
        # mode): run once for both (``core.replay.shared``); several runs compared decide their calibration together
        from ..replay.shared import key, shared
        cfg = configs[0]
        k = key(conv, cfg.strategy, cfg.params, summarizer=self.s.setup.summarizer, workspace=ws, free=free)

        def job(state):
            res = shared(k, lambda: next(iter(compare(conv, configs, workspace=ws, summarizer=summ,
                                                      cancel=state.cancel, free=free)), None), cfg.label, state.cancel)
            return _with_views([res] if res is not None else [])
        self.replayer.start(job)

    def _replay_failed(self, exc: BaseException) -> None:
        self.s.events.replay_running(0)
        self.s.set_error(f"The replay failed: {type(exc).__name__}: {exc}",
                       getattr(exc, "hint", "") or "Press F5 to try again.")

    def _replay_done(self, done: tuple) -> None:
        results, self.replay_totals, self._iters, self.columns = done
        old = self.replay_results
        self.replay_results = list(results)
        rr = self.replay_result
        self.shown_call = None
        if rr is not None and self.cursor is not None:
            self.cursor = min(self.cursor, len(rr.calls) - 1) if rr.calls else None
        self.s.events.replay_running(0)
        self.s.events.replay(self.replay_results)
        # the results before, now that the views show the new ones: freed in pieces in the background (a replay
        # of 50k calls freed at once held the window ~0.5 s)
        release(old)

    def set_replay_free(self, on: bool) -> None:
        """The timeline's replay free-running (its own summaries all the way) or following reality; replays again."""
        if bool(on) != self.replay_free:
            self.replay_free = bool(on)
            self.run_replay()

    def set_follow(self, on: bool) -> None:
        if bool(on) != self.follow:
            self.follow = bool(on)
            self.s.events.follow(self.follow)

    def set_cursor(self, i: int | None) -> None:
        """The timeline's cursor is on model call i: with ``follow`` the stepper shows the pipeline run
        before that call. While the timeline plays, calls arrive faster than they run: only the newest
        one waits."""
        if i != self.cursor:
            self.cursor = i
            self.s.events.cursor(i)
        rr = self.replay_result
        if i is None or rr is None or not 0 <= i < len(rr.calls) or not self.follow:
            return
        self.call_wanted = i
        if self.call_job is None:
            self.start_call_job(i)

    def start_call_job(self, i: int) -> None:
        rr = self.replay_result
        self.call_job = i

        def job(state):
            t0 = time.perf_counter()
            with gc_paused():                # a run like _run_job's (see gc_paused)
                tr = rr.rerun(i, cancel=state.cancel)
            return PipelineResult(tr, seconds=time.perf_counter() - t0, cancelled=state.cancel.is_set(),
                                  params=dict(rr.params), call_index=i)
        self.s.events.running("call")
        self.s.pipeline.start(job)

    def apply_cursor(self) -> None:
        want = self.cursor_after_replay
        if want is None:
            return
        if self.replay_result is None:
            self.s.events.replay.connect(self._cursor_when_replayed)
            return
        self.cursor_after_replay = None
        self.set_cursor(want)

    def _cursor_when_replayed(self, ev) -> None:
        if ev.value:
            self.s.events.replay.disconnect(self._cursor_when_replayed)
            self.apply_cursor()


def _with_views(results: list) -> tuple:
    """In the replay's worker: the results, each one's totals, the first one's iterations and what the timeline draws
    of it (``timeline_columns``), which the timeline,
    its table and the call captions show (each a walk over every call: ~0.1 s apiece at 50k calls, twice over in
    the window's thread when they were made there)."""
    results = list(results)
    return (results, [r.totals() for r in results], results[0].iterations() if results else [],
            timeline_columns(results[0]) if results else None)
