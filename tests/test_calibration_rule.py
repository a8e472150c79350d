"""The window's timeline and ``compactscope replay`` calibrate by one rule (qa #17): the runs compared decide
together (on when the recording has usage and one of them counts tokens), so the same runs give the same
figures in both; and both say which calibration they used."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from compactscope.core.replay import replay
from compactscope.core.replay.calibration import calibration_words, default_calibration
from compactscope.core.session.model import Session
from compactscope.core.files.workspace import Workspace

B0 = ("entireio-cli", "b0-2936744f3b-0-full.jsonl")


def _cli_replay(path, tmp_path, *args):
    out = subprocess.run([sys.executable, "-m", "compactscope.app.cli", "replay", str(path), "--json",
                          "--workdir", str(tmp_path / "cli"), *args], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _window_runs(path, tmp_path, strategy, compare):
    s = Session(Workspace(tmp_path / "win"), strategy=strategy)
    s.setup.pin_strategy()                   # as gui --strategy does: the file opens with it, not with its own
    assert s.source.open(str(path))
    s.replay.set_compare(compare, "", run=False)
    s.view.set_tab("timeline")              # the timeline's replay runs when it is shown (inline in a Session)
    assert s.replay.replay_results
    return s.replay.replay_results


@pytest.mark.parametrize("compare", [[], ["claude_code"]])
def test_window_and_cli_replay_agree(corpus, tmp_path, compare):
    path = corpus.joinpath(*B0)
    runs = _window_runs(path, tmp_path, "s08", compare)
    cli = _cli_replay(path, tmp_path, "--strategy", "s08", *[a for c in compare for a in ("--compare", c)])
    main = runs[0]
    assert (main.calibration is None) == (cli["calibration"] is None) == (not compare)
    for key in ("peak_tokens", "total_input_tokens", "compactions"):
        assert main.totals()[key] == cli["totals"][key], key
    if compare:
        assert [r["total_input_tokens"] for r in cli["comparison"]] == [r.totals()["total_input_tokens"] for r in runs]


def test_the_rule_and_its_words(corpus, tmp_path):
    from compactscope.core.loaders import load
    conv = load(corpus.joinpath(*B0)).main
    assert not default_calibration(conv, ["s08"]) and default_calibration(conv, ["s08", "claude_code"])
    s08 = replay(conv, "s08", keep_inputs=False, workspace=Workspace(tmp_path / "a"))
    assert calibration_words(s08) == "not calibrated: s08's threshold counts chars, not tokens"
    hermes = replay(conv, "hermes", keep_inputs=False, workspace=Workspace(tmp_path / "b"))
    assert calibration_words(hermes).startswith(f"calibrated: +{hermes.calibration['fixed']:,} tokens")
    cc = replay(conv, "claude_code", keep_inputs=False, workspace=Workspace(tmp_path / "b"))
    assert "reads the recorded usage itself" in calibration_words(cc)
    inspect = replay(load(corpus / "inspect_ai" / "react-compaction-trim.json").main, "inspect_trim",
                     keep_inputs=False)
    assert calibration_words(inspect).startswith("not calibrated: Inspect's estimate") and "reads the recorded usage" \
        in calibration_words(inspect)
    plain = replay(load(corpus / "swe-agent" / "function_calling_simple.traj.json").main, "claude_code",
                   keep_inputs=False, workspace=Workspace(tmp_path / "c"))
    assert calibration_words(plain) == "not calibrated: the recording holds no usage to calibrate on"


def test_the_timeline_says_which_calibration(qtbot, corpus, tmp_path):
    pytest.importorskip("pyqtgraph")
    from compactscope.core.loaders import load
    from compactscope.widgets.timeline import TimelineWidget
    conv = load(corpus.joinpath(*B0)).main
    w = TimelineWidget()
    qtbot.addWidget(w)
    w.set_replay(replay(conv, "s08", keep_inputs=False, workspace=Workspace(tmp_path)))
    assert "not calibrated: s08's threshold counts chars" in w.info.text()
    w.set_replay(replay(conv, "hermes", keep_inputs=False, workspace=Workspace(tmp_path)))
    assert "calibrated: +" in w.info.text()
