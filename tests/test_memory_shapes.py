"""What the pipeline and the views keep per message (issue 12, memory at 100k messages): one slot per message
in one facts table whose columns agree with the figures' definitions, status maps of one byte per message,
and bounds that forget what earlier lists left behind. Shapes and values, no timings."""
from __future__ import annotations

import hashlib
import json
from collections import Counter

import pytest

from compactscope.core.analysis import present
from compactscope.core.pipeline.align import CHANGED, DUPLICATED, INSERTED, REMOVED, RowKinds, align
from compactscope.core.pipeline.facts import FACTS, BytesFact, Facts, IntFact, ObjFact
from compactscope.core.layers import claude_code as cc
from compactscope.core.loaders import load
from compactscope.core.pipeline.engine import Engine
from compactscope.core.pipeline.size import SizeMeter, chars_and_raw
from compactscope.core.files.workspace import LINE_DIGESTS, Workspace, _line

CORPUS_FILES = ["claude-code-viewer/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
                "swe-agent/marshmallow-1867.function_calling_replace.traj.json",
                "entireio-cli/4c-02af2759b6-0-full.jsonl"]


def _run(corpus, rel: str, strategy: str, tmp_path, params: dict | None = None):
    conv = load(corpus / rel).main
    FACTS.clear()
    eng = Engine(strategy, params or {}, workspace=Workspace(tmp_path / "ws"))
    return conv, eng, eng.run(conv.messages)


@pytest.mark.parametrize("rel", CORPUS_FILES)
@pytest.mark.parametrize("strategy", ["s08", "claude_code", "hermes"])
def test_one_slot_per_message_and_every_column_agrees_with_its_definition(corpus, rel, strategy, tmp_path):
    conv, eng, trace = _run(corpus, rel, strategy, tmp_path)
    lists = [trace.input] + [s.messages for s in trace.steps]
    for msgs in lists:                           # what the views ask for every message of every stage
        present.size_table(msgs)
        for m in msgs[:50]:
            present.chips.get(m)
    objs = {id(m): m for msgs in lists for m in msgs}
    g = FACTS.gen
    # one slot per distinct message object, whatever the number of figures kept for it
    assert len(g.refs) == len(set(map(id, g.refs))) == len(g.index)
    assert set(objs) <= set(g.index)
    assert FACTS.column_count() >= 3
    for k in objs:
        s = g.index[k]
        assert g.refs[s] is objs[k]
    for m in objs.values():
        n, raw = chars_and_raw(m)
        assert present.chars.peek(m) == n == eng.meter.message_size(m)
        assert eng.meter.raw_size(m) == raw
        assert present.sizes.get(m) == tuple(present.block_sizes(m).values())
        chips = present.chips.peek(m)
        assert chips is None or chips == present.message_chips(m)
    for msgs in lists:
        assert eng.meter.raw_total(msgs) == len(str(msgs))
        table = present.size_table(msgs)
        assert len(table) == len(msgs) * len(present.BLOCK_TYPES)
        assert list(table) == [float(x) for m in msgs for x in present.block_sizes(m).values()]


def test_claude_code_figures_and_digests_are_the_definitions(corpus, tmp_path):
    conv, eng, trace = _run(corpus, CORPUS_FILES[0], "claude_code", tmp_path)
    msgs = conv.messages
    for m in msgs:
        assert cc.SessionTokens().message_chars(m) == cc.content_chars(m)
        assert cc.SessionTokens().message_chars(m, eng.meter) == cc.content_chars(m)
        assert cc._json_digests.get(m) == cc._json_digest(m)      # the table holds the definition's value
    ws = Workspace(tmp_path / "ws2")
    ws.write_transcript(msgs)
    assert all(LINE_DIGESTS.peek(m) == hashlib.blake2b(_line(m), digest_size=16).digest() for m in msgs)


