"""core.explain.cut_lines: where the window draws the snip cut lines, computed without Qt."""
from helpers import worked_example

from compactscope.core.analysis.explain import cut_lines
from compactscope.core.pipeline.engine import run_pipeline


def test_cut_lines_of_the_worked_example(tmp_path):
    from compactscope.core.files.workspace import Workspace
    step = run_pipeline(worked_example(), "s08", {"max_messages": 8}, workspace=Workspace(tmp_path)).step("snip_compact")
    before, after = cut_lines(step)
    assert [k for _, k in before[3]] == ["initial"] and [k for _, k in before[4]] == ["cut"]
    assert [k for _, k in before[7]] == ["initial"] and [k for _, k in before[6]] == ["cut"]
    assert "the guard moved it to 4" in before[3][0][0]
    assert "2 message(s) 4..5 removed here" in after[4][0][0]      # at the placeholder
    assert after[5][0][0] == "\u2702 tail cut (tail_start = 6)"
    unchanged = run_pipeline(worked_example(), "s08", {}, workspace=Workspace(tmp_path)).step("snip_compact")
    assert cut_lines(unchanged) == ({}, {})


def test_trace_map_index_follows_messages_through_the_layers(tmp_path):
    from compactscope.core.files.workspace import Workspace
    t = run_pipeline(worked_example(), "s08", {"max_messages": 8}, workspace=Workspace(tmp_path))
    snip = 2                                   # stage 2 = after snip_compact
    assert t.map_index(7, 0, snip) == 6        # input 7 is output 6 of the snip
    assert t.map_index(4, 0, snip) is None     # snipped
    assert t.map_index(6, snip, 0) == 7 and t.map_index(4, snip, 0) is None   # the placeholder has no input
    assert t.map_index(0, 0, 99) is None
