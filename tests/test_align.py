"""core.align: before/after rows of a Step."""
from __future__ import annotations

import json

from hypothesis import given, settings, strategies as st

from compactscope.core.align import CHANGED, DUPLICATED, INSERTED, KEPT, REMOVED, align, align_origin
from compactscope.core.pipeline import Engine
from compactscope.core.workspace import Workspace


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
