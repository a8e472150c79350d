"""How a big session is held in memory (issue 12): what the loaders keep per message, and that it is no
more than needed. Sizes are asserted as object shapes (which dicts and strings exist), never as timings."""
from __future__ import annotations

import json
import sys

from compactscope.core.loaders import load


def _cc_session(path, n: int, version_change_at: int | None = None) -> None:
    parent = None
    with path.open("w") as f:
        for k in range(n):
            u = f"uuid-{k:06d}"
            version = "2.1.30" if version_change_at is not None and k >= version_change_at else "2.1.14"
            if k % 2 == 0:
                msg = {"role": "user", "content": f"question {k}"}
                extra = {}
            else:
                msg = {"role": "assistant", "id": f"msg_{k}", "model": "claude-opus-4-5", "stop_reason": "end_turn",
                       "content": [{"type": "text", "text": f"answer {k}"}],
                       "usage": {"input_tokens": 10, "output_tokens": 5}}
                extra = {"requestId": f"req_{k}"}
            f.write(json.dumps({"parentUuid": parent, "isSidechain": False, "userType": "external",
                                "cwd": "/home/dev/project", "sessionId": "session-1", "version": version,
                                "gitBranch": "main", "type": msg["role"], "message": msg, "uuid": u,
                                "timestamp": f"2026-01-01T00:{k // 60 % 60:02d}:{k % 60:02d}Z", **extra}) + "\n")
            parent = u


def test_claude_code_metadata_keeps_what_a_line_says_once_not_its_envelope(tmp_path):
    path = tmp_path / "s.jsonl"
    _cc_session(path, 101, version_change_at=37)      # a version change the old 1-in-16 sample could miss
    conv = load(path).main
    assert len(conv.messages) == 101
    # the session's repeated fields are said once, for the conversation, with every version seen
    assert conv.extra["session_id"] == "session-1" and conv.extra["cwd"] == "/home/dev/project"
    assert conv.extra["git_branch"] == "main"
    assert conv.extra["versions"] == ["2.1.14", "2.1.30"]
    envelope = {"parentUuid", "isSidechain", "userType", "cwd", "sessionId", "version", "gitBranch", "type",
                "message", "uuid", "timestamp"}
    for i, mt in enumerate(conv.meta):
        assert not envelope & set(mt.extra), mt.extra
        assert mt.uuid == f"uuid-{i:06d}" and mt.provenance.line == i + 1
        # what each line says of itself is kept
        if i % 2:
            assert mt.extra["requestId"] == f"req_{i}" and mt.extra["api_id"] == f"msg_{i}"
        # a right-sized dict: no room left by the record's 13 fields (a popped dict keeps it: 632 bytes)
        assert sys.getsizeof(mt.extra) <= sys.getsizeof(dict(mt.extra.items())), mt.extra