def test_a_private_table_is_separate_and_the_shared_one_is_bounded_by_the_longest_list():
    f = Facts(factor=2, floor=10)
    calls = []
    size = IntFact("n", lambda o: calls.append(o) or len(o), facts=f)
    text = ObjFact("t", lambda o: str(o), facts=f)
    a = [[k] * (k % 3) for k in range(8)]
    assert [size.get(o) for o in a] == [len(o) for o in a] and len(calls) == 8
    assert [text.get(o) for o in a] == [str(o) for o in a]
    assert len(f) == 8                            # two figures, one slot per object
    assert [size.get(o) for o in a] == [len(o) for o in a] and len(calls) == 8      # computed once
    f.shown(4)
    assert len(f) == 8                            # within max(2 x 4, 10)
    b = [[k] for k in range(5)]
    for o in b:
        size.get(o)
    # at max(2 x 4, 10) objects a new one starts a new generation: what was kept before is forgotten
    assert len(f) == 3 and size.peek(a[1]) is None and text.peek(a[1]) is None
    assert [size.peek(o) for o in b[2:]] == [1, 1, 1]
    assert size.get(a[1]) == 1 and len(calls) == 14
    f.clear()
    assert len(f) == 0 and size.peek(b[4]) is None
    meter = SizeMeter(facts=Facts())
    msgs = [{"role": "user", "content": "x" * k} for k in range(5)]
    assert meter.size(msgs) == len(str(msgs))
    assert all(FACTS.find(m) is None for m in msgs) and len(meter.facts) == 5


@pytest.mark.parametrize("strategy,params", [("s08", {}), ("claude_code", {"window": 20_000}), ("hermes", {})])
def test_list_statuses_are_one_byte_per_message_and_say_what_the_rows_say(examples, strategy, params, tmp_path):
    conv, eng, trace = _run(examples, "long_session.json", strategy, tmp_path, params)
    seen = 0
    for step in trace.steps:
        rows = align(step)
        for side, kinds, n in ((0, (REMOVED, CHANGED, DUPLICATED), len(step.input)),
                               (1, (INSERTED, CHANGED, DUPLICATED), len(step.messages))):
            want = {r[side]: r.kind for r in rows if r[side] is not None and r.kind in kinds}
            got = RowKinds(rows, side, kinds, n)
            assert dict(got) == want and len(got) == len(want) and list(got) == sorted(want)
            assert all((i in got) == (i in want) and got.get(i) == want.get(i) for i in range(-1, n + 1))
            assert len(got._codes) == n
            seen += len(want)
    assert seen > 0                               # some layer changed something in this file


def test_the_diff_keeps_the_counts_of_the_rows_it_shows_only(examples, tmp_path, qtbot):
    """Each run's steps have new rows (100k of them at 100k messages); a counts cache keyed by rows kept every
    run's rows alive (up to 32 lists). It keeps the rows shown now."""
    from compactscope.widgets.diff_view import DiffModel
    model = DiffModel()
    counts = []
    for params in ({}, {"context_limit": 20_000}, {"context_limit": 10_000}):
        conv, eng, trace = _run(examples, "long_session.json", "s08", tmp_path, params)
        for step in trace.steps:
            rows = align(step)
            model.set_step(step, rows)
            got = model.counts()
            assert got == dict(Counter(r.kind for r in rows))
            assert len(model._counts) == 1 and model._counts.peek(rows) is not None
            counts.append(got)
    assert len(counts) >= 6


