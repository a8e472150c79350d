"""The one parameter-spec parser (core/strategies/spec.py) used by --set, --compare and the window."""
from __future__ import annotations

import pytest

from compactscope.core import strategies
from compactscope.core.strategies.spec import (compare_runs, parse_assignments, parse_run, parse_run_spec,
                                               parse_runs)


def test_assignments():
    assert parse_assignments(["a=1", " b = x=y "]) == {"a": "1", "b": "x=y"}
    assert parse_assignments(None) == {}
    for bad in ("a", "=1"):
        with pytest.raises(ValueError, match="--set takes NAME=VALUE"):
            parse_assignments([bad])


def test_run_specs_keep_their_label_and_resolve_typed_values():
    assert parse_run_spec("s08") == ("s08", "s08", {})
    assert parse_run_spec("s08:context_limit=20000, keep_recent=2") == \
        ("s08:context_limit=20000, keep_recent=2", "s08", {"context_limit": "20000", "keep_recent": "2"})
    assert parse_run_spec("tight = s08:max_messages=20") == ("tight", "s08", {"max_messages": "20"})
    spec = parse_run("tight=s08:max_messages=20,variant=readme")
    assert spec.label == "tight" and spec.strategy is strategies.get("s08")
    assert spec.params == strategies.get("s08").resolve({"max_messages": 20, "variant": "readme"})
    assert isinstance(spec.params["max_messages"], int)
    for bad in ("s08:context_limit", ":x=1", ""):
        with pytest.raises(ValueError, match="NAME"):
            parse_run_spec(bad)
    with pytest.raises(KeyError, match="nosuch"):
        parse_run("nosuch")
    with pytest.raises(KeyError, match="no parameter 'bogus'"):
        parse_run("s08:bogus=1")
    with pytest.raises(ValueError, match="whole number"):
        parse_run("s08:max_messages=many")
    assert [s.label for s in parse_runs(" s08 ; ;hermes:trigger=always")] == ["s08", "hermes:trigger=always"]


def test_compare_runs_put_the_current_run_first_and_skip_same_runs():
    s08 = strategies.get("s08")
    runs = compare_runs(s08, s08.resolve({}), ["s08", "hermes"], "x=s08:context_limit=9")
    assert [r.label for r in runs] == ["current: s08", "hermes (defaults)", "x"]   # s08 defaults = current
    assert runs[2].params["context_limit"] == 9 and runs[0].key != runs[2].key
    runs = compare_runs(s08, s08.resolve({"context_limit": 9}), ["s08"])
    assert [r.label for r in runs] == ["current: s08", "s08 (defaults)"]
    assert runs[0].to_json() == {"label": "current: s08", "strategy": "s08", "params": runs[0].params}


def test_compared_runs_infer_their_defaults_from_the_conversation(corpus):
    from compactscope.core.loaders import load
    conv = load(corpus / "claude-code-viewer" / "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl").main
    cc = strategies.get("claude_code")
    inferred = strategies.infer_params(cc, conv).params
    assert inferred
    runs = compare_runs(strategies.get("s08"), strategies.get("s08").resolve({}), ["claude_code"],
                        "mine=claude_code:buffer=1", conversation=conv)
    assert runs[1].params == cc.resolve(inferred)                          # "claude_code (defaults)" as CLI --compare
    assert runs[2].params == cc.resolve({**inferred, "buffer": 1})         # the run's own values win
    assert compare_runs(cc, cc.resolve({}), ["claude_code"])[1:] == []     # without a conversation: no inference
