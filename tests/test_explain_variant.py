"""The README variant beside the course code's snip (core.explain.variant_rows), and results lost when micro
replaces what budget never persisted (core.explain.lost_results)."""
from helpers import worked_example

from compactscope.core.analysis.explain import README_LACKS, lost_results, snip_rows, variant_rows
from compactscope.core.pipeline.engine import run_pipeline
from compactscope.core.files.workspace import Workspace


def parallel_results():
    """One assistant message with three tool_use blocks, each result in its own user message (as some logs
    store parallel results): with max_messages=6 the head guard pushes head_end past tail_start."""
    msgs = [{"role": "user", "content": "go"}, {"role": "assistant", "content": "ok"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{k}", "name": "a", "input": {}}
                                              for k in range(3)]}]
    msgs += [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k}", "content": "r"}]}
             for k in range(3)]
    return msgs + [{"role": "assistant", "content": "done"}, {"role": "user", "content": "next"}]


def both(tmp_path, msgs, **params):
    ws = Workspace(tmp_path)
    g = run_pipeline(msgs, "s08", params, workspace=ws).step("snip_compact")
    r = run_pipeline(msgs, "s08", {**params, "variant": "readme"}, workspace=ws).step("snip_compact")
    return g, r


def test_same_cut_differs_only_in_the_placeholder(tmp_path):
    g, r = both(tmp_path, worked_example(), max_messages=8)
    [(kind, text)] = variant_rows(g, r)
    assert kind == "same" and "messages 4..5 (2)" in text
    assert "'[snipped 2 messages]'" in text and "'[snipped 2 messages from conversation middle]'" in text


def test_snipped_zero_inserts_a_placeholder_and_the_size_grows(tmp_path):
    g, r = both(tmp_path, worked_example(), max_messages=11)
    assert not g.changed and r.vars["snipped"] == 0 and len(r.messages) == 13 and r.size_after > r.size_before
    [(kind, text)] = variant_rows(g, r)
    assert kind == "differ" and "'[snipped 0 messages from conversation middle]'" in text
    assert "12 \u2192 13 messages" in text and "the size grows" in text and "overlap check" in text
    assert "stops at head_end 4 >= tail_start 4" in text
    # the README column says what it lacks, and that it inserted a placeholder (not "nothing snipped")
    rows = snip_rows(r)
    assert ("rule", f"the README code: the same two guards, without {README_LACKS}") in rows
    assert any(k == "result" and "snipped 0, yet the placeholder" in t for k, t in rows)
    assert any(k == "result" and "overlap check returns the list unchanged" in t for k, t in snip_rows(g))


def test_negative_snip_duplicates(tmp_path):
    g, r = both(tmp_path, parallel_results(), max_messages=6)
    assert r.vars["snipped"] == -1
    [(kind, text)] = variant_rows(g, r)
    assert kind == "differ" and "snipped -1, so messages 5..5 appear twice" in text and "8 \u2192 10 messages" in text


def test_index_error_at_the_end(tmp_path):
    g, r = both(tmp_path, worked_example(), max_messages=3)
    assert r.error and "IndexError" in r.error and g.changed
    [(kind, text)] = variant_rows(g, r)
    assert kind == "differ" and "IndexError" in text and "bounds checks" in text
    assert "removes messages 4..11 (8)" in text


def test_keep_head_zero_reads_the_last_message(tmp_path):
    msgs = worked_example()[:-1] + [{"role": "assistant", "content": [
        {"type": "tool_use", "id": "tz", "name": "a", "input": {}}]}]
    g, r = both(tmp_path, msgs, max_messages=6, keep_head=0)
    rows = variant_rows(g, r)
    assert rows and (rows[0][0] == "same" or "messages[-1]" in rows[0][1])


def _batch_file():
    """Earlier seen results, then a batch of four results the model has not seen: one of 36,000 chars."""
    msgs = [{"role": "user", "content": "start"}]
    for k in range(3):
        msgs += [{"role": "assistant", "content": [{"type": "tool_use", "id": f"old{k}", "name": "r", "input": {}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"old{k}", "content": "o" * 500}]}]
    msgs.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"new{k}", "name": "r", "input": {}}
                                                  for k in range(4)]})
    msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"new{k}",
                                              "content": ("x" * 36_000 if k == 0 else "y" * 300)}
                                             for k in range(4)]})
    return msgs


def test_lost_when_micro_runs_before_budget(tmp_path):
    ws = Workspace(tmp_path)
    params = {"max_bytes": 30_000}
    course = run_pipeline(_batch_file(), "s08", params, workspace=ws)
    assert course.step("tool_result_budget").changed and lost_results(course) == []
    swapped = run_pipeline(_batch_file(), "s08", params, workspace=ws,
                           order=["micro_compact", "tool_result_budget", "snip_compact", "compact_history"])
    lost = lost_results(swapped)
    assert [(x.tool_id, x.chars, x.budget_after) for x in lost] == [("new0", 36_000, "tool_result_budget")]
    assert "LOST: new0 (36,000 chars)" in lost[0].text and "too late to persist it" in lost[0].text
    micro = swapped.steps[lost[0].step]
    assert micro.layer == "micro_compact" and micro.edits[lost[0].edit].tool_id == "new0"
    # the older results the model has seen are replaced as designed, not lost
    assert any(e.tool_id == "old0" for e in micro.edits) and all(x.tool_id.startswith("new") for x in lost)


def test_run_says_lost(tmp_path):
    import json
    import subprocess
    import sys
    from pathlib import Path
    path = tmp_path / "batch.json"
    path.write_text(json.dumps(_batch_file()), encoding="utf-8")
    root = Path(__file__).resolve().parent.parent
    r = subprocess.run([sys.executable, "-m", "compactscope", "run", str(path), "--set", "max_bytes=30000",
                        "--workdir", str(tmp_path / "ws"), "--order",
                        "micro_compact,tool_result_budget,snip_compact,compact_history"],
                       cwd=root, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "LOST: new0 (36,000 chars)" in r.stdout
