"""The text commands in Simplified Chinese (--lang zh_CN, or the locale): the seed's terms for the layers, the
offline summary's own words, loader problems, reports and lesson checks; JSON and identifiers unchanged."""
from __future__ import annotations

import json
import re

import pytest

from compactscope.app import cli_lang
from compactscope.app.cli import main
from compactscope.core.i18n import catalog as i18n

HAN = re.compile(r"[\u4e00-\u9fff]")
SEED_TERMS = ("L3 大工具结果预算", "L1 裁剪中间历史", "L2 压缩旧工具结果", "L4 LLM 摘要")


def run_cli(capsys, *argv):
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def english_lines(text: str) -> list[str]:
    """Lines that read as English prose (three words in a row, no Chinese)."""
    return [line for line in text.splitlines()
            if not HAN.search(line) and re.search(r"\b[a-z]{2,} [a-z]{2,} [a-z]{2,}\b", line)]


def test_run_speaks_chinese_with_the_seed_terms(capsys, examples, tmp_path):
    rc, out, err = run_cli(capsys, "run", str(examples / "long_session.json"), "--lang", "zh_CN",
                           "--workdir", str(tmp_path))
    assert rc == 0, err
    for term in SEED_TERMS:
        assert term in out
    for name in ("tool_result_budget", "snip_compact", "micro_compact", "compact_history"):
        assert re.search(rf"^{name}\s", out, re.M)            # the layer's name (what --order takes) stays
    assert "层" in out and "发生了什么" in out and "最后一层之后的检查结果：0 条" in out
    assert english_lines(out) == []
    assert i18n.language() == "en"                          # the command's language ends with it


def test_the_locale_chooses_the_language(capsys, examples, tmp_path, monkeypatch):
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    monkeypatch.delenv("LC_ALL", raising=False)
    monkeypatch.delenv("LC_MESSAGES", raising=False)
    rc, out, _ = run_cli(capsys, "check", str(examples / "long_session.json"))
    assert rc == 0 and "条消息" in out and english_lines(out) == []
    monkeypatch.setenv("LC_ALL", "C")                       # LC_ALL wins over LANG, as for gettext
    rc, out, _ = run_cli(capsys, "check", str(examples / "long_session.json"))
    assert rc == 0 and "messages" in out and not HAN.search(out)
    assert cli_lang.system_language({"LANG": "zh_TW.UTF-8"}) == "zh_CN"
    assert cli_lang.system_language({"LANG": "fr_FR.UTF-8"}) == "en"
    assert cli_lang.system_language({}) == "en"


def test_json_keeps_its_keys_and_values(capsys, examples, tmp_path):
    args = ("run", str(examples / "long_session.json"), "--json", "--no-messages", "--workdir", str(tmp_path),
            "--summarizer", "fixed:THE SUMMARY")
    rc, en, _ = run_cli(capsys, *args)
    rc2, zh, _ = run_cli(capsys, *args, "--lang", "zh_CN")
    assert rc == rc2 == 0
    a, b = json.loads(en), json.loads(zh)
    assert a["steps"] and [s["layer"] for s in a["steps"]] == [s["layer"] for s in b["steps"]]
    assert set(a) == set(b) and a["params"] == b["params"]
    assert [s["explanation"] if "explanation" in s else s.get("explain") for s in a["steps"]] == \
        [s["explanation"] if "explanation" in s else s.get("explain") for s in b["steps"]]


