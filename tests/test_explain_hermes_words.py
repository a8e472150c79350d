"""The hermes boundaries explainer says what its numbers are (qa #26)."""
from __future__ import annotations

import re
from pathlib import Path

from compactscope.core.analysis.explain import hermes_rows
from compactscope.core.loaders import load
from compactscope.core.pipeline.engine import run_pipeline

EXAMPLES = Path(__file__).resolve().parent.parent / "assets" / "examples"


def test_hermes_anchor_rows_name_their_references():
    conv = load(EXAMPLES / "long_session.json").main
    trace = run_pipeline(conv.messages, "hermes", {"trigger": "always"}, conversation=conv)
    step = next(s for s in trace.steps if s.layer == "hermes_boundaries")
    rows, _ = hermes_rows(step)
    anchors = [text for kind, text in rows if kind == "anchor"]
    assert len(anchors) == 2
    for text in [t for _, t in rows]:
        for m in re.finditer(r"#\d{4,}", text):         # a bare number in brackets means nothing to a reader
            assert text[:m.start()].endswith("hermes-agent issue "), text
    assert "newest request" in anchors[0] and "last answer" in anchors[1]
