"""Issue 11: real Claude Code sessions shown and replayed as they really ran (loader, checker, contexts,
inference, images)."""
from __future__ import annotations

import json

import pytest

from compactscope.core.checker import RESULT_BEFORE_FILE, check, check_conversation, rejected
from compactscope.core.loaders import load
from compactscope.core.messages import ToolPairIndex

from conftest import CORPUS

CC = CORPUS / "entireio-cli"


def _cc(uuid, parent, type_, message=None, version="2.1.14", ts="2026-01-01T00:00:00.000Z", **kw):
    r = {"parentUuid": parent, "isSidechain": False, "sessionId": "s1", "version": version, "type": type_,
         "uuid": uuid, "timestamp": ts}
    if message is not None:
        r["message"] = message
    r.update(kw)
    return r


def _asst(mid, *blocks, usage=None):
    m = {"id": mid, "type": "message", "role": "assistant", "model": "claude-x", "content": list(blocks)}
    if usage:
        m["usage"] = usage
    return m


def _tu(i, name="Bash"):
    return {"type": "tool_use", "id": f"t{i}", "name": name, "input": {"command": f"echo {i}"}}


def _res(i, text="ok"):
    return {"type": "tool_result", "tool_use_id": f"t{i}", "content": text}


def _write(tmp_path, recs, name="s.jsonl"):
    p = tmp_path / name
    p.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    return p


# ----------------------------------------------------------------- loader: typed text with tool results

def test_typed_text_on_a_sibling_tool_result_is_kept(tmp_path):
    """Parallel calls: the user typed while the tools ran; Claude Code wrote the text with the FIRST
    result, whose line is a sibling of the chain (the next call hangs off the second result)."""
    recs = [
        _cc("u1", None, "user", {"role": "user", "content": "go"}),
        _cc("a1", "u1", "assistant", _asst("m1", _tu(1))),
        _cc("a2", "a1", "assistant", _asst("m1", _tu(2))),
        _cc("r1", "a2", "user", {"role": "user", "content": [
            _res(1), {"type": "text", "text": "and make sure this is tested"}]}),
        _cc("r2", "a2", "user", {"role": "user", "content": [_res(2)]}),
        _cc("a3", "r2", "assistant", _asst("m2", {"type": "text", "text": "done"})),
    ]
    conv = load(_write(tmp_path, recs)).main
    assert [m["role"] for m in conv.messages] == ["user", "assistant", "user", "assistant"]
    blocks = conv.messages[2]["content"]
    # as the API received them: the results first, then what the user typed
    assert [b["type"] for b in blocks] == ["tool_result", "tool_result", "text"]
    assert blocks[2]["text"] == "and make sure this is tested"
    assert check(conv.messages) == []
    assert conv.extra["abandoned_records"] == 0


def test_a_rewound_branch_is_still_left_out(tmp_path):
    recs = [
        _cc("u1", None, "user", {"role": "user", "content": "go"}),
        _cc("a1", "u1", "assistant", _asst("m1", _tu(1))),
        _cc("r1", "a1", "user", {"role": "user", "content": [_res(1), {"type": "text", "text": "old words"}]}),
        _cc("a2", "r1", "assistant", _asst("m2", {"type": "text", "text": "first try"})),
        # rewound: the same result answered again on a new branch
        _cc("r1b", "a1", "user", {"role": "user", "content": [_res(1), {"type": "text", "text": "new words"}]}),
        _cc("a3", "r1b", "assistant", _asst("m3", {"type": "text", "text": "second try"})),
    ]
    conv = load(_write(tmp_path, recs)).main
    texts = json.dumps(conv.messages)
    assert "new words" in texts and "old words" not in texts and "first try" not in texts
    assert conv.extra["abandoned_records"] == 2


def test_fc_keeps_both_records_with_results_and_typed_text(corpus):
    conv = load(CC / "fc-99c919b212-0-full.jsonl").main
    typed = [m for m in conv.messages if m["role"] == "user" and isinstance(m["content"], list)
             and any(b.get("type") == "tool_result" for b in m["content"])
             and any(b.get("type") == "text" for b in m["content"])]
    text = json.dumps(typed)
    assert "let's not leave _all_ the tests to the very end" in text
    assert "consolidate the agent-specific hook types" in text


# ----------------------------------------------------------------- checker: a result before the file

def test_a_result_whose_call_is_before_the_file_is_its_own_kind(tmp_path):
    recs = [
        _cc("r0", "outside-uuid", "user", {"role": "user", "content": [_res(0)]}),
        _cc("a1", "r0", "assistant", _asst("m1", {"type": "text", "text": "ok"})),
    ]
    conv = load(_write(tmp_path, recs)).main
    assert conv.extra["starts_mid_session"] and conv.extra["results_before_file"] == ["t0"]
    findings = check_conversation(conv)
    assert [f.code for f in findings] == [RESULT_BEFORE_FILE]
    assert "before this file's first line" in findings[0].text and not rejected(findings)
    # without the conversation's knowledge the same list is an ordinary rejection
    assert [f.code for f in check(conv.messages)] == ["orphan_tool_result"]


def test_e1_starts_mid_session_and_is_not_rejected(corpus):
    conv = load(CC / "e1-2c3e2b3f2a-0-full.jsonl").main
    findings = check_conversation(conv)
    assert [f.code for f in findings] == [RESULT_BEFORE_FILE]
    assert findings[0].message == 0 and not rejected(findings)
