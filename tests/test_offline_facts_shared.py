"""The offline summarizer's per-message facts share their common values: one tuple for every message the summary
reads nothing of, one call tuple per tool name for calls that name no path (memory of a big JSON document, issue
27); the facts and the summary are those read afresh."""
import compactscope.core.summarizers.offline as offline
from compactscope.core.summarizers import OfflineSummarizer, SummaryRequest

facts_of = offline._facts_of


def _session() -> list:
    out: list = [{"role": "user", "content": "Fix the parser in src/parse.py please"}]
    for i in range(40):
        out.append({"role": "assistant", "content": [
            {"type": "text", "text": f"step {i}"},
            {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": "ls"}},
            {"type": "tool_use", "id": f"r{i}", "name": "Read", "input": {"file_path": f"src/m{i}.py"}}]})
        out.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{i}", "content": "ok"},
            {"type": "tool_result", "tool_use_id": f"r{i}", "content": "boom", "is_error": i % 7 == 0}]})
    return out


def test_tool_results_without_errors_share_one_facts_tuple():
    msgs = _session()
    quiet = [facts_of(m) for m in msgs[2::2] if not any(b.get("is_error") for b in m["content"])]
    assert quiet and all(f is quiet[0] for f in quiet)
    assert quiet[0] == (None, None, (), ())


def test_bare_calls_share_one_tuple_per_name_and_equal_the_fresh_ones():
    msgs = _session()
    a, b = facts_of(msgs[1]), facts_of(msgs[3])
    assert a[2][0] is b[2][0] and a[2][0] == ("Bash", (), ())
    assert a[2][1] == ("Read", (("src/m0.py", "read"),), ())
    assert b[2][1] == ("Read", (("src/m1.py", "read"),), ())
    assert a[:2] == (None, "step 0")


def test_errors_and_user_text_kept():
    msgs = _session()
    assert facts_of(msgs[2])[3] == ("boom",)
    assert facts_of(msgs[0])[0] == "Fix the parser in src/parse.py please"


def test_summary_unchanged_by_sharing():
    msgs = _session()
    text = OfflineSummarizer().summarize(SummaryRequest("", tuple(msgs))).text
    assert "Bash" in text and "src/m3.py" in text and "boom" in text
