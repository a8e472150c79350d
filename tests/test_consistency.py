"""One rule per question, the same in every command (QA findings 3, 12 and 13):

* which strategy runs without --strategy (``strategies.own_strategy``/``choose_strategy``), said in every
  output's header, with a warning when a chosen strategy is not the file's own pipeline;
* which real context a command runs over by default (the last segment, ``core.contexts``), the whole
  history only when asked and then with a note that it was never sent;
* what ``--compare`` accepts (repeatable, ';'-separated: ``spec.split_runs``).
"""
from __future__ import annotations

import json

import pytest

from compactscope.app.cli import main as cli_main
from compactscope.core import strategies
from compactscope.core.loaders import load

CC = "entireio-cli/a6-e4c2a0fbd1-0-full.jsonl"          # Claude Code, one real compaction
CC3 = "entireio-cli/b0-2936744f3b-0-full.jsonl"         # Claude Code, three contexts
OWN = {
    CC: "claude_code",
    "hermes-agent/rotation/state.db": "hermes",
    "hermes-agent/rotation/sessions/session_20261130_142405_9aacdb.json": "hermes",
    "hermes-agent/rotation/sessions/session_20261130_142348_26b578.json": "hermes",     # one message, no event
    "inspect_ai/react-compaction-edit.json": "inspect_edit",
    "inspect_ai/react-compaction-trim.eval": "inspect_trim",
    "inspect_ai/react-compaction-trim.json": "inspect_trim",
    "inspect_ai/react-compaction-summary.json": "inspect_summary",
    "inspect_ai/2025-05-12T20-27-36-04-00_browser.json": "s08",                        # no compaction event
    "swe-agent/marshmallow-1867.function_calling_replace.traj.json": "s08",
    "learn-claude-code/s01.json": "s08",
    "entireio-cli/ab-2b9748b105-0-full.jsonl": "gemini_cli",                            # Gemini CLI, JSON
    "gemini-cli/gemini-01/session-2026-12-01T20-17-96eb980c.jsonl": "gemini_cli",       # Gemini CLI, JSONL
}


def _json(capsys, argv) -> dict:
    assert cli_main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("rel", sorted(OWN))
def test_the_files_own_pipeline(corpus, rel):
    result = load(str(corpus / rel))
    own = strategies.own_strategy(result)
    assert own.name == OWN[rel], own
    assert own.known == (own.name != "s08"), "only a recognised agent makes a chosen strategy worth a warning"
    # the rule reads a real-context view through the conversation it was cut from
    from compactscope.core.model.contexts import real_context
    assert strategies.own_strategy(real_context(result.main)).name == own.name
    choice = strategies.choose_strategy(result.main)
    assert not choice.chosen and choice.name == own.name
    assert choice.header() == f"strategy {own.name}: the file's own pipeline ({own.why})"


