"""The headless CLI: JSON output shape, round trip, exit codes, and bad input."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from compactscope.app.cli import main

ROOT = Path(__file__).resolve().parent.parent


def run_cli(capsys, *argv):
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_run_json_shape_and_round_trip(capsys, examples, tmp_path):
    rc, out, err = run_cli(capsys, "run", str(examples / "long_session.json"), "--json", "--workdir", str(tmp_path),
                           "--summarizer", "fixed:THE SUMMARY")
    assert rc == 0, err
    d = json.loads(out)
    assert set(d) >= {"strategy", "params", "input", "steps", "findings"}
    assert d["input"]["format"] == "anthropic-messages" and d["input"]["messages"] == 59
    assert [s["layer"] for s in d["steps"]] == ["tool_result_budget", "snip_compact", "micro_compact",
                                                "compact_history"]
    for s in d["steps"]:
        assert set(s) >= {"layer", "changed", "size_before", "size_after", "tokens_before", "tokens_after",
                          "messages", "origin", "edits", "vars"}
        assert len(s["origin"]) == len(s["messages"])
        assert s["size_after"] == len(str(s["messages"]))     # the JSON round-trips to the same sizes
    last = d["steps"][-1]
    assert last["triggered"] is True
    assert last["messages"] == [{"role": "user", "content": "[Compacted]\n\nTHE SUMMARY"}]
    # persisted files landed in the chosen workdir, not beside the input
    persisted = d["steps"][0]["edits"][0]["path"]
    assert Path(persisted).resolve().is_relative_to(tmp_path.resolve())
    # feeding a step's output back in gives the same steps from there on
    p = tmp_path / "after_budget.json"
    p.write_text(json.dumps(d["steps"][0]["messages"]))
    rc, out2, _ = run_cli(capsys, "run", str(p), "--json", "--workdir", str(tmp_path / "2"),
                          "--summarizer", "fixed:THE SUMMARY")
    d2 = json.loads(out2)
    assert d2["steps"][1]["messages"] == d["steps"][1]["messages"]
    assert d2["steps"][1]["vars"] == d["steps"][1]["vars"]


def test_run_set_and_variant(capsys, tmp_path):
    from helpers import worked_example
    p = tmp_path / "w.json"
    p.write_text(json.dumps(worked_example()))
    rc, out, _ = run_cli(capsys, "run", str(p), "--json", "--set", "max_messages=8", "--variant", "readme",
                         "--workdir", str(tmp_path))
    d = json.loads(out)
    snip = d["steps"][1]
    assert d["params"]["max_messages"] == 8 and d["params"]["variant"] == "readme"
    assert snip["vars"]["head_end"] == 4 and snip["vars"]["tail_start"] == 6
    assert snip["messages"][4]["content"] == "[snipped 2 messages from conversation middle]"


def test_run_text_output_explains(capsys, examples, tmp_path):
    rc, out, _ = run_cli(capsys, "run", str(examples / "boundary_case.json"), "--workdir", str(tmp_path))
    assert rc == 0
    assert "head_end 3 -> 4" in out and "tail_start 9 -> 8" in out
    assert "no change: 2 tool result(s) <= keep_recent 3" in out


def test_check_exit_codes(capsys, tmp_path, examples):
    rc, out, _ = run_cli(capsys, "check", str(examples / "short_session.json"))
    assert rc == 0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x",
                                                             "content": "r"}]}]))
    rc, out, _ = run_cli(capsys, "check", str(bad))
    assert rc == 1 and "orphan_tool_result" in out


@pytest.mark.parametrize("content,expect", [
    (b"", "empty"),
    (b"{not json", "broken JSON"),
    (b"\x00\x01\x02binary", "binary"),
    (b'{"foo": 1}', "not a format Compactscope knows"),
    (b"[1, 2, 3]", "not a message object"),
    (b'"just a string"', "not a conversation file"),
    (b'[{"content": "no role"}]', "no \"role\""),
])
def test_bad_input_is_one_line_exit_2(capsys, tmp_path, content, expect):
    p = tmp_path / "in.json"
    p.write_bytes(content)
    rc, out, err = run_cli(capsys, "run", str(p))
    assert rc == 2
    assert str(p) in err and expect in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_broken_json_names_the_line(capsys, tmp_path):
    p = tmp_path / "in.json"
    p.write_text('[\n{"role": "user", "content": "a"},\n{"role": "assistant", "content": oops}\n]')
    rc, _, err = run_cli(capsys, "check", str(p))
    assert rc == 2 and f"{p}:3:" in err


def test_directory_and_missing_file(capsys, tmp_path):
    rc, _, err = run_cli(capsys, "run", str(tmp_path))
    assert rc == 2 and "folder" in err
    rc, _, err = run_cli(capsys, "run", str(tmp_path / "nope.json"))
    assert rc == 2 and "no such file" in err


def test_bad_params_and_strategy(capsys, examples):
    f = str(examples / "short_session.json")
    assert run_cli(capsys, "run", f, "--set", "max_messages=lots")[0] == 2
    assert run_cli(capsys, "run", f, "--strategy", "nope")[0] == 2
    assert run_cli(capsys, "run", f, "--order", "snip_compact,bogus")[0] == 2
    rc, _, err = run_cli(capsys, "run", f, "--summarizer", "psychic")
    assert rc == 2 and "unknown summarizer" in err


def test_blocks_without_type_and_odd_results_are_findings(capsys, tmp_path):
    p = tmp_path / "odd.json"
    p.write_text(json.dumps([
        {"role": "user", "content": [{"text": "no type"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "x", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": None},
                                     {"type": "mystery"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "b", "name": "x", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b", "content": 12}]},
    ] * 3))
    rc, out, err = run_cli(capsys, "run", str(p), "--json", "--set", "keep_recent=1", "--workdir", str(tmp_path))
    assert rc == 0, err
    d = json.loads(out)
    codes = {f["code"] for f in d["input_findings"]}
    assert {"block_without_type", "unknown_block"} <= codes
    micro = d["steps"][2]
    assert any("TypeError" in e["text"] for e in micro["edits"])


def test_jsonl_with_a_huge_line_is_reported(tmp_path, monkeypatch):
    from compactscope.core.loaders import base, load
    p = tmp_path / "t.jsonl"
    p.write_text('{"role": "user", "content": "a"}\n' + '{"role": "assistant", "content": "' + "x" * 5000
                 + '"}\n{"role": "user", "content": "b"}\n')
    monkeypatch.setattr(base, "MAX_LINE_BYTES", 1000)
    monkeypatch.setattr(base.iter_lines, "__defaults__", (1000,))
    r = load(p)
    assert [m["content"] for m in r.main.messages] == ["a", "b"]
    assert any(pr.line == 2 and "too long" in pr.text for pr in r.problems)


def test_console_script_entry_point_works():
    r = subprocess.run([sys.executable, "-m", "compactscope", "strategies"], cwd=ROOT, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and "s08" in r.stdout and "max_messages" in r.stdout


def test_run_reactive_appends_the_reactive_step(capsys, examples, tmp_path):
    rc, out, _ = run_cli(capsys, "run", str(examples / "boundary_case.json"), "--json", "--reactive",
                         "--workdir", str(tmp_path), "--summarizer", "fixed:R")
    d = json.loads(out)
    assert [s["layer"] for s in d["steps"]][-1] == "reactive_compact"
    last = d["steps"][-1]
    assert last["messages"][0]["content"] == "[Reactive compact]\n\nR"
    assert len(last["messages"]) == 6 and last["origin"][0] is None


def test_unknown_jsonl_names_its_broken_line(capsys, tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_text('{"type": "user", "message": {"role": "user", "content": "hi"}}\n{broken\n')
    rc, _, err = run_cli(capsys, "check", str(p))
    assert rc == 2 and f"{p}:2: broken JSON" in err


def test_lines_the_load_left_out_are_said_with_file_and_line(capsys, tmp_path):
    """A corrupt line is skipped and the rest of the file is run: stderr says which line was left out."""
    path = tmp_path / "s.jsonl"
    good = {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "hello"}}
    path.write_text(json.dumps(good) + "\n{not json\n")
    before = path.read_bytes()
    for cmd in (["check"], ["run", "--json"], ["run"]):
        rc, out, err = run_cli(capsys, cmd[0], str(path), *cmd[1:])
        assert rc == 0 and out, (cmd, err)
        assert f"{path}:2: corrupt line" in err and "left out" in err and f"compactscope info {path}" in err
    rc, out, err = run_cli(capsys, "check", str(Path(__file__).parent.parent / "assets/examples/long_session.json"))
    assert "left out" not in err
    assert path.read_bytes() == before
