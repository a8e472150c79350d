"""The edit list stays cheap on a layer with thousands of edits: it lists the first ones and says how many more."""
from compactscope.core.pipeline.engine import Engine
from compactscope.widgets.explainer import MAX_EDIT_ROWS, EditList


def test_edit_list_caps_rows_and_counts_the_rest(qtbot):
    msgs = [{"role": "user", "content": "go"}]
    for i in range(MAX_EDIT_ROWS + 50):
        msgs += [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "bash", "input": {}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "r" * 200}]}]
    step = Engine("s08", {"max_messages": 10_000}).run(msgs).step("micro_compact")
    assert len(step.edits) == MAX_EDIT_ROWS + 47
    view = EditList()
    qtbot.addWidget(view)
    view.set_step(step, "L2 micro")
    texts = [view.item(i).text() for i in range(view.count())]
    assert sum(1 for t in texts if "with the placeholder" in t) == MAX_EDIT_ROWS
    assert any(t.startswith("\u2026 47 more edits") for t in texts)
    small = Engine("s08", {"max_messages": 10_000}).run(msgs[:21]).step("micro_compact")
    view.set_step(small, "L2 micro")
    assert not any("more edits" in view.item(i).text() for i in range(view.count()))