@pytest.mark.parametrize("cmd", [["info"], ["replay"], ["check"], ["strategies"], ["lessons"], ["cache"]])
def test_every_text_command_takes_lang(capsys, examples, tmp_path, cmd, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    argv = cmd + ([str(examples / "cc_real_compaction.jsonl")] if cmd[0] in ("info", "replay", "check") else [])
    rc, out, err = run_cli(capsys, *argv, "--lang", "zh_CN")
    assert rc in (0, 1), err
    assert HAN.search(out), out[:500]


def test_a_wrong_lang_is_a_usage_error(capsys, examples):
    with pytest.raises(SystemExit) as e:
        main(["run", str(examples / "long_session.json"), "--lang", "klingon"])
    assert e.value.code == 2 and "--lang is one of en, zh_CN" in capsys.readouterr().err


def test_loader_problems_in_chinese(capsys, tmp_path):
    p = tmp_path / "broken.json"
    p.write_text('[{"role":"user","content":"a"}, 5, {"content":"x"}, {"role":"assistant","content":"b"}]')
    rc, out, err = run_cli(capsys, "info", str(p), "--lang", "zh_CN")
    assert rc == 0
    assert "第 1 条消息是一个数字，不是消息对象：已跳过" in out and '第 2 条消息没有 "role" 字符串：已跳过' in out
    bad = tmp_path / "unknown.json"
    bad.write_text('{"hello": 1}')
    rc, out, err = run_cli(capsys, "run", str(bad), "--lang", "zh_CN")
    assert rc == 2 and "不是 Compactscope 认识的格式" in err and str(bad) in err


def test_the_offline_summary_is_written_in_the_language_of_the_run():
    from compactscope.core.summarizers.base import SummaryRequest
    from compactscope.core.summarizers.offline import OfflineSummarizer
    msgs = [{"role": "user", "content": "Fix the retry in client.py"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read_file",
                                               "input": {"path": "src/client.py"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "boom",
                                          "is_error": True}]},
            {"role": "assistant", "content": "Done."}]
    req = SummaryRequest(prompt="", messages=tuple(msgs))
    en = OfflineSummarizer().summarize(req).text
    prev = i18n.language()
    i18n.set_language("zh_CN")
    try:
        zh = OfflineSummarizer().summarize(req).text
    finally:
        i18n.set_language(prev)
    assert en.startswith("(Offline summary") and "Current goal: Fix the retry in client.py" in en
    assert zh.startswith("（离线摘要") and "当前目标：Fix the retry in client.py" in zh   # the request as it is
    assert "涉及的文件：" in zh and "- src/client.py（读取）" not in zh and "- src/client.py (读取)" in zh
    assert "调用的工具：read_file x1" in zh and "错误（1 个）：" in zh
    assert not re.search(r"Current goal|Files touched|Tools called|Errors|Last assistant", zh)


def test_the_report_in_chinese(capsys, examples, tmp_path):
    out = tmp_path / "r.html"
    rc, said, err = run_cli(capsys, "report", str(examples / "long_session.json"), "-o", str(out), "--lang", "zh_CN")
    assert rc == 0, err
    page = out.read_text(encoding="utf-8")
    assert '<html lang="zh-CN">' in page
    for heading in ("逐层查看", "API 检查结果", "流水线处理的消息（59 条）", "1. L3 大工具结果预算"):
        assert heading in page
    assert "Our HTTP client gives up on the first timeout" in page         # the transcript as it is
    md = tmp_path / "r.md"
    rc, _, err = run_cli(capsys, "report", str(examples / "long_session.json"), "-o", str(md), "--lang", "zh_CN")
    assert rc == 0, err
    text = md.read_text(encoding="utf-8")
    assert "## 逐层查看" in text and "```" in text
    rc, _, _ = run_cli(capsys, "report", str(examples / "long_session.json"), "-o", str(tmp_path / "e.html"))
    assert '<html lang="en">' in (tmp_path / "e.html").read_text(encoding="utf-8")


def test_a_lesson_check_in_chinese(capsys):
    rc, out, err = run_cli(capsys, "lesson", "s08-pipeline", "--check", "--lang", "zh_CN")
    assert rc == 0, out + err
    assert "第 2 张幻灯片：L3 大工具结果预算：通过" in out and "讲解中说到的每个数值都成立" in err


def test_translated_lines_keep_their_lead():
    assert cli_lang.translate_line("  - snipped 2 messages, 4..5", "zh_CN") == "  - 裁掉 2 条消息，第 4..5 条"
    assert cli_lang.translate_line("compactscope: warning: something unknown", "zh_CN") == \
        "compactscope: 警告：something unknown"
    assert cli_lang.width("大小") == 4 and cli_lang.pad("层", 4) == "层  "


def test_a_report_on_stdout_is_the_document_itself(capsys, examples):
    rc, out, err = run_cli(capsys, "report", str(examples / "short_session.json"), "-o", "-", "--lang", "zh_CN")
    assert rc == 0, err
    assert out.startswith("<!DOCTYPE html>") and '<html lang="zh-CN">' in out and "逐层查看" in out
    assert not isinstance(__import__("sys").stdout, cli_lang.TranslatingStream)
