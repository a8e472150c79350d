"""Figures of many new messages added to the identity table at once (``Facts.put_ints``, ``size.measure_new``):
the same table answers as one ``slot`` and column write per message, through generation roll-overs, more
capacity, duplicates and objects already known; and the sum is ``len(str(messages))``'s."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compactscope.core.pipeline.facts import Facts
from compactscope.core.pipeline.size import SIZE, SizeMeter, chars_and_raw, measure_new


def _one_by_one(f: Facts, objs: list, values: list) -> None:
    for o, v in zip(objs, values):
        g, s = f.slot(o)
        f.int_column(g, "n")[s] = v


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 10**6)), max_size=120),
       st.integers(1, 3), st.integers(1, 64), st.integers(0, 50))
def test_put_ints_answers_as_slot_and_write_do(items, factor, floor, peak):
    pool = [{"k": i} for i in range(41)]           # the same objects may come again (duplicates, known ones)
    objs = [pool[i] for i, _ in items]
    values = [v for _, v in items]
    bulk, single = Facts(factor, floor), Facts(factor, floor)
    for f in (bulk, single):
        f.expect(peak)
    half = len(objs) // 2                            # some known before: the rest added to a table in use
    _one_by_one(bulk, objs[:half], values[:half])
    _one_by_one(single, objs[:half], values[:half])
    bulk.put_ints("n", objs[half:], values[half:])
    _one_by_one(single, objs[half:], values[half:])
    for o in pool:
        assert bulk.int_value(o, "n") == single.int_value(o, "n")
    assert len(bulk.gen.refs) == len(single.gen.refs)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 400), min_size=30, max_size=300), st.integers(1, 3), st.integers(1, 600),
       st.integers(0, 200), st.integers(0, 3))
def test_put_ints_of_many_new_objects_at_once_answers_as_slot_and_write_do(picks, factor, floor, peak, known):
    """Mostly objects new to the table, each once (then written in C, ``_put_new``), with a few known or twice,
    with or without a column yet, small or big capacity: the table answers as the one-by-one writes leave it."""
    pool = [{"k": i} for i in range(401)]
    objs = [pool[i] for i in dict.fromkeys(picks)] if known % 2 else [pool[i] for i in picks]
    values = [i * 7 for i in range(len(objs))]
    bulk, single = Facts(factor, floor), Facts(factor, floor)
    for f in (bulk, single):
        f.expect(peak)
        if known >= 2:
            _one_by_one(f, pool[400:], [1])           # a column and a slot before
            f.int_column(f.gen, "m")
    bulk.put_ints("n", objs, values)
    _one_by_one(single, objs, values)
    for o in pool:
        assert bulk.int_value(o, "n") == single.int_value(o, "n")
        assert bulk.int_value(o, "m") == single.int_value(o, "m")
    assert len(bulk.gen.refs) == len(single.gen.refs) and bulk.gen.cap == single.gen.cap


def test_measure_new_sums_and_keeps_what_measure_chars_would():
    msgs = [{"role": "user", "content": "x" * i} for i in range(3000)]
    msgs.append({"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                                         "data": "A" * 4000}}]})
    msgs.append(msgs[5])                              # a duplicate
    f = Facts()
    want = sum(chars_and_raw(m)[0] for m in msgs)
    assert measure_new(f, msgs) == want
    meter = SizeMeter(facts=f)
    assert all(f.int_value(m, SIZE) == chars_and_raw(m)[0] for m in msgs)
    assert meter.raw_size(msgs[-2]) == len(repr(msgs[-2])) != meter.message_size(msgs[-2])   # (the image's raw size kept)
    assert meter.size(msgs) == 2 + want + 2 * (len(msgs) - 1)
    assert SizeMeter(facts=Facts()).size(msgs) == meter.size(list(msgs))


def test_put_ints_grows_to_hold_one_more_than_a_chunk():
    objs = [{"k": i} for i in range(1025)]
    bulk, single = Facts(4, 4096), Facts(4, 4096)
    bulk.put_ints("n", objs, list(range(1025)))
    _one_by_one(single, objs, list(range(1025)))
    assert bulk.gen.cap == single.gen.cap >= 1025 and len(bulk.gen.ints["n"]) == bulk.gen.cap
    assert [bulk.int_value(o, "n") for o in objs] == list(range(1025))
