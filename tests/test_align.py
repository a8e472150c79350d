"""core.align: before/after rows of a Step."""
from __future__ import annotations

import json

from hypothesis import given, settings, strategies as st

from compactscope.core.pipeline.align import CHANGED, DUPLICATED, INSERTED, KEPT, REMOVED, align, align_origin
from compactscope.core.pipeline.engine import Engine
from compactscope.core.files.workspace import Workspace


def _check_invariants(n_in: int, origin: list, rows) -> None:
    # every output index appears exactly once on the right, in order
    rights = [r.right for r in rows if r.right is not None]
    assert rights == list(range(len(origin)))
    # every input index appears on the left; only duplicated rows repeat one
    lefts = [r.left for r in rows if r.left is not None and r.kind != DUPLICATED]
    assert sorted(lefts) == list(range(n_in))
    for r in rows:
        if r.kind == REMOVED:
            assert r.right is None and r.left is not None
        elif r.kind == INSERTED:
            assert r.left is None and r.right is not None
        else:
            assert r.left is not None and r.right is not None
            assert origin[r.right] == r.left


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 30).flatmap(
    lambda n: st.tuples(st.just(n), st.lists(st.one_of(st.none(), st.integers(0, max(n - 1, 0))), max_size=35))))
def test_invariants_on_any_origin(data):
    n_in, origin = data
    if n_in == 0:
        origin = [None] * len(origin)
    rows = align_origin(n_in, origin)
    _check_invariants(n_in, origin, rows)


def test_snip_shape_removed_before_placeholder():
    # 10 inputs, head 0..2, placeholder, tail 7..9
    origin = [0, 1, 2, None, 7, 8, 9]
    rows = align_origin(10, origin)
    kinds = [r.kind for r in rows]
    assert kinds == [KEPT] * 3 + [REMOVED] * 4 + [INSERTED] + [KEPT] * 3
    assert [r.left for r in rows if r.kind == REMOVED] == [3, 4, 5, 6]


def test_readme_negative_snip_duplicates():
    # head_end 5 > tail_start 3: messages 3, 4 appear twice
    origin = [0, 1, 2, 3, 4, None, 3, 4, 5, 6]
    rows = align_origin(7, origin)
    assert [r.left for r in rows if r.kind == DUPLICATED] == [3, 4]
    _check_invariants(7, origin, rows)


def _msgs(n_pairs: int, big: int = 0) -> list:
    out = [{"role": "user", "content": "start the task"}]
    for k in range(n_pairs):
        out.append({"role": "assistant", "content": [{"type": "text", "text": f"step {k}"},
                                                     {"type": "tool_use", "id": f"toolu_{k:03d}", "name": "bash",
                                                      "input": {"command": f"ls {k}"}}]})
        out.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{k:03d}",
                                                 "content": "x" * (big if k == n_pairs - 1 else 300)}]})
    return out


def test_real_steps_match_trace(tmp_path):
    msgs = _msgs(40, big=250_000)
    trace = Engine("s08", {}, workspace=Workspace(tmp_path)).run(msgs)
    changed_kinds = set()
    for step in trace.steps:
        rows = align(step)
        _check_invariants(len(step.input), step.origin, rows)
        for r in rows:
            if r.kind == KEPT:
                assert step.messages[r.right] is step.input[r.left]
            if r.kind == CHANGED:
                assert step.messages[r.right] is not step.input[r.left]
                changed_kinds.add(step.layer)
        if step.layer == "micro_compact":
            changed = [r for r in rows if r.kind == CHANGED]
            assert changed and all(r.blocks for r in changed)
            assert all(b.new_len < b.old_len for r in changed for b in r.blocks)
        if step.layer == "snip_compact":
            removed = [r.left for r in rows if r.kind == REMOVED]
            assert len(removed) == step.vars["snipped"]
            assert removed == list(range(step.vars["head_end"], step.vars["tail_start"]))
            ins = [r for r in rows if r.kind == INSERTED]
            assert len(ins) == 1 and "snipped" in json.dumps(step.messages[ins[0].right])
            # the snip edit is attached to the removed rows
            assert all(r.edits for r in rows if r.kind == REMOVED)
    assert "tool_result_budget" in changed_kinds


def _edits_by_definition(step, rows) -> list[tuple]:
    """Each row's edit indexes as the module docstring defines them, row by row: an edit concerns the
    first non-duplicated row of its message, the row of its output, and the first rows of the inputs in
    its range."""
    first_left, row_of_right = {}, {}
    for ri, r in enumerate(rows):
        if r.left is not None and r.kind != DUPLICATED:
            first_left.setdefault(r.left, ri)
        if r.right is not None:
            row_of_right[r.right] = ri
    got: dict = {}
    for k, e in enumerate(step.edits):
        hit = set()
        if e.message is not None and e.message in first_left:
            hit.add(first_left[e.message])
        if e.out is not None and e.out in row_of_right:
            hit.add(row_of_right[e.out])
        if e.start is not None and e.end is not None:
            hit.update(first_left[i] for i in range(max(e.start, 0), e.end) if i in first_left)
        for ri in hit:
            got.setdefault(ri, set()).add(k)
    return [tuple(sorted(got.get(ri, ()))) for ri in range(len(rows))]


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_edits_attach_to_their_rows(data):
    """A summary's range edit over every removed row, with edits of single messages inside and around it
    (Claude Code's restored files), overlapping ranges: each row lists exactly the edits that concern it,
    and a changed row the block changes of its message."""
    from compactscope.core.pipeline.trace import Edit
    n = data.draw(st.integers(0, 40))
    origin = data.draw(st.lists(st.one_of(st.none(), st.integers(0, max(n - 1, 0))), max_size=12)) if n else []
    inp = [{"role": "user", "content": f"m{i}"} for i in range(n)]
    outp = [inp[o] if o is not None and data.draw(st.booleans()) else {"role": "user", "content": "new"}
            for o in origin]
    idx = st.one_of(st.none(), st.integers(-2, n + 2))
    edits = [Edit("replace", "e", start=a, end=None if a is None else a + data.draw(st.integers(0, n + 3)),
                  message=data.draw(idx), block=data.draw(st.one_of(st.none(), st.integers(0, 2))),
                  out=data.draw(st.one_of(st.none(), st.integers(0, max(len(origin) - 1, 0)))),
                  new_len=data.draw(st.one_of(st.none(), st.just(9))))
             for a in data.draw(st.lists(idx, max_size=6))]

    class Step:
        pass
    step = Step()
    step.input, step.messages, step.origin, step.edits = inp, outp, origin, edits
    rows = align(step)
    _check_invariants(n, origin, rows)
    assert [r.edits for r in rows] == _edits_by_definition(step, rows)
    for r in rows:
        want = tuple((edits[k].block, edits[k].kind, edits[k].old_len, edits[k].new_len) for k in r.edits
                     if r.kind == CHANGED and edits[k].block is not None and edits[k].message == r.left
                     and edits[k].new_len is not None)
        assert tuple(b[:4] for b in r.blocks) == want
