"""Sizing a list that shares most of its messages with one measured before (appended to, concatenated, grown in
place, one message replaced, cut) gives exactly what sizing it from scratch gives."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compactscope.core.pipeline.engine import Engine, call_layer
from compactscope.core.pipeline.facts import Facts
from compactscope.core.pipeline.size import CharsPerToken, SizeMeter, common_prefix

N0 = 300          # above the length from which an unknown list is derived from another (size._SCAN_MIN)


def message(k: int) -> dict:
    if k % 3 == 0:
        return {"role": "user", "content": f"question {k} " * (k % 7 + 1)}
    if k % 3 == 1:
        return {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{k}", "name": "Read",
                                                  "input": {"path": f"f{k}.py"}}]}
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k - 1}", "content": "x" * k}]}


def words(m: dict, meter) -> int:
    return len(str(m.get("content")).split())


def fresh(lst: list) -> tuple[int, int, int]:
    m = SizeMeter(facts=Facts())
    return m.size(lst), CharsPerToken().tokens(lst, m), m.total(lst, "words", words)


def measured(meter: SizeMeter, lst: list) -> tuple[int, int, int]:
    return meter.size(lst), CharsPerToken().tokens(lst, meter), meter.total(lst, "words", words)


OPS = st.lists(st.tuples(st.sampled_from(["append", "concat", "extend", "replace", "cut", "drop", "same"]),
                         st.integers(0, 10 ** 6), st.integers(1, 5)), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(N0, N0 + 200), ops=OPS)
def test_every_way_of_changing_a_list_sizes_as_from_scratch(n, ops):
    meter = SizeMeter(facts=Facts())
    lst = [message(k) for k in range(n)]
    assert measured(meter, lst) == fresh(lst)
    nxt = n
    for op, where, count in ops:
        new = [message(nxt + j) for j in range(count)]
        nxt += count
        i = where % len(lst)
        if op == "append":
            lst = lst + new
        elif op == "concat":
            lst = meter.concat(lst, new)
        elif op == "extend":
            lst = list(lst)
            measured(meter, lst)
            meter.extend(lst, new)
        elif op == "replace":
            lst = lst[:i] + new[:1] + lst[i + 1:]
        elif op == "cut":
            lst = lst[:max(i, 1)] + new
        elif op == "drop":
            lst = lst[:i] + lst[i + 1:] if len(lst) > 1 else lst
        assert measured(meter, lst) == fresh(lst) == (len(str(lst)), len(str(lst)) // 4,
                                                      sum(words(m, None) for m in lst))


@settings(max_examples=30, deadline=None)
@given(n=st.integers(N0, N0 + 100), extra=st.integers(1, 4))
def test_a_list_grown_in_place_by_plain_appends_is_sized_right(n, extra):
    meter = SizeMeter(facts=Facts())
    lst = [message(k) for k in range(n)]
    measured(meter, lst)
    for j in range(extra):
        lst.append(message(n + j))
        assert measured(meter, lst) == fresh(lst)


def test_lists_that_share_nothing_or_little_are_summed():
    meter = SizeMeter(facts=Facts())
    a = [message(k) for k in range(N0)]
    b = [message(k) for k in range(N0)]             # equal, other objects
    measured(meter, a)
    assert measured(meter, b) == fresh(b) == fresh(a)
    c = a[:10] + b[10:]
    assert measured(meter, c) == fresh(c)


def test_common_prefix():
    a = [message(k) for k in range(5)]
    assert common_prefix(a, a + [message(9)]) == 5
    assert common_prefix(a, a[:2] + [message(1)] + a[3:]) == 2
    assert common_prefix([], a) == 0


def test_the_engine_sizes_an_appended_input_as_from_scratch(tmp_path):
    from compactscope.core.files.workspace import Workspace
    msgs = [message(k) for k in range(N0)]
    eng = Engine("s08", {"max_messages": 10 ** 6, "context_limit": 10 ** 9}, workspace=Workspace(str(tmp_path)))
    t1 = eng.run(msgs)
    grown = msgs + [{"role": "user", "content": "one more"}]
    t2 = eng.run(grown)
    assert t2.steps[0].size_before == len(str(grown)) != t1.steps[0].size_before
    for s in t2.steps:
        assert s.size_after == len(str(s.messages))


def test_call_layer_gives_the_layers_output_and_restores_the_gc():
    import gc
    from compactscope.core.layers.base import LayerContext
    from compactscope.core.layers.s08 import LAYERS
    from compactscope.core.files.workspace import Workspace
    from compactscope.core.summarizers import CachedSummarizer, OfflineSummarizer
    was = gc.isenabled()
    msgs = [message(k) for k in range(40)]
    ctx = LayerContext({"keep_recent": 3, "micro_min_chars": 10}, Workspace(), CachedSummarizer(OfflineSummarizer()))
    out = call_layer(LAYERS["micro_compact"].fn, msgs, ctx)
    assert out.messages is not msgs and len(out.messages) == len(msgs)
    assert gc.isenabled() == was


@settings(max_examples=30, deadline=None)
@given(n=st.integers(0, 50), known=st.sets(st.integers(0, 49)))
def test_joined_digests_are_the_digests_one_after_the_other(n, known):
    import hashlib
    from compactscope.core.pipeline.facts import BytesFact
    d = BytesFact("test_joined", 8, lambda o: hashlib.sha256(repr(o).encode()).digest()[:8], Facts())
    objs = [message(k) for k in range(n)]
    for k in known:
        if k < n:
            d.get(objs[k])
    everything = all(k in known for k in range(n))
    assert d.joined(objs, compute=False) == (b"".join(map(d.get, objs)) if everything else None) or not everything
    assert d.joined(objs) == b"".join(d.get(o) for o in objs)
