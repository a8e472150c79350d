"""app.workers: the pipeline job the window runs in a thread (no event loop needed)."""
from __future__ import annotations

import threading

import pytest

pytest.importorskip("PySide6")

from compactscope.app.workers import has_readme_variant, run_pipeline_job, snip_prefix  # noqa: E402
from compactscope.core import strategies  # noqa: E402
from compactscope.core.summarizers import make_summarizer  # noqa: E402
from compactscope.core.workspace import Workspace  # noqa: E402


def _conv(n_pairs: int = 40) -> list:
    out = [{"role": "user", "content": "start"}]
    for k in range(n_pairs):
        out.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{k}", "name": "bash",
                                                      "input": {"command": f"echo {k}"}}]})
        out.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k}",
                                                 "content": "x" * 500}]})
    return out


def test_job_runs_guarded_and_readme_up_to_snip(tmp_path):
    s08 = strategies.get("s08")
    assert has_readme_variant(s08) and snip_prefix(s08) == ["tool_result_budget", "snip_compact"]
    seen = []
    res = run_pipeline_job(_conv(), None, s08, {}, make_summarizer("offline"), Workspace(tmp_path),
                           progress=seen.append)
    assert [s.layer for s in res.trace.steps] == s08.layer_names
    assert [s.layer for s in res.readme_trace.steps] == ["tool_result_budget", "snip_compact"]
    assert res.readme_trace.params["variant"] == "readme" and res.trace.params["variant"] == "guarded"
    assert seen[:4] == [f"{k + 1}/4 {l.label}" + (" (LLM)" if l.llm else "") for k, l in enumerate(s08.layers)]
    assert seen[-1] == "README variant"
    assert not res.cancelled


def test_job_cancelled_before_start_runs_no_layer(tmp_path):
    cancel = threading.Event()
    cancel.set()
    res = run_pipeline_job(_conv(), None, "s08", {}, make_summarizer("offline"), Workspace(tmp_path), cancel=cancel)
    assert res.cancelled and res.trace.steps == [] and res.readme_trace is None


def test_job_for_every_strategy(tmp_path):
    for name in strategies.available():
        res = run_pipeline_job(_conv(10), None, name, {}, make_summarizer("offline"), Workspace(tmp_path / name))
        assert res.trace.strategy == name
        assert [s.layer for s in res.trace.steps if s.layer != "convert"] == strategies.get(name).layer_names
