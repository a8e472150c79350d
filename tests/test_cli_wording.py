"""What the commands say and how they exit, consistently (QA findings 18, 23, 27, 28, 29, 31, 32): a plugin
that fails exits 2, a transcript is named by its full path, the top-level help lists the window's options
without markup, counts and articles agree with their nouns, a warning does not say "refused", tool pairs are
counted as the checker pairs them, a hermes session is OpenAI's dialect however short."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from compactscope.app.cli import main as cli_main
from compactscope.core.i18n import english as words

PLUGIN = '''
def boom(messages, **kw):
    raise RuntimeError("boom")

def notalist(messages, **kw):
    return 3

def fine(messages, **kw):
    return messages
'''


def _run(capsys, argv) -> tuple[int, str, str]:
    code = cli_main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


# ------------------------------------------------------------------ a plugin that fails (18)
@pytest.mark.parametrize("name,said", [("boom", "raised RuntimeError: boom"),
                                       ("notalist", "returned an int, not a list of messages")])
def test_a_failing_plugin_exits_2_and_says_so(examples, tmp_path, capsys, name, said):
    plugin = tmp_path / "bad_plugin.py"
    plugin.write_text(PLUGIN)
    src = str(examples / "long_session.json")
    for cmd, extra in (("run", []), ("run", ["--json"]), ("replay", []),
                       ("report", ["-o", str(tmp_path / f"{name}.md")])):
        code, out, err = _run(capsys, [cmd, src, "--strategy", f"{plugin}:{name}", "--workdir",
                                       str(tmp_path / "wd"), *extra])
        assert code == 2, (cmd, extra, err)
        assert said in err and "plugin failed in layer" in err and "internal error" not in err, err
        assert out                                   # the report is still printed
    code, out, err = _run(capsys, ["run", src, "--strategy", f"{plugin}:fine", "--json", "--workdir",
                                   str(tmp_path / "wd")])
    assert code == 0 and err == ""
    assert not any(s.get("plugin_failed") for s in json.loads(out)["steps"])
    code, out, _ = _run(capsys, ["run", src, "--strategy", f"{plugin}:boom", "--json", "--workdir",
                                 str(tmp_path / "wd")])
    assert [s.get("plugin_failed") for s in json.loads(out)["steps"]] == [True]


# ------------------------------------------------------------------ the transcript's location (23)
def test_the_transcript_is_named_by_its_full_path(examples, tmp_path, capsys):
    wd = tmp_path / "work dir"
    code, out, _ = _run(capsys, ["run", str(examples / "long_session.json"), "--strategy", "s08",
                                 "--workdir", str(wd)])
    assert code == 0
    said = re.search(r"transcript saved to (\S.*\.jsonl)", out)
    assert said, out
    path = Path(said.group(1))
    assert path.is_absolute() and path.is_file() and wd.resolve() in path.parents


# ------------------------------------------------------------------ top-level help (27)
def test_top_level_help_has_no_markup_and_lists_the_window_options(capsys):
    code, out, _ = _run(capsys, ["--help"])
    assert code == 0
    assert "``" not in out
    for sub in ("run", "replay", "report", "fleet", "lesson"):
        assert f"\n    {sub} " in out, sub
    for opt in ("--size", "--tab", "--mode", "--strategy", "--compare", "--call", "--lesson", "--fleet",
                "--screenshots", "--lang", "--segment"):
        assert opt in out, opt
    assert "Exit codes" in out and "without one, 'compactscope [FILE] [options]' opens the window" in \
        " ".join(out.split())


# ------------------------------------------------------------------ grammar (28)
def test_counts_and_articles_agree():
    assert words.count(1, "message") == "1 message" and words.count(2, "message") == "2 messages"
    assert words.count(1, "tool pair") == "1 tool pair" and words.count(1234, "tool pair") == "1,234 tool pairs"
    assert words.count(2, "match") == "2 matches"
    assert [words.a(w) for w in ("int", "inspect-log", "anthropic-messages", "list", "user", "hour", "one-off",
                                 "NoneType", "openai-chat")] == \
        ["an int", "an inspect-log", "an anthropic-messages", "a list", "a user", "an hour", "a one-off",
         "a NoneType", "an openai-chat"]


def test_info_says_one_message_and_one_tool_pair(corpus, capsys):
    code, out, _ = _run(capsys, ["info", str(corpus / "entireio-cli/4c-02af2759b6-0-full.jsonl")])
    assert code == 0 and "2 messages" in out and "1 tool pair (0 complete)" in out and "1 tool pairs" not in out
    assert ", 1 conversation\n" in out


def test_the_words_of_types_and_formats_take_an(tmp_path):
    from compactscope.core import strategies
    from compactscope.core.analysis.checker import check
    from compactscope.core.loaders import load
    f = tmp_path / "api.json"
    f.write_text(json.dumps({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}))
    conv = load(f).main
    assert conv.format == "anthropic-messages"
    assert "an anthropic-messages file" in strategies.choose_strategy(conv).reason()
    with pytest.raises(ValueError, match="takes an int, not"):
        strategies.get("s08").resolve({"max_messages": [3]})
    assert "message is an int, not an object" in [x.text for x in check([7], "anthropic")]


# ------------------------------------------------------------------ a warning is not "refused" (29)
def test_result_before_file_reads_as_the_warning_it_is(corpus, capsys):
    code, out, _ = _run(capsys, ["check", str(corpus / "entireio-cli/e1-2c3e2b3f2a-0-full.jsonl")])
    lines = [x for x in out.splitlines() if "[result_before_file]" in x]
    assert code == 0 and lines
    for x in lines:
        assert x.lstrip().startswith("warning") and "refused" not in x and "not an error" in x


# ------------------------------------------------------------------ tool pairs as the checker pairs them (31)
def test_tool_pairs_count_every_call_even_when_ids_repeat(corpus, capsys):
    from compactscope.core.analysis.info import tool_pair_counts
    code, out, _ = _run(capsys, ["info", str(corpus / "swe-agent/marshmallow-1867.function_calling_replace.traj.json")])
    assert code == 0 and "11 tool pairs (11 complete)" in out
    call = lambda i: {"role": "assistant", "content": None,                             # noqa: E731
                      "tool_calls": [{"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    res = lambda i: {"role": "tool", "tool_call_id": i, "content": "ok"}               # noqa: E731
    msgs = [{"role": "user", "content": "go"}, call("a"), res("a"), call("a"), res("a"), call("b"), res("z"),
            res("z")]
    assert tool_pair_counts(msgs) == (4, 2)       # a, a (answered), b (waiting), z (a result without a call)
    # a compaction's re-sent copies add no pair: the hermes database's 31 calls stay 31
    code, out, _ = _run(capsys, ["info", str(corpus / "hermes-agent/rotation/state.db")])
    assert "31 tool pairs (31 complete)" in out


# ------------------------------------------------------------------ a one-message hermes session (32)
def test_a_one_message_hermes_session_is_openai(corpus, tmp_path):
    from compactscope.core.loaders import load
    conv = load(corpus / "hermes-agent/rotation/sessions/session_20261130_142348_26b578.json").main
    assert len(conv.messages) == 1 and conv.dialect == "openai"
    # what decides is the format, not the length: Anthropic blocks in a file with a session_id stay Anthropic
    f = tmp_path / "s.json"
    f.write_text(json.dumps({"session_id": "x", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]}]}))
    assert load(f).main.dialect == "anthropic"


# ------------------------------------------------------------------ no Python words in user text (22)
def test_values_read_as_set_takes_them_never_python_words(corpus, capsys):
    assert [words.value(v) for v in (True, False, None, 0.5, "main")] == ["true", "false", "none", "0.5", "main"]
    code, out, _ = _run(capsys, ["strategies"])
    assert code == 0 and "cap_reserve = true:" in out and "abort_on_summary_failure = false:" in out
    assert not re.search(r"\b(True|False|None)\b", out), re.findall(r".*\b(?:True|False|None)\b.*", out)[:3]
    code, out, _ = _run(capsys, ["run", str(corpus / "entireio-cli/4c-02af2759b6-0-full.jsonl")])
    assert code == 0 and "  cap_reserve = false: Claude Code 2.1.4" in out
    for cmd in ("info", "replay"):                     # a recording without trigger or preTokens says so in words
        code, out, _ = _run(capsys, [cmd, str(corpus / "hermes-agent/rotation/state.db")])
        assert code == 0 and "the recording holds no" in out and not re.search(r"\bNone\b", out)
