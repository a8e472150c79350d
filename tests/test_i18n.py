"""Simplified Chinese: the window's catalogue (Qt Linguist .ts, compiled .qm), the core's Qt-free catalogue of
what the layers and explanations say, the bundled font, and the window in Chinese."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from compactscope.core.i18n import catalog as i18n

ROOT = Path(__file__).resolve().parent.parent
I18N = ROOT / "assets" / "i18n"
TS = I18N / "compactscope_zh_CN.ts"
QM = I18N / "compactscope_zh_CN.qm"
FONT = ROOT / "assets" / "fonts" / "NotoSansCJKsc-Regular-subset.otf"
CATALOGUE = ROOT / "core" / "i18n" / "i18n_zh_CN.json"
HAN = re.compile(r"[\u4e00-\u9fff]")


def qt_tool(name: str) -> str:
    exe = shutil.which(name) or str(Path(sys.executable).with_name(name))
    if not Path(exe).exists():
        pytest.skip(f"{name} is not installed (it comes with PySide6)")
    return exe


def messages(ts: Path) -> list:
    return list(ET.parse(ts).getroot().iter("message"))


def test_zh_cn_catalogue_has_no_unfinished_string():
    msgs = messages(TS)
    assert len(msgs) > 300
    bad = [m.findtext("source") for m in msgs
           if m.find("translation").get("type") in ("unfinished", "vanished", "obsolete")
           or not (m.findtext("translation") or "").strip()]
    assert bad == []
    # a translation uses only its source's fields ({n}; it may drop an English plural's) and keeps its accelerator
    for m in msgs:
        src, dst = m.findtext("source"), m.findtext("translation")
        assert set(re.findall(r"\{[^{}]*\}", dst)) <= set(re.findall(r"\{[^{}]*\}", src)), src
        if re.search(r"&\w", src):
            assert re.search(r"&\w", dst), src


def test_every_window_string_is_in_the_catalogue(tmp_path):
    """lupdate over the sources finds nothing the .ts lacks (a new tr() string without a translation fails)."""
    copy = tmp_path / "check.ts"
    shutil.copy(TS, copy)
    sources = sorted(str(p) for d in ("app", "widgets") for p in (ROOT / d).glob("*.py"))
    subprocess.run([qt_tool("pyside6-lupdate"), *sources, "-target-language", "zh_CN", "-no-obsolete",
                    "-locations", "none", "-ts", str(copy)], check=True, capture_output=True, cwd=ROOT)
    new = [m.findtext("source") for m in messages(copy) if m.find("translation").get("type") == "unfinished"]
    assert new == [], "strings without a translation (run python assets/i18n/fill_ts.py and translate them)"


def test_shipped_qm_is_compiled_from_the_ts(tmp_path):
    out = tmp_path / "fresh.qm"
    subprocess.run([qt_tool("pyside6-lrelease"), str(TS), "-qm", str(out)], check=True, capture_output=True)
    assert out.read_bytes() == QM.read_bytes(), "the .qm is older than the .ts: run python assets/i18n/fill_ts.py"


def test_core_catalogue_translates_everything_the_core_shows(tmp_path):
    from core_texts import gather
    seen = gather(tmp_path)
    assert len(seen) > 500
    left = {part: where for text, where in seen.items() for part in i18n.untranslated(text)}
    assert left == {}, f"{len(left)} core text(s) without a translation in core/i18n/i18n_zh_CN.json"


def test_core_catalogue_translates_what_the_cross_checks_answer_without_their_reference():
    """Where hermes-agent or inspect-ai is not installed, the check says so: translated too (the gathering
    above sees only the answers of the environment it runs in)."""
    from compactscope.core.oracles import hermes_agent as hermes_oracle, inspect_ai as inspect_oracle
    for text in (*hermes_oracle.NOT_COMPARED, *inspect_oracle.NOT_COMPARED):
        assert i18n.untranslated(text) == [], text


def test_core_catalogue_entries():
    cat = json.loads(CATALOGUE.read_text(encoding="utf-8"))
    field = re.compile(r"\{(\w+)(?::\w+)?\}")
    for src, dst in cat.items():
        assert sorted(field.findall(src)) == sorted(re.findall(r"\{(\w+)\}", dst)), src
    words = [dst for src, dst in cat.items() if " " in src and not src.startswith(("L", "{"))]
    assert sum(bool(HAN.search(d)) for d in words) > 0.9 * len(words)


def test_translation_keeps_the_course_placeholders():
    from compactscope.core.layers.s08 import MICRO_PLACEHOLDER
    t = i18n.translate("snipped 2 messages, 4..5", "zh_CN")
    assert t == "裁掉 2 条消息，第 4..5 条"
    readme = ("The README code inserts '[snipped 0 messages from conversation middle]' although it cuts nothing "
              "(12 \u2192 13 messages, 1,166 \u2192 1,244 chars: the size grows). It lacks the overlap check; the course "
              "code stops at head_end 4 >= tail_start 4 and returns the list unchanged.")
    zh = i18n.translate(readme, "zh_CN")
    assert "'[snipped 0 messages from conversation middle]'" in zh and HAN.search(zh) and "README" in zh
    assert i18n.translate(MICRO_PLACEHOLDER, "zh_CN") == MICRO_PLACEHOLDER
    nested = i18n.translate("no change: head_end 4 >= tail_start 4: head and tail overlap, nothing to snip", "zh_CN")
    assert nested == "没有变化：head_end 4 >= tail_start 4：头部和尾部重叠，没有可裁剪的内容"
    assert i18n.translate("something the catalogue does not know", "zh_CN") == "something the catalogue does not know"
    assert i18n.translate("snipped 2 messages, 4..5", "en") == "snipped 2 messages, 4..5"


def chinese_characters() -> set[str]:
    chars = set()
    for pattern in ("assets/i18n/*.ts", "core/i18n/i18n_*.json", "assets/lessons/*.json"):
        for p in ROOT.glob(pattern):
            chars |= set(HAN.findall(p.read_text(encoding="utf-8")))
    return chars


def test_bundled_font_draws_every_chinese_character_we_use(qapp):
    from PySide6.QtGui import QRawFont
    assert FONT.is_file() and (ROOT / "assets" / "fonts" / "OFL.txt").is_file()
    assert FONT.stat().st_size < 2_500_000
    raw = QRawFont(str(FONT), 12)
    assert raw.isValid()
    chars = chinese_characters()
    assert len(chars) > 300
    missing = sorted(c for c in chars if not raw.supportsCharacter(ord(c)))
    assert missing == [], "run python assets/fonts/make_subset.py"


def test_a_blocks_size_is_said_in_the_language_and_its_content_is_not(qapp):
    """A block's line in the message list and the diff: "651 chars · <content>" says its size in Chinese, the
    content as is;
    and Claude Code's "auto-compact is off" note is in the catalogue."""
    from compactscope.widgets.i18n import ct_summary as _said
    prev = i18n.language()
    i18n.set_language("zh_CN")
    try:
        assert _said("1,234 chars \u00b7 def f(x): 5 chars") == "1,234 个字符 \u00b7 def f(x): 5 chars"
        assert _said("Refactor the chars") == "Refactor the chars"
        assert i18n.translate("no change: auto-compact is off") == "没有变化：auto-compact 已关闭"
        i18n.set_language("en")
        assert _said("1,234 chars \u00b7 x") == "1,234 chars \u00b7 x"
    finally:
        i18n.set_language(prev)