@pytest.fixture(scope="module")
def big_session(tmp_path_factory):
    """A Claude Code session of 3,000 messages, by the benches' generator (over PACK_ROWS rows per step)."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    from bench_memory import write_session
    path = tmp_path_factory.mktemp("big") / "session.jsonl"
    write_session(path, 3000)
    return load(path).main


@pytest.mark.parametrize("strategy,params", [("s08", {}), ("claude_code", {"window": 200_000})])
def test_big_steps_keep_their_rows_packed_and_read_as_the_rows(big_session, strategy, params, tmp_path, qtbot):
    from compactscope.core.pipeline import align as al
    from compactscope.widgets.diff_view import DiffModel
    FACTS.clear()
    trace = Engine(strategy, params, workspace=Workspace(tmp_path / "ws")).run(big_session.messages)
    packed = 0
    for step in trace.steps:
        rows = align(step)
        if isinstance(rows, al.KeptRows):
            continue
        plain = al._edit_rows(step, *al._align(len(step.input), step.origin, None, step.input, step.messages,
                                             maps=bool(step.edits)))
        assert isinstance(plain, list)
        if len(plain) < al.PACK_ROWS:
            assert rows == plain
            continue
        packed += 1
        assert isinstance(rows, al.PackedRows) and len(rows._kind) == len(rows._left) == len(plain)
        assert list(rows) == plain and rows == plain and len(rows) == len(plain)
        assert [rows[k] for k in range(-3, 3)] == [plain[k] for k in range(-3, 3)]
        assert rows[10:20] == plain[10:20]
        assert al.summarize_rows(rows) == al.summarize_rows(plain)
        assert list(rows.without(al.KEPT)) == [r for r in plain if r.kind != al.KEPT]
        for side, kinds, n in ((0, (REMOVED, CHANGED, DUPLICATED), len(step.input)),
                               (1, (INSERTED, CHANGED, DUPLICATED), len(step.messages))):
            assert dict(RowKinds(rows, side, kinds, n)) == dict(RowKinds(plain, side, kinds, n))
        model = DiffModel()
        model.set_step(step, rows)
        assert model.counts() == {k: v for k, v in Counter(r.kind for r in plain).items()}
        model.set_changes_only(True)
        assert [model.rows[k] for k in range(len(model.rows))] == [r for r in plain if r.kind != al.KEPT]
    assert packed >= 1


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=300, deadline=None)
@given(n_in=st.integers(0, 12), data=st.data())
def test_rows_built_packed_are_the_rows_built_as_a_list(n_in, data):
    """_align_runs and _edit_rows build the same rows as columns (PackedRows, array index maps) as they do as
    a list of Row tuples, for any origin of ints and Nones (runs, duplicates, out-of-range values) and any
    edits (block edits, output edits, ranges, overlapping ranges)."""
    from types import SimpleNamespace

    from compactscope.core.pipeline import align as al
    from compactscope.core.pipeline.trace import Edit
    origin = data.draw(st.lists(st.one_of(st.none(), st.integers(-2, n_in + 2)), max_size=14))
    inp = [{"i": k} for k in range(n_in)]
    same = data.draw(st.lists(st.booleans(), min_size=len(origin), max_size=len(origin)))
    outp = [inp[o] if o is not None and 0 <= o < n_in and keep else {"o": j}
            for j, (o, keep) in enumerate(zip(origin, same))]
    idx = st.one_of(st.none(), st.integers(-1, max(n_in, len(origin)) + 1))
    edits = data.draw(st.lists(st.builds(lambda m, b, o, a, e, nl: Edit("replace", "e", start=a, end=e, message=m,
                                                                       block=b, out=o, new_len=nl),
                                         idx, st.one_of(st.none(), st.integers(0, 2)), idx, idx, idx,
                                         st.one_of(st.none(), st.integers(0, 9))), max_size=5))
    step = SimpleNamespace(edits=edits)
    plain = al._edit_rows(step, *al._align_runs(n_in, origin, inp, outp, True, False))
    packed = al._edit_rows(step, *al._align_runs(n_in, origin, inp, outp, True, True))
    assert isinstance(plain, list) and isinstance(packed, al.PackedRows)
    assert list(packed) == plain and len(packed) == len(plain)
    assert al.summarize_rows(packed) == al.summarize_rows(plain)


def test_a_transcript_is_named_by_its_content_whether_its_digests_were_known_or_not(tmp_path):
    msgs = [{"role": "user", "content": f"line {k}"} for k in range(50)]
    ws = Workspace(tmp_path / "ws")
    FACTS.clear()
    first = ws.write_transcript(msgs)                 # written, each line's digest kept
    assert all(LINE_DIGESTS.peek(m) is not None for m in msgs)
    again = ws.write_transcript(msgs)                 # found by the digests kept
    FACTS.clear()
    fresh = Workspace(tmp_path / "ws2").write_transcript(msgs)     # written again from nothing
    assert first == again and first.name == fresh.name
    assert first.read_bytes() == fresh.read_bytes() == b"".join(_line(m) for m in msgs)
    LINE_DIGESTS.put(msgs[0], b"\0" * 16)             # one digest unknown: the list is written, not guessed
    FACTS.clear()
    ws.forget_lists()                                 # (else the same list is the last one's file at once)
    for m in msgs[1:]:
        LINE_DIGESTS.put(m, hashlib.blake2b(_line(m), digest_size=16).digest())
    assert ws.write_transcript(msgs).name == first.name


def test_the_same_list_again_is_the_last_transcript_without_a_look_up(tmp_path, monkeypatch):
    """A parameter change re-running auto_compact writes the kept step's list again: its file is the last one,
    found without a digest per message; another list (even with the same messages), or the file gone, is looked
    up or written as before; forget_lists lets go of the list."""
    import compactscope.core.files.workspace as W
    msgs = [{"role": "user", "content": f"line {k}"} for k in range(50)]
    ws = Workspace(tmp_path / "ws")
    first = ws.write_transcript(msgs)
    looked: list = []
    real = W._joined_key
    monkeypatch.setattr(W, "_joined_key", lambda ds: looked.append(1) or real(ds))
    assert ws.write_transcript(msgs) == first and looked == []
    other = list(msgs)
    assert ws.write_transcript(other) == first and looked == [1]            # equal content: the same file
    longer = msgs + [{"role": "user", "content": "more"}]
    assert ws.write_transcript(longer) != first
    first.unlink()
    again = ws.write_transcript(other[:50])
    assert again.read_bytes() == b"".join(_line(m) for m in msgs)
    ws.forget_lists()
    looked.clear()
    assert ws.write_transcript(other[:50]) == again and looked == [1]


def test_a_cross_check_leaves_no_module_sources_in_linecache():
    """The window's import hook (PySide6) reads each module's source into linecache as it is imported; the
    reference package a cross-check imports (hermes-agent: ~15 MB of source lines) is not kept."""
    import linecache

    from compactscope.core.strategies.base import MATCH, CrossCheck, Verdict

    def check(trace):
        linecache.getlines(json.__file__)           # what an import under the hook leaves
        return Verdict(MATCH, "same")

    assert CrossCheck("ref", check).run(None).status == MATCH
    assert json.__file__ not in linecache.cache


def test_collect_forgets_what_only_the_table_holds_and_keeps_the_values_of_the_rest():
    f = Facts()
    n, c = IntFact("n", len, facts=f), ObjFact("c", lambda o: ("chips", len(o)), facts=f)
    d = BytesFact("d", 4, lambda o: len(o).to_bytes(4, "little"), facts=f)
    kept = [[k] * k for k in range(1, 30)]
    for o in kept:
        n.get(o), c.get(o), d.get(o)
    for k in range(40):                          # made, measured, dropped: only the table holds them
        o = [0] * (100 + k)
        n.get(o), d.get(o)
    del o
    assert len(f) == 69
    assert f.collect(min_dead=50) == 0 and len(f) == 69      # not worth it under the bar
    assert f.collect() == 40 and len(f) == 29
    assert [(n.peek(o), c.peek(o), d.peek(o)) for o in kept] == \
        [(len(o), ("chips", len(o)), len(o).to_bytes(4, "little")) for o in kept]
    assert f.collect() == 0
    o = [1, 2, 3]                                # the table grows again from the compacted generation
    assert n.get(o) == 3 and d.get(o) == (3).to_bytes(4, "little") and f.find(o) == 29


def test_re_runs_that_replace_messages_do_not_pile_them_up_in_the_table(examples, tmp_path):
    """Each micro_compact re-run (another keep_recent) replaces results by new message objects; once nothing
    else holds them (the result that had them, the caches of recent lists), the table forgets them."""
    from compactscope.core.session.model import Session
    s = Session(Workspace(tmp_path / "ws"), strategy="s08")
    assert s.source.open(str(examples / "long_session.json")) and s.trace is not None
    n = len(s.source.conversation.messages)
    sizes = []
    for k in range(60):
        s.setup.set_param("keep_recent", k % 6)
        assert s.trace is not None and s.trace.params.get("keep_recent") == k % 6
        sizes.append(len(FACTS))
    # each run adds its new messages (~6 here; the lists the meter and the views keep for a while hold the last
    # runs' ones): the table levels off instead of growing by ~6 a run (~180 over the last 30 runs)
    assert max(sizes[30:]) - min(sizes[30:]) <= 40, sizes
    assert len(FACTS) < 5 * n
