"""A replay that keeps no trace tells its layers not to explain the steps that change nothing
(``LayerContext.explain``): what it records must be what a replay that explains every step records, call after
call, for every strategy whose layers take the shortcut; and a step the layers do explain (it changed the list,
failed or triggered) must read the same with the flag off as with it on."""
from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings, strategies as st

from compactscope.core.files.workspace import Workspace
from compactscope.core.model.conversation import Conversation, MessageMeta, Usage
from compactscope.core.pipeline.engine import Engine
from compactscope.core.replay import replay
from compactscope.core.summarizers import FixedSummarizer

# parameters small enough that each strategy compacts within a few dozen calls of the sessions below
STRATEGIES = {
    "s08": {"context_limit": 30_000, "max_messages": 40},
    "claude_code": {"window": 40_000},
    "hermes": {"context_length": 40_000},
    "codex": {"model_context_window": 30_000},
    "gemini_cli": {"token_limit": 40_000},
}


def session(calls: int, seed: int) -> Conversation:
    """A coding session: tool calls (1-3 at a time) with results of 20-9,000 chars, a text turn now and then,
    a timestamp per message (with idle gaps) and the usage each answer recorded (the tokens of what it sent)."""
    rng = random.Random(seed)
    msgs: list = [{"role": "user", "content": "fix the tests"}]
    meta = [MessageMeta(timestamp=1_700_000_000.0)]
    t, total = 1_700_000_000.0, len(repr(msgs[0]))

    def add(m: dict) -> None:
        nonlocal t, total
        t += rng.choice((20.0, 40.0, 4_000.0))
        usage = Usage(input_tokens=1_000 + total // 4, output_tokens=50) if m["role"] == "assistant" else None
        msgs.append(m)
        meta.append(MessageMeta(timestamp=t, usage=usage))
        total += len(repr(m))

    for k in range(calls):
        if rng.random() < 0.15:
            add({"role": "assistant", "content": [{"type": "text", "text": "done. " * rng.randint(1, 30)}]})
            add({"role": "user", "content": "go on" * rng.randint(1, 3)})
            continue
        ids = [f"toolu_{k}_{i}" for i in range(rng.choice((1, 1, 2, 3)))]
        add({"role": "assistant", "content": [{"type": "text", "text": "looking"}] + [
            {"type": "tool_use", "id": i, "name": rng.choice(("Read", "Bash")),
             "input": {"file_path": f"src/m{rng.randint(0, 9)}.py"}} for i in ids]})
        add({"role": "user", "content": [{"type": "tool_result", "tool_use_id": i,
                                          "content": "out %d\n" % k * rng.randint(3, 1_300)} for i in ids]})
    return Conversation(msgs, meta=meta, title="generated", source="generated")


def _engine(name: str, tmp_path, tag: str) -> Engine:
    summary = "<summary>S</summary>" if name == "claude_code" else "S"
    return Engine(name, dict(STRATEGIES[name]), workspace=Workspace(tmp_path / f"{name}-{tag}"),
                  summarizer=FixedSummarizer(summary))


def _result(res) -> dict:
    out = res.to_json()
    out.pop("seconds", None)
    return out


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(calls=st.integers(5, 70), seed=st.integers(0, 10_000))
def test_a_replay_without_explanations_records_what_one_with_them_records(tmp_path, calls, seed):
    conv = session(calls, seed)
    for name in STRATEGIES:
        kept = replay(conv, engine=_engine(name, tmp_path, f"kept{seed}"), keep_traces=True)
        lean = replay(conv, engine=_engine(name, tmp_path, f"lean{seed}"))
        assert [c.to_json() for c in lean.calls] == [c.to_json() for c in kept.calls], name
        assert _result(lean) == _result(kept), name


def test_the_sessions_exercise_both_kinds_of_step(tmp_path):
    """(The equality above means something: each strategy both changes the list and leaves it alone.)"""
    conv = session(70, 1)
    for name in STRATEGIES:
        res = replay(conv, engine=_engine(name, tmp_path, "both"), keep_traces=True)
        steps = [s for tr in res.traces for s in tr.steps]
        assert any(s.changed for s in steps) and any(not s.changed for s in steps), name
        assert any(c.compacted for c in res.calls), name


def _step_facts(s) -> tuple:
    """What a step says, read when it is made (a replay that keeps no trace extends its running context in place
    after: the lists are read now)."""
    return ((s.layer, s.changed, s.triggered, s.error, s.size_after, s.tokens_after, s.state_before, list(s.messages)),
            (s.note, dict(s.vars), s.explain(), [e.to_json() for e in s.edits]))


def _traces(monkeypatch, conv, engine, keep: bool) -> list:
    """What every step of every run the replay's engine made said (the walk's calls and any shadow run), in
    order, with the run's ``explain``."""
    made: list = []
    run = Engine._run

    def spy(self, *a, **kw):
        tr = run(self, *a, **kw)
        made.append((self.explain, [_step_facts(s) for s in tr.steps]))
        return tr
    monkeypatch.setattr(Engine, "_run", spy)
    replay(conv, engine=engine, keep_traces=keep)
    monkeypatch.undo()
    return made


def test_a_step_that_changes_fails_or_triggers_is_explained_as_before(tmp_path, monkeypatch):
    conv = session(60, 7)
    for name in STRATEGIES:
        on = _traces(monkeypatch, conv, _engine(name, tmp_path, "same"), True)        # (one workspace: the same paths)
        off = _traces(monkeypatch, conv, _engine(name, tmp_path, "same"), False)
        assert len(on) == len(off) and all(e for e, _ in on) and not any(e for e, _ in off), name
        skipped = 0
        for k, ((_, a_steps), (_, b_steps)) in enumerate(zip(off, on)):
            assert len(a_steps) == len(b_steps), (name, k)
            for (a, a_words), (b, b_words) in zip(a_steps, b_steps):
                assert a == b, (name, k, a[0])
                _, changed, triggered, error = a[:4]
                if changed or error or triggered:
                    assert a_words == b_words, (name, k, a[0])
                else:
                    skipped += not a_words[0] and b_words[0] != ""
        assert skipped, name          # some step of each strategy did skip its explanation
