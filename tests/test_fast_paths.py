"""The fast paths added for speed give the same answers as the plain code they stand in for."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactscope.core.pipeline.align import Row, _align, align_origin
from compactscope.core.layers.s08 import _dumps_head
from compactscope.core.loaders.base import _array_element_lines_np, _array_element_lines_py, document_lines

pytest.importorskip("numpy")

_text = st.text(alphabet=list('ab"\\{}[],: \n\té\u2028'), max_size=8)
_keys = st.sampled_from(["messages", "samples", "a", "é"])
_json = st.recursive(_text, lambda ch: st.lists(ch, max_size=3) | st.dictionaries(_keys, ch, max_size=3),
                     max_leaves=25)
_patterns = st.sampled_from([(), ("messages",), ("samples", "*", "messages"), ("a", 0, "messages"), ("*",)])


@settings(max_examples=150, deadline=None)
@given(doc=_json, indent=st.sampled_from([None, 1, 2]), pattern=_patterns)
def test_vectorised_line_scan_equals_the_token_scan(doc, indent, pattern):
    # strings and containers (what messages are): the numpy scan finds the same lines as the regex scan
    data = json.dumps(doc, indent=indent, ensure_ascii=False).encode()
    assert _array_element_lines_np(data, pattern) == _array_element_lines_py(data, pattern)


def test_vectorised_scan_places_each_element_on_its_line():
    doc = {"model": "m", "messages": [{"role": "user", "content": 'a "quoted" [x] {y}, \\'}, 7, "s", [1]]}
    text = json.dumps(doc, indent=2)
    lines = _array_element_lines_np(text.encode(), ("messages",))[("messages",)]
    rows = text.split("\n")
    assert [rows[n - 1].strip() for n in lines] == ["{", "7,", '"s",', "["]


@settings(max_examples=60, deadline=None)
@given(doc=_json, pattern=_patterns)
def test_one_line_document_answers_from_the_parsed_value(tmp_path_factory, doc, pattern):
    p = tmp_path_factory.mktemp("doc") / "d.json"
    p.write_text(json.dumps(doc, ensure_ascii=False) + "\n", encoding="utf-8")
    assert document_lines(p, pattern, doc) == document_lines(p, pattern)


def _loop_align(n_in, origin, inp, outp):
    return _align(n_in, origin, lambda i, j: outp[j] is inp[i], None, None)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 25).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.one_of(st.none(), st.integers(-3, n + 3), st.integers(0, max(n - 1, 0))), max_size=30),
    st.lists(st.booleans(), min_size=30, max_size=30))))
def test_align_by_runs_equals_the_loop(data):
    n_in, origin, same = data
    # runs of consecutive inputs, as layers produce them
    origin = [o if k == 0 or not isinstance(origin[k - 1], int) or k % 3 else origin[k - 1] + 1
              for k, o in enumerate(origin)]
    inp = [{"i": i} for i in range(n_in)]
    # a changed output equals its input in value but is a new dict: only identity tells them apart
    outp = [(inp[o] if same[k] else dict(inp[o])) if isinstance(o, int) and 0 <= o < n_in else {"new": k}
            for k, o in enumerate(origin)]
    assert _align(n_in, origin, None, inp, outp) == _loop_align(n_in, origin, inp, outp)
    rows = _align(n_in, origin, None, inp, outp)[0]
    assert all(type(r) is Row for r in rows)
    assert [r[:3] for r in rows] == [r[:3] for r in align_origin(n_in, origin,
                                                                  lambda i, j: outp[j] is inp[i])]


@settings(max_examples=100, deadline=None)
@given(msgs=st.lists(st.dictionaries(st.sampled_from(["role", "content", "x"]), _json, max_size=3), max_size=8),
       cap=st.integers(-5, 400))
def test_summary_prompt_head_equals_dumping_everything(msgs, cap):
    assert _dumps_head(msgs, cap) == json.dumps(msgs, default=str, ensure_ascii=False)[:cap]


def test_collapsed_row_heights_match_the_chips(qtbot):
    from compactscope.core.analysis import present
    from compactscope.widgets.message_delegate import MessageDelegate
    from compactscope.widgets.message_model import MessageListModel
    msgs = [
        {"role": "user", "content": "one line"},
        {"role": "user", "content": "two\nlines\r\nand\x0bmore\u2028here"},
        {"role": "tool", "content": "a\nb", "tool_call_id": "c1"},
        {"role": "assistant", "content": [{"type": "text", "text": "x\ny\nz"}, {"type": "tool_use", "id": "t",
                                                                               "name": "f", "input": {"a": 1}}],
         "tool_calls": [{"id": "c", "function": {"name": "g", "arguments": "{}"}}, 3]},
        {"role": "user", "content": [{"type": "text", "text": f"b{k}\n" * k} for k in range(15)]},
        {"role": "user", "content": None},
        {"role": "user", "content": 42},
        "not a dict",
    ]
    for inserted in (False, True):
        model = MessageListModel()
        model.set_messages(msgs, status={i: "inserted" for i in range(len(msgs))} if inserted else {})
        d = MessageDelegate()
        for mi in range(len(msgs)):
            key = (id(msgs[mi]), False, 0, 0, inserted)
            ix = model.index(mi, 0)
            present.chips.forget(msgs[mi])
            from_shape = d._row_lines(ix, model, mi, key)
            model.chips(mi)                     # now the chips exist: the height comes from them
            assert d._row_lines(ix, model, mi, key) == from_shape, msgs[mi]


def _index_facts(idx, n: int = 8) -> tuple:
    """What a ToolPairIndex tells, through its public methods, over messages 0..n-1 (blocks -1..3)."""
    return ({tid: (p.use, p.name, list(p.results)) for tid, p in idx.pairs.items()},
            {(mi, bi): idx.id_at(mi, bi) for mi in range(n) for bi in range(-1, 4)},
            {(mi, bi): idx.partner(mi, bi) for mi in range(n) for bi in range(-1, 4)},
            {mi: idx.ids_in_message(mi) for mi in range(n)}, len(idx), idx.complete_count,
            [p.id for p in idx])


def _reference_index(messages: list) -> tuple:
    """The index by its definition (the dict-of-objects form it had before it was made compact)."""
    pairs: dict = {}
    by_pos: dict = {}
    by_msg: dict = {}

    def add(tid, pos, name=None, use=False):
        p = pairs.setdefault(tid, {"use": None, "name": None, "results": []})
        if use:
            if p["use"] is None:
                p["use"], p["name"] = pos, name
        else:
            p["results"].append(pos)
        by_pos[pos] = tid
        by_msg.setdefault(pos[0], []).append(tid)

    for mi, m in enumerate(messages):
        if not isinstance(m, dict):
            continue
        if m.get("role") == "tool":
            if isinstance(m.get("tool_call_id"), str):
                add(m["tool_call_id"], (mi, -1))
            continue
        for bi, b in enumerate(m["content"] if isinstance(m.get("content"), list) else []):
            if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("id"), str):
                add(b["id"], (mi, bi), b.get("name"), use=True)
            elif isinstance(b, dict) and b.get("type") == "tool_result" and isinstance(b.get("tool_use_id"), str):
                add(b["tool_use_id"], (mi, bi))
        for ci, call in enumerate(m.get("tool_calls") or []):
            if isinstance(call, dict) and isinstance(call.get("id"), str):
                add(call["id"], (mi, ci), call["function"]["name"], use=True)

    def partner(pos):
        tid = by_pos.get(pos)
        if tid is None:
            return None
        p = pairs[tid]
        return (p["results"][0] if p["results"] else None) if p["use"] == pos else p["use"]

    n = 8
    return ({tid: (p["use"], p["name"], p["results"]) for tid, p in pairs.items()},
            {(mi, bi): by_pos.get((mi, bi)) for mi in range(n) for bi in range(-1, 4)},
            {(mi, bi): partner((mi, bi)) for mi in range(n) for bi in range(-1, 4)},
            {mi: list(dict.fromkeys(by_msg.get(mi, []))) for mi in range(n)}, len(pairs),
            sum(1 for p in pairs.values() if p["use"] is not None and p["results"]), list(pairs))


_ids = st.sampled_from(["t1", "t2", "t3", 7])
_block = st.one_of(
    st.fixed_dictionaries({"type": st.just("tool_use"), "id": _ids, "name": st.sampled_from(["a", "b"]),
                           "input": st.just({})}),
    st.fixed_dictionaries({"type": st.just("tool_result"), "tool_use_id": _ids, "content": st.sampled_from(["x", "y"])}),
    st.fixed_dictionaries({"type": st.sampled_from(["text", "image"]), "text": st.just("z")}), st.just("raw"))
_message = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]),
                           "content": st.one_of(st.just("s"), st.lists(_block, max_size=3))},
                          optional={"tool_calls": st.lists(st.fixed_dictionaries(
                              {"id": _ids, "function": st.just({"name": "f", "arguments": "{}"})}), max_size=2)}),
    st.fixed_dictionaries({"role": st.just("tool"), "tool_call_id": _ids, "content": st.just("r")}), st.just(3))


@settings(max_examples=300, deadline=None)
@given(messages=st.lists(_message, max_size=8))
def test_compact_tool_pair_index_tells_what_its_definition_does(messages):
    """The index is kept in arrays (a dict tool id -> number, positions packed); what it answers is the
    definition's: first call and its name, every answer in order, the last id named at a position (a
    content block and a tool call may share a block index), ids per message in order."""
    from compactscope.core.model.messages import ToolPairIndex
    assert _index_facts(ToolPairIndex(messages)) == _reference_index(messages)


@settings(max_examples=200, deadline=None)
@given(before=st.lists(_message, min_size=1, max_size=6), data=st.data())
def test_tool_pair_index_reused_only_when_it_reads_the_same(before, data):
    from compactscope.core.model.messages import ToolPairIndex
    from compactscope.core.analysis import present
    present._PAIR_CACHE.clear()
    present.pair_index(before)
    after = list(before)
    for i in data.draw(st.lists(st.integers(0, len(before) - 1), max_size=3)):
        m = before[i]
        if data.draw(st.booleans()) and isinstance(m, dict) and isinstance(m.get("content"), list):
            # a layer's kind of change: the same blocks, a result's content replaced (new dicts)
            after[i] = {**m, "content": [{**b, "content": "[compacted]"} if isinstance(b, dict)
                                         and b.get("type") == "tool_result" else b for b in m["content"]]}
        else:
            after[i] = data.draw(_message)
    assert _index_facts(present.pair_index(after)) == _index_facts(ToolPairIndex(after))


def test_tool_pair_index_not_reused_when_a_name_or_id_changes():
    from compactscope.core.model.messages import ToolPairIndex
    from compactscope.core.analysis import present
    use = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "a", "input": {}}]}
    res = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x" * 500}]}
    present._PAIR_CACHE.clear()
    present.pair_index([use, res])
    compacted = [use, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "[c]"}]}]
    renamed = [{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "b", "input": {}}]}, res]
    other_id = [use, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "x"}]}]
    for after in (compacted, renamed, other_id):
        assert _index_facts(present.pair_index(after)) == _index_facts(ToolPairIndex(after))
    assert present.pair_index(compacted) is present.pair_index([use, res])    # only a result's content changed


def _plain_positions(cur, origin, n_context):
    if cur is None:
        return [o if o is not None and 0 <= o < n_context else None for o in origin]
    return [cur[o] if o is not None and 0 <= o < len(cur) else None for o in origin]


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_replay_positions_composed_in_c_equal_the_plain_composition(data):
    # the replay follows each output message back to its context position through each step's origin; the fast
    # paths (an identity origin keeps the positions, an origin of valid positions is copied) change no position
    from compactscope.core.replay.walk import _compose
    n_context = data.draw(st.integers(0, 12))
    cur = data.draw(st.none() | st.lists(st.none() | st.integers(0, max(0, n_context - 1)), max_size=12))
    n_in = n_context if cur is None else len(cur)
    identity = data.draw(st.booleans())
    origin = list(range(n_in)) if identity else \
        data.draw(st.lists(st.none() | st.integers(-2, n_in + 2), max_size=14))
    got = _compose(cur, origin, n_in, n_context)
    want = _plain_positions(cur, origin, n_context)
    assert (list(range(n_context)) if got is None else got) == want


@pytest.mark.parametrize("strategy", ["s08", "claude_code", "hermes"])
def test_each_step_figures_are_the_estimators_over_its_lists(strategy, tmp_path):
    # a step whose input is the previous step's output takes that step's figures: they must be what the
    # estimators say of the list itself
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    from bench_replay import make_session
    from compactscope.core.files.workspace import Workspace
    from compactscope.core.pipeline.engine import Engine
    from compactscope.core.pipeline.size import SizeMeter
    conv = make_session(120)
    eng = Engine(strategy, workspace=Workspace(tmp_path), check=False)
    fresh = SizeMeter()
    for end in (40, 160, len(conv.messages)):
        trace = eng.run(conv.messages[:end], conversation=conv)
        for s in trace.steps:
            for msgs, size, tokens in ((s.input, s.size_before, s.tokens_before),
                                       (s.messages, s.size_after, s.tokens_after)):
                assert size == fresh.size(msgs)
                assert tokens == eng.tokens.tokens(msgs, eng.meter, system=conv.system, tools=conv.tools)


def test_pinned_pair_indexes_survive_the_lists_indexed_after_them(monkeypatch):
    """The shown result's lists are pinned (``pin_pairs``): the events' replay indexes hundreds of lists after
    them, and a parameter change's re-run still reads the pairs of the list it compacts without indexing it."""
    from compactscope.core.analysis import pairs
    use = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]}
    res = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}
    shown = [use, res]
    pairs.PAIR_CACHE.clear()
    pairs.pin_pairs([shown])
    idx = pairs.pair_index(shown)
    for k in range(3 * pairs.PAIR_LISTS):
        pairs.pair_index([{"role": "user", "content": f"other {k}"}])
    built = []
    real = pairs.ToolPairIndex
    monkeypatch.setattr(pairs, "ToolPairIndex", lambda msgs: built.append(len(msgs)) or real(msgs))
    assert pairs.pair_index(list(shown)) is idx and built == []
    pairs.pin_pairs([])                                   # another result shown: the pins before are let go
    for k in range(3 * pairs.PAIR_LISTS):
        pairs.pair_index([{"role": "user", "content": f"more {k}"}])
    built.clear()
    assert pairs.pair_index(list(shown)) is not idx and built == [2]
    assert _index_facts(pairs.pair_index(shown)) == _index_facts(real(shown))