def test_claude_code_keeps_what_the_api_saw_not_the_terminal_copy_of_tool_output(tmp_path):
    """toolUseResult is Claude Code's copy of a tool's output for its terminal (a Read's whole file): the
    API saw the tool_result block, which is kept; the copy is not held (it is as large as the messages)."""
    path = tmp_path / "s.jsonl"
    body = "line\n" * 2000
    recs = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s", "timestamp": "2026-01-01T00:00:00.000Z",
         "message": {"role": "user", "content": "read it"}},
        {"type": "assistant", "uuid": "u2", "parentUuid": "u1", "sessionId": "s", "timestamp": "2026-01-01T00:00:01.000Z",
         "message": {"role": "assistant", "id": "m1", "type": "message", "model": "claude-opus-4-5",
                     "stop_sequence": None, "content": [{"type": "tool_use", "id": "t1", "name": "Read",
                                                         "input": {"file_path": "/a.py"}}],
                     "usage": {"input_tokens": 3, "output_tokens": 4}}},
        {"type": "user", "uuid": "u3", "parentUuid": "u2", "sessionId": "s", "timestamp": "2026-01-01T00:00:02.000Z",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": body}]},
         "toolUseResult": {"type": "text", "file": {"filePath": "/a.py", "content": body}}, "isMeta": False},
        {"type": "assistant", "uuid": "u4", "parentUuid": "u3", "sessionId": "s", "timestamp": "2026-01-01T00:00:03.000Z",
         "message": {"role": "assistant", "id": "m2", "model": "claude-opus-4-5",
                     "content": [{"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "/b.py"}}],
                     "usage": {"input_tokens": 5, "output_tokens": 6}}},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    conv = load(path).main
    assert conv.messages[2]["content"][0]["content"] == body            # what the API saw
    assert "toolUseResult" not in conv.meta[2].extra and conv.meta[2].extra == {"isMeta": False}
    # the message's own fields become metadata; the rest of the line's message is not kept
    assert conv.messages[1] == {"role": "assistant", "content": recs[1]["message"]["content"]}
    assert conv.meta[1].usage.input_tokens == 3 and conv.meta[1].usage.output_tokens == 4
    assert conv.meta[1].timestamp == conv.meta[0].timestamp + 1
    # one string object for a block type, a tool name, a model, however many blocks say it
    a, b = conv.messages[1]["content"][0], conv.messages[3]["content"][0]
    assert a["type"] is b["type"] and a["name"] is b["name"] and conv.meta[1].model is conv.meta[3].model


def test_a_layer_that_keeps_every_message_in_place_holds_no_list_of_indices(tmp_path):
    """tool_result_budget over 3 huge results (persisted) replaces in place: its origin is [0..n-1] without n ints,
    and reads, compares, pickles and writes as that list."""
    import io
    import pickle

    from compactscope.core.files.jsonout import write_json
    from compactscope.core.pipeline.engine import Engine
    from compactscope.core.pipeline.trace import SameOrigin
    from compactscope.core.files.workspace import Workspace

    msgs = [{"role": "user", "content": "go"}, {"role": "assistant", "content": "ok"}] * 3
    msgs.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{k}", "name": "Read",
                                                   "input": {"file_path": f"/f{k}"}} for k in range(3)]})
    msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k}", "content": "x" * 90_000}
                                             for k in range(3)]})
    trace = Engine("s08", workspace=Workspace(tmp_path / "ws")).run(msgs)
    steps = [s for s in trace.steps if isinstance(s.origin, SameOrigin) and s.changed]
    assert steps, [type(s.origin) for s in trace.steps]
    n = len(msgs)
    o = steps[0].origin
    assert o == list(range(n)) and list(o) == list(range(n)) and len(o) == n
    assert o[2] == 2 and o[-1] == n - 1 and o[1:3] == [1, 2] and 3 in o and n not in o and None not in o
    assert o.index(4) == 4 and o + [None] == list(range(n)) + [None]
    assert pickle.loads(pickle.dumps(o)) == o
    out = io.StringIO()
    write_json(steps[0].to_json(lazy=True), out.write)
    assert json.loads(out.getvalue())["origin"] == list(range(n))
    assert steps[0].to_json()["origin"] == list(range(n))
    # the messages it did not change are the input's (shared, not copied); the huge results are new
    changed = [i for i, m in enumerate(steps[0].messages) if m is not steps[0].input[i]]
    assert changed == [n - 1]


def test_the_size_chart_keeps_its_bars_not_a_table_of_every_message(tmp_path):
    """present.size_bars: at most CHART_BARS bars whatever the list's length, each the tallest stacked size
    of its group of messages, equal to the stacked block sizes of the messages themselves."""
    from compactscope.core.analysis import present

    msgs = []
    for k in range(present.CHART_BARS * 2 + 7):
        if k % 2:
            msgs.append({"role": "assistant", "content": [{"type": "text", "text": "t" * (k % 50)},
                                                          {"type": "tool_use", "id": f"t{k}", "name": "Read",
                                                           "input": {"file_path": "/x" * (k % 7)}}]})
        else:
            msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k - 1}",
                                                      "content": "r" * (k % 300)}]})
    bars = present.size_bars(msgs)
    assert present.size_bars(msgs) is bars                  # kept for the list
    assert bars.group == 3 and len(bars.edges) == -(-len(msgs) // 3) + 1 <= present.CHART_BARS + 1
    totals = []
    for m in msgs:
        sizes = list(present.block_sizes(m).values())
        totals.append([sum(sizes[:j + 1]) for j in range(len(sizes))])
    for j, t in enumerate(present.BLOCK_TYPES):
        col = bars.stacked[t]
        assert len(col) == len(bars.edges) - 1
        for b in range(len(col)):
            group = totals[b * 3:(b + 1) * 3]
            assert col[b] == max(g[j] for g in group)
    assert bars.top == max(t[-1] for t in totals)
    small = msgs[:40]
    assert present.size_bars(small).group == 1 and list(present.size_bars(small).stacked["text"]) == \
        [t[0] for t in totals[:40]]


def _answered_last_first(index, names):
    """The definition by_last_answer keeps: every answered pair of those names, sorted by its last answer's
    message, latest first (stable: pairs in pair order)."""
    items = [p for p in index if p.name in names and p.use is not None and p.results]
    items.sort(key=lambda p: p.results[-1][0], reverse=True)
    return items


def test_latest_reads_are_found_without_making_every_pair():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from compactscope.core.model.messages import ToolPairIndex

    block = st.tuples(st.sampled_from(["use", "result", "text"]), st.integers(0, 12),
                      st.sampled_from(["Read", "Bash", "Edit"]))

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.lists(block, min_size=1, max_size=4), max_size=25), st.sets(st.sampled_from(["Read", "Bash"])))
    def check(spec, names):
        msgs = []
        for k, blocks in enumerate(spec):
            content = []
            for kind, tid, name in blocks:
                if kind == "use":
                    content.append({"type": "tool_use", "id": f"t{tid}", "name": name, "input": {}})
                elif kind == "result":
                    content.append({"type": "tool_result", "tool_use_id": f"t{tid}", "content": "x"})
                else:
                    content.append({"type": "text", "text": "hi"})
            msgs.append({"role": "assistant" if k % 2 else "user", "content": content})
        index = ToolPairIndex(msgs)
        got = [(p.id, p.use, p.results) for p in index.by_last_answer(names)]
        assert got == [(p.id, p.use, p.results) for p in _answered_last_first(index, names)]

    check()