def test_recordings_of_compactscopes_agent_and_of_claude_code(tmp_path):
    from compactscope.core.live.recorder import RecordingWriter

    def record(path, source, meta, request, trace=None):
        with RecordingWriter(path, source=source, meta=meta) as rec:
            rec.call(request=request, response={"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
                     usage={"input_tokens": 10, "output_tokens": 2}, trace=trace)
        return load(str(path))

    req = {"model": "m", "messages": [{"role": "user", "content": "hello there"}]}
    assert strategies.own_strategy(record(tmp_path / "a.jsonl", "agent", {"strategy": "hermes"}, req)).name == "hermes"
    assert strategies.own_strategy(record(tmp_path / "b.jsonl", "agent", None, req)).name == "s08"
    traced = record(tmp_path / "c.jsonl", "proxy", None, req, trace={"strategy": "claude_code", "steps": []})
    assert strategies.own_strategy(traced).name == "claude_code"
    plain = record(tmp_path / "d.jsonl", "proxy", None, req)
    assert strategies.own_strategy(plain).name == "s08" and not strategies.own_strategy(plain).known
    cc = record(tmp_path / "e.jsonl", "proxy", None,
                dict(req, system=[{"type": "text", "text": "You are Claude Code, Anthropic's official CLI."}]))
    assert strategies.own_strategy(cc).name == "claude_code"


def test_a_chosen_strategy_is_said_and_warned_about(corpus):
    conv = load(str(corpus / CC)).main
    same = strategies.choose_strategy(conv, "claude_code")
    assert same.chosen and same.header().startswith("strategy claude_code: chosen with --strategy, also the file's")
    assert same.warning() == ""
    other = strategies.choose_strategy(conv, "s08")
    assert other.header() == "strategy s08: chosen with --strategy"
    assert "not this file's own pipeline" in other.warning() and "claude_code" in other.warning()
    # a file of no known agent: any strategy is a fair choice, nothing to warn about
    plain = load(str(corpus / "swe-agent/marshmallow-1867.function_calling_replace.traj.json")).main
    assert strategies.choose_strategy(plain, "hermes").warning() == ""
    assert strategies.choose_strategy(conv, "s08").to_json()["origin"] == "option"


@pytest.mark.parametrize("rel", [CC, "inspect_ai/react-compaction-trim.json",
                                 "hermes-agent/rotation/sessions/session_20261130_142405_9aacdb.json",
                                 "swe-agent/marshmallow-1867.function_calling_replace.traj.json"])
def test_every_command_runs_the_same_default_strategy(corpus, rel, capsys, tmp_path):
    path = str(corpus / rel)
    want = OWN[rel]
    run = _json(capsys, ["run", path, "--json", "--no-messages"])
    assert run["strategy"] == want and run["strategy_choice"]["origin"] == "file"
    replay = _json(capsys, ["replay", path, "--json", "--max-calls", "3"])
    assert replay["strategy"] == want and replay["strategy_choice"]["name"] == want
    check = _json(capsys, ["check", path, "--json", "--strategy", want])
    assert check["strategy"] == want and check["strategy_choice"]["warning"] is None
    out = tmp_path / "r.md"
    assert cli_main(["report", path, "-o", str(out)]) == 0
    said = capsys.readouterr().out
    assert f"strategy {want}: the file's own pipeline" in said
    assert f"strategy **{want.replace('_', chr(92) + '_')}** (the file's own pipeline" in out.read_text()


def test_text_headers_say_which_strategy_ran_and_warn_on_a_mismatch(corpus, capsys, tmp_path):
    path = str(corpus / CC)
    assert cli_main(["run", path]) == 0
    text = capsys.readouterr().out
    assert "strategy claude_code: the file's own pipeline (a Claude Code session)" in text
    assert "warning:" not in text
    assert cli_main(["replay", path, "--strategy", "s08", "--max-calls", "2"]) == 0
    text = capsys.readouterr().out
    assert "strategy s08: chosen with --strategy" in text
    assert "warning: s08 is not this file's own pipeline" in text
    assert cli_main(["check", path, "--strategy", "hermes"]) == 0
    assert "warning: hermes is not this file's own pipeline" in capsys.readouterr().out
    _json(capsys, ["run", path, "--strategy", "s08", "--json", "--no-messages"])
    out = tmp_path / "r.html"
    assert cli_main(["report", path, "-o", str(out), "--strategy", "s08"]) == 0
    assert "not this file&#x27;s own pipeline" in out.read_text() or "not this file's own pipeline" in out.read_text()


def test_json_output_warns_on_stderr(corpus, capsys):
    assert cli_main(["run", str(corpus / CC), "--strategy", "s08", "--json", "--no-messages"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out)["strategy_choice"]["warning"]
    assert "warning: s08 is not this file's own pipeline" in cap.err


# ------------------------------------------------------------------ the context default (finding 3)
def test_report_runs_over_the_context_run_takes(corpus, capsys, tmp_path):
    path = str(corpus / CC3)
    run = _json(capsys, ["run", path, "--json"])
    out = tmp_path / "r.md"
    assert cli_main(["report", path, "-o", str(out)]) == 0
    said = capsys.readouterr().out
    ctx = run["input"]["context"]
    assert ctx["segment"] == 2 and "segment 2 of 3" in said and "what the agent would send next" in said
    md = out.read_text()
    assert f"## The messages the pipeline ran over ({ctx['end'] - ctx['start']})" in md
    assert "never sent as one request" not in md
    # the same --call picks the same context in run and report (numbered over the whole history)
    run = _json(capsys, ["run", path, "--json", "--call", "40"])
    assert cli_main(["report", path, "-o", str(out), "--call", "40"]) == 0
    capsys.readouterr()
    assert f"## The messages the pipeline ran over ({run['input']['messages']})" in out.read_text()


def test_the_whole_history_only_when_asked_and_then_with_a_note(corpus, capsys, tmp_path):
    path = str(corpus / CC3)
    out = tmp_path / "r.html"
    assert cli_main(["report", path, "-o", str(out), "--segment", "all"]) == 0
    assert "note: this is the whole history" in capsys.readouterr().out
    html = out.read_text()
    assert '<p class="note" role="note"><b>Note:</b> this is the whole history: 3 contexts' in html
    assert "It was never sent as one request" in html
    assert cli_main(["run", path, "--segment", "all"]) == 0
    assert "note: this is the whole history" in capsys.readouterr().out
    assert cli_main(["run", path]) == 0
    assert "whole history" not in capsys.readouterr().out


# ------------------------------------------------------------------ one --compare syntax (finding 13)
def test_split_runs_reads_repeated_and_semicolon_separated_values():
    from compactscope.core.strategies.spec import parse_compare, split_runs
    assert split_runs(["s08;hermes", " cc=claude_code:buffer=1 ", ";"]) == ["s08", "hermes", "cc=claude_code:buffer=1"]
    assert split_runs("s08; hermes") == ["s08", "hermes"] and split_runs(None) == []
    assert [r[:2] for r in parse_compare(["s08;x=hermes:trigger=always"])] == [("s08", "s08"), ("x", "hermes")]


def test_replay_and_fleet_take_the_reports_compare_syntax(examples, capsys):
    path = str(examples / "long_session.json")
    one = _json(capsys, ["replay", path, "--json", "--compare", "s08:max_messages=20;hermes"])
    two = _json(capsys, ["replay", path, "--json", "--compare", "s08:max_messages=20", "--compare", "hermes"])
    assert [r["label"] for r in one["comparison"]][1:] == ["s08:max_messages=20", "hermes"]
    assert one["comparison"] == two["comparison"]
    from compactscope.core.fleet.config import make_config
    cfg = make_config("s08", compare=["s08:max_messages=20;hermes"])
    assert [(r.label, r.strategy) for r in cfg.compare] == [("s08:max_messages=20", "s08"), ("hermes", "hermes")]
    assert cli_main(["replay", path, "--compare", "s08;nosuch"]) == 2
    assert "unknown strategy 'nosuch'" in capsys.readouterr().err


def test_the_window_session_takes_repeated_compare_values():
    from compactscope.core.session.model import Session
    s = Session(strategy="s08")
    s.replay.set_compare_spec(["hermes;x=s08:max_messages=5", "claude_code"], run=False)
    assert sorted(s.replay.compare_names) == ["claude_code", "hermes"] and s.replay.compare_extra == "x=s08:max_messages=5"


# ------------------------------------------------------------------ the window's default strategy (finding 12)
def test_the_window_opens_a_file_with_its_own_pipeline(corpus, examples):
    from compactscope.core.session.model import Session
    s = Session(strategy="s08")
    assert s.source.open(str(corpus / CC))
    assert s.setup.strategy.name == "claude_code" and not s.setup.strategy_choice.chosen
    assert "strategy claude_code (the file's own pipeline)" in s.view.status_text()
    assert s.setup.inferred is not None and s.setup.params["cap_reserve"] == s.setup.inferred.params["cap_reserve"]
    assert s.source.open(str(corpus / "hermes-agent/rotation/state.db"))        # each file its own, until one is chosen
    assert s.setup.strategy.name == "hermes" and not s.setup.strategy_choice.chosen
    assert s.source.open(str(examples / "long_session.json"))
    assert s.setup.strategy.name == "s08" and "strategy s08 (the file's own pipeline)" in s.view.status_text()
    assert s.source.open(str(corpus / CC)) and s.setup.strategy.name == "claude_code"
    s.setup.set_strategy("s08")                                   # the user's choice: it stays, with a warning
    assert s.setup.strategy_choice.chosen and s.setup.strategy_choice.warning()
    assert "s08 (chosen in the window; \u26a0 the file's own pipeline is claude_code)" in s.view.status_text()
    assert s.source.open(str(corpus / "hermes-agent/rotation/state.db")) and s.setup.strategy.name == "s08"
    assert "the file's own pipeline is hermes" in s.view.status_text()
    # a snapshot (the window rebuilt for another language) keeps whether the strategy was chosen
    fresh = Session()
    assert fresh.source.open(str(corpus / CC)) and not fresh.setup.strategy_choice.chosen
    again = Session()
    assert again.restore(fresh.snapshot()) and again.setup.strategy.name == "claude_code"
    assert not again.setup.strategy_choice.chosen and "(the file's own pipeline)" in again.view.status_text()


def test_a_pinned_strategy_and_a_snapshot_keep_theirs(corpus):
    from compactscope.core.session.model import Session
    s = Session()
    assert s.setup.pin_strategy("hermes")                          # gui --strategy hermes
    assert s.source.open(str(corpus / CC)) and s.setup.strategy.name == "hermes"
    assert "hermes (chosen with --strategy; \u26a0 the file's own pipeline is claude_code)" in s.view.status_text()
    snap = s.snapshot()
    other = Session()
    assert other.restore(snap) and other.setup.strategy.name == "hermes"
    # gui --set before the file opened: the file's own pipeline takes the parameters it has
    t = Session(strategy="s08")
    t.setup.pinned.update({"buffer": 1000})
    assert t.source.open(str(corpus / CC)) and t.setup.strategy.name == "claude_code" and t.setup.params["buffer"] == 1000


def test_gui_set_is_checked_against_the_pipeline_the_file_opens_with(corpus, tmp_path, isolated_settings, capsys):
    from compactscope.app import gui
    shot = str(tmp_path / "x.png")
    assert gui.main([str(corpus / CC), "--set", "context_limit=5", "--screenshot", shot, "--size", "640x480"]) == 2
    err = capsys.readouterr().err
    assert "strategy claude_code has no parameter 'context_limit'" in err and "the file's own pipeline" in err
    assert gui.main([str(corpus / CC), "--set", "buffer=1000", "--screenshot", shot, "--size", "640x480"]) == 0
    assert gui.main([str(corpus / CC), "--strategy", "s08", "--set", "context_limit=5", "--screenshot", shot,
                     "--size", "640x480"]) == 0
