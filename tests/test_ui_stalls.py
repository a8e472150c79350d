"""Issue 12, no UI stall over 100 ms: what showing a big session costs the window's thread is made in the
workers (the load's, the pipeline's) and handed over made, and what the window must still build is built
only for what it shows. Timings live in bench/bench_window.py; these tests check where the work happens."""
from __future__ import annotations

import gc
import threading

from compactscope.core.model import contexts
from compactscope.core.analysis import present
from compactscope.core.session import loading as S
from compactscope.core.model.conversation import Conversation, MessageMeta
from compactscope.core.runtime.jobs import ThreadExecutor
from compactscope.core.session.model import Session
from compactscope.core.files.workspace import Workspace

from test_big_sessions import drain_until, write_session


def test_the_load_worker_makes_the_calls_segments_and_inference_the_window_asks_for(tmp_path, monkeypatch):
    """At 100k messages the picker's calls and segments and Claude Code's inference took ~0.6 s of the
    window's thread when the load arrived: they are made in the load's worker, and found made."""
    monkeypatch.setattr(S, "BACKGROUND_LOAD_BYTES", 10_000)
    monkeypatch.setattr(S, "PREVIEW_BYTES", 20_000)
    from compactscope.core import strategies
    real_infer = strategies.infer_params
    inferred_in = []
    monkeypatch.setattr(strategies, "infer_params",
                        lambda st, conv: inferred_in.append(threading.current_thread()) or real_infer(st, conv))
    real_calls = contexts._call_indices
    calls_in = []
    monkeypatch.setattr(contexts, "_call_indices",
                        lambda conv: calls_in.append(threading.current_thread()) or real_calls(conv))
    path = tmp_path / "big.jsonl"
    write_session(path, 600)
    ex = ThreadExecutor(queued=True)
    s = Session(Workspace(tmp_path / "ws"), executor=ex)          # opens with the file's own: claude_code
    assert s.source.open(str(path)) is True
    drain_until(ex, lambda: not s.busy)
    assert s.setup.strategy.name == "claude_code" and len(s.source.conversation.messages) == 600
    main = threading.main_thread()
    assert inferred_in and main not in inferred_in                  # the inference: in the worker only
    assert calls_in and main not in calls_in
    assert s.setup.inferred is not None and s.setup.inferred.params            # and used: claude_code infers from usage
    # what the window's picker asks for is there, and asking again computes nothing
    before = len(calls_in)
    choices = contexts.call_choices(s.source.conversation, s.source.segment)
    assert len(choices) == 300 and contexts.segments(s.source.conversation)[0].calls == 300
    assert len(calls_in) == before


def test_switching_strategies_back_and_forth_infers_each_once(tmp_path, monkeypatch):
    """A strategy's inference over a conversation is kept: switching back to it reads nothing again."""
    from compactscope.core import strategies
    real_infer = strategies.infer_params
    inferred = []
    monkeypatch.setattr(strategies, "infer_params", lambda st, conv: inferred.append(getattr(st, "name", st))
                        or real_infer(st, conv))
    path = tmp_path / "s.jsonl"
    write_session(path, 200)
    s = Session(Workspace(tmp_path / "ws"), strategy="s08")
    s.setup.pin_strategy()
    assert s.source.open(str(path))
    for name in ("claude_code", "s08", "claude_code", "hermes", "claude_code"):
        assert s.setup.set_strategy(name)
    assert sorted(inferred) == ["claude_code", "hermes", "s08"]
    assert s.setup.inferred.params                                    # claude_code's defaults, from the kept inference


def test_call_choices_label_only_the_calls_read():
    msgs, meta = [], []
    for k in range(20_000):
        msgs.append({"role": "user" if k % 2 == 0 else "assistant", "content": f"m{k}"})
        meta.append(MessageMeta(timestamp=1_700_000_000 + k))
    conv = Conversation(msgs, meta=meta, segments=[0, 10_000])
    whole = contexts.call_choices(conv, None)
    second = contexts.call_choices(conv, 1)
    assert len(whole) == 10_000 and len(second) == 5_000
    assert second[0][0] == 5_000 and second[-1][0] == 9_999 and second.index(5_001) == 1
    # the labels, as the list-of-pairs made them: the call, its time, what it sent
    n, label = second[3]
    assert n == 5_003 and label.startswith("call 5003 \u00b7 ") and "7 messages sent" in label
    assert [c for c, _ in whole[:3]] == [0, 1, 2] and whole[:3][2][1].startswith("call 2")
    assert contexts.call_choices(conv, 1).key == second.key != whole.key


def test_the_picker_reads_the_labels_it_shows_not_every_call(qtbot):
    from compactscope.widgets.context_picker import ContextPicker

    class Calls(list):
        """(call, label) pairs that count the labels read."""
        read = 0
        key = ("calls", 50_000)

        def __getitem__(self, k):
            Calls.read += 1
            return super().__getitem__(k)

        def index(self, value, *args):
            return value
    calls = Calls((n, f"call {n}") for n in range(50_000))
    p = ContextPicker()
    qtbot.addWidget(p)
    p.set_state([(0, "main", "")], [(0, "segment 0", "tip")], calls, 0, 0, 42_000)
    assert p.call_box.count() == 50_001                      # the whole-context entry, then every call
    assert p.call_box.currentText() == "call 42000" and p.call_box.currentData() == 42_000
    assert Calls.read < 100                                 # not one label per call
    p.call_box.setCurrentIndex(7)
    assert p.call_box.currentText() == "call 6" and p.call_box.itemData(7) == 6


def test_a_run_hands_over_the_tool_pairs_of_the_lists_a_step_selects_in(tmp_path, monkeypatch):
    """Showing a step selects the first message it changed, and the list highlights that message's tool
    partners: the run indexes the tool pairs of the input and of each changed step, so the window finds them."""
    path = tmp_path / "s.jsonl"
    write_session(path, 300)
    s = Session(Workspace(tmp_path / "ws"), strategy="hermes")
    s.setup.pin_strategy()
    assert s.source.open(str(path))
    changed = [st for st in s.trace.steps if st.changed]
    assert changed
    built = []
    from compactscope.core.analysis import pairs
    real_index = pairs.ToolPairIndex
    monkeypatch.setattr(pairs, "ToolPairIndex", lambda msgs: built.append(len(msgs)) or real_index(msgs))
    for msgs in [s.trace.input] + [st.messages for st in changed]:
        present.pair_index(list(msgs))                     # the model's copy of the list: the same messages
    assert built == []


def test_a_cross_check_runs_with_the_cyclic_gc_paused(tmp_path):
    """hermes's cross-check copies every message it compares: the collections that set off held the
    interpreter lock ~0.1 s each at 100k messages."""
    seen = []

    class Check:
        def run(self, trace):
            seen.append(gc.isenabled())
            return "verdict"
    import time
    from compactscope.core.runtime.gcpause import pauses_open
    deadline = time.monotonic() + 60                       # a worker an earlier test left may still be running
    while pauses_open() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gc.isenabled()
    assert S.checked_verdict(Check(), None) == "verdict"
    assert seen == [False] and gc.isenabled()


def test_the_window_shares_the_interpreter_with_its_workers_in_short_turns(qtbot):
    """The GUI thread waits up to the switch interval for the interpreter lock while a worker runs Python."""
    import sys
    from compactscope.app.workers import SWITCH_INTERVAL, QtExecutor
    old = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.005)
        QtExecutor()
        assert sys.getswitchinterval() <= SWITCH_INTERVAL <= 0.002
    finally:
        sys.setswitchinterval(old)