def test_claude_code_restores_the_latest_reads_of_a_big_list_reading_only_those(tmp_path, monkeypatch):
    """recent_reads with a limit makes the ToolPairs of the reads it returns (and of the pairs answered
    after them), not one per pair of the conversation."""
    from compactscope.core.layers import claude_code as CC
    from compactscope.core.model.messages import ToolPair, ToolPairIndex

    msgs = [{"role": "user", "content": "go"}]
    for k in range(3000):
        msgs.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{k}", "name": "Read",
                                                       "input": {"file_path": f"/src/f{k % 40}.py"}}]})
        msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k}",
                                                  "content": f"body {k}"}]})
    made = []
    real = ToolPairIndex._pair
    monkeypatch.setattr(ToolPairIndex, "_pair", lambda self, k: made.append(k) or real(self, k))
    got = CC.recent_reads(msgs, {"Read"}, 5)
    assert [r["path"] for r in got] == [f"/src/f{k % 40}.py" for k in range(2999, 2994, -1)]
    assert [r["text"] for r in got] == [f"body {k}" for k in range(2999, 2994, -1)]
    assert len(made) == 5
    assert isinstance(ToolPairIndex(msgs).get("t1"), ToolPair)
    # without a limit: every path once, the latest read of each, as before
    every = CC.recent_reads(msgs, {"Read"})
    assert len(every) == 40 and every[0]["text"] == "body 2999" and every[-1]["text"] == "body 2960"


def test_calibration_counts_each_call_from_running_sums_as_the_slice_would(corpus):
    """replay's calibration: for an additive estimator (hermes, chars/4) the estimate of a segment up to each
    call comes from running sums, equal to estimating the slice itself (what it did before: quadratic)."""
    from compactscope.core.pipeline.engine import Engine
    from compactscope.core.replay import calibration
    from compactscope.core.replay.walk import _as_conversation, call_positions, prepare

    class SliceOnly:                 # the same estimator, seen as not additive: measure slices
        def __init__(self, base):
            self.base = base

        def tokens(self, messages, meter, **kw):
            return self.base.tokens(messages, meter, **kw)

    checked = 0
    for path in sorted(corpus.glob("**/*.jsonl"))[:12]:
        try:
            conv = _as_conversation(load(path).main)
        except Exception:  # noqa: BLE001 - any corpus file that does not load is another test's business
            continue
        for name in ("hermes", "s08"):
            eng = Engine(name)
            p = prepare(conv, eng.strategy.dialect if eng.strategy.dialect != "any" else conv.dialect, False)
            call_at, _ = call_positions(p, False, None)
            args = (conv, p.msgs, p.metas, p.inv, call_at, eng.meter)
            fast = calibration.measure(*args, eng.tokens)
            slow = calibration.measure(*args, SliceOnly(eng.tokens))
            assert (fast is None) == (slow is None)
            if fast is not None:
                assert fast.per_call == slow.per_call and (fast.fixed, fast.hidden) == (slow.fixed, slow.hidden)
                checked += sum(o is not None for o in fast.per_call)
    assert checked > 20


def test_claude_code_estimator_takes_any_recorded_token_count(tmp_path):
    """Found by bench_fuzz: usage past 64 bits (a file may say anything) still anchors the estimate; the
    typed arrays hold positions only."""
    from compactscope.core.pipeline.engine import Engine
    from compactscope.core.files.workspace import Workspace

    path = tmp_path / "s.jsonl"
    recs, parent = [], None
    for k in range(8):
        role = "user" if k % 2 == 0 else "assistant"
        msg = {"role": role, "content": f"turn {k}"}
        if role == "assistant":
            msg.update(id=f"m{k}", usage={"input_tokens": 10 ** 30 + k, "output_tokens": 5})
        recs.append({"type": role, "uuid": f"u{k}", "parentUuid": parent, "message": msg})
        parent = f"u{k}"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    conv = load(path).main
    trace = Engine("claude_code", workspace=Workspace(tmp_path / "ws")).run(conv.messages, conversation=conv)
    assert not [s for s in trace.steps if s.error]
    assert trace.steps[-1].vars["tokens"] >= 10 ** 30