def test_the_offline_summary_reads_each_message_once_and_says_the_same():
    """The offline summary keeps what it reads of each message (by identity): asked again over nearly the same
    turns (a parameter change moving hermes's cut) it reads only the new ones, and says what a fresh one says."""
    from compactscope.core.summarizers import OfflineSummarizer, SummaryRequest
    from compactscope.core.summarizers import offline
    msgs = [{"role": "user", "content": "fix the parser"},
            {"role": "assistant", "content": [{"type": "text", "text": "reading"},
                                               {"type": "tool_use", "id": "a", "name": "Edit",
                                                "input": {"file_path": "src/p.py", "command": "ls docs/x.md"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "is_error": True,
                                          "content": "Traceback: boom"}]},
            {"role": "assistant", "tool_calls": [{"id": "b", "function": {"name": "read_file",
                                                                           "arguments": '{"path": "src/p.py"}'}}]},
            {"role": "tool", "tool_call_id": "b", "content": "error: no such file"},
            {"role": "user", "content": "and the tests"},
            {"role": "assistant", "content": "  done  "}]

    def summary(ms):
        return OfflineSummarizer().summarize(SummaryRequest(prompt="", messages=tuple(ms))).text

    first = summary(msgs)
    read = []
    real = offline._facts_of
    offline._FACTS.compute = lambda m: read.append(m) or real(m)
    try:
        again = summary(msgs[1:])
        assert read == []                                 # every message read before
        assert summary(msgs + [{"role": "assistant", "content": "later"}]) != first and len(read) == 1
    finally:
        offline._FACTS.compute = real
    copies = [dict(m) for m in msgs]                      # other objects: read afresh, the same summary
    assert summary(copies) == first and again == summary([dict(m) for m in msgs[1:]])
    assert "src/p.py" in first and "Traceback: boom" in first and "Edit x1" in first and "done" in first
