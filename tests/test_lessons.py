"""Lessons (core.lessons, compactscope lessons / lesson): every bundled lesson runs headless and its narrated
values hold in both languages; a broken lesson file says what is wrong and where."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from compactscope.core.session import lesson as lessons
from compactscope.core.files.workspace import Workspace

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = sorted(p.stem for p in (ROOT / "assets" / "lessons").glob("*.json"))
REQUIRED = {"seed000-snip", "readme-variant", "layer-order", "s08-pipeline", "hermes-boundaries",
            "cc-autocompact", "real-compaction"}


def test_the_bundled_lessons():
    assert REQUIRED <= set(BUNDLED)
    assert [lesson.name for lesson in lessons.available()][0] == "seed000-snip"     # listed in class order


@pytest.mark.parametrize("name", BUNDLED)
def test_lesson_runs_headless_and_its_narration_holds(name, tmp_path):
    lesson = lessons.load(name)
    for slide, checks, err in lessons.run(lesson, Workspace(tmp_path)):
        where = f"{name} slide {slide.index + 1}"
        assert err is None, f"{where}: {err}"
        assert slide.expect, f"{where} states no value to check"
        bad = [(c.probe, c.expected, c.actual, c.error) for c in checks if not c.ok]
        assert not bad, f"{where}: {bad}"
        for lang in lessons.LANGS:
            assert slide.narration_in(lang).strip() and slide.title_in(lang).strip(), f"{where}: no {lang} text"
            assert lessons.unnarrated(slide, lang) == [], f"{where} ({lang})"
        zh = slide.narration_in("zh_CN")
        assert any("\u4e00" <= ch <= "\u9fff" for ch in zh), f"{where}: the zh_CN narration is not Chinese"


def test_the_narrated_facts_of_the_issue(tmp_path):
    """seed 000's head_end/tail_start, the README variant's duplicated ids, the lost result."""
    s = {}
    for name in ("seed000-snip", "readme-variant", "layer-order"):
        lesson = lessons.load(name)
        s[name] = {k: c.actual for slide, checks, _ in lessons.run(lesson, Workspace(tmp_path / name))
                   for c in checks for k in [c.probe] if c.ok}
    snip = s["seed000-snip"]
    assert (snip["step.snip_compact.vars.head_end_initial"], snip["step.snip_compact.vars.head_end_after_guard"]) == (3, 4)
    assert (snip["step.snip_compact.vars.tail_start_initial"], snip["step.snip_compact.vars.tail_start_after_guard"]) == (7, 6)
    assert s["readme-variant"]["step.snip_compact.duplicated"] == [5]
    assert s["layer-order"]["lost.0.tool_id"] == "toolu_04102b2f6d0a" and s["layer-order"]["lost.count"] == 1


def test_probe_and_check_fail_when_the_narration_is_wrong(tmp_path):
    lesson = lessons.load("seed000-snip")
    slide = lesson.slides[2]
    wrong = lessons.Slide(slide.index, slide.title, slide.narration, slide.state,
                          {"step.snip_compact.vars.head_end_after_guard": 5, "step.nope.vars.x": 1})
    from compactscope.core.session.model import Session
    session = Session(Workspace(tmp_path))
    assert lessons.play(session, lesson, wrong)
    checks = {c.probe: c for c in lessons.check(session, wrong)}
    assert not checks["step.snip_compact.vars.head_end_after_guard"].ok
    assert checks["step.snip_compact.vars.head_end_after_guard"].actual == 4
    assert not checks["step.nope.vars.x"].ok and "no step 'nope'" in checks["step.nope.vars.x"].error
    assert lessons.unnarrated(wrong, "en") == ["step.snip_compact.vars.head_end_after_guard = 5"]


@pytest.mark.parametrize("text,needle", [
    ("{", "line 1: not JSON"),
    ('{"slides": []}', "'slides' must be a non-empty list"),
    ('{"slides": [{"narration": "x"}]}', "slide 1: no 'file' to show"),
    ('{"state": {"file": "a.json", "colour": 1}, "slides": [{"narration": "x"}]}', "unknown state keys colour"),
    ('{"state": {"file": "a.json"}, "slides": [{"narration": "x", "state": {"tab": "nope"}}]}',
     "slide 1: tab is diff, boundary or timeline"),
    ('{"state": {"file": "a.json"}, "slides": [{"title": "t"}]}', "slide 1 has no narration"),
    ('{"format": 9, "slides": [{"narration": "x"}]}', "lesson format 9"),
])
def test_a_broken_lesson_says_what_and_where(tmp_path, text, needle):
    p = tmp_path / "broken.json"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(lessons.LessonError) as e:
        lessons.load(str(p))
    assert str(p) in str(e.value) and needle in str(e.value)


def test_slides_inherit_state():
    lesson = lessons.load("readme-variant")
    a, b, c = lesson.slides[:3]
    assert a.state["tab"] == "boundary" and b.state["tab"] == "boundary"       # inherited
    assert b.state["params"] == {"max_messages": 11} and c.state["variant"] == "readme"
    assert lesson.slides[3].state["variant"] is None and lesson.slides[3].state["file"].endswith("readme_parallel.json")
    with pytest.raises(lessons.LessonError, match="slides 1..5, not 9"):
        lesson.slide(9)


def run_cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "compactscope", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def test_cli_lists_and_checks():
    r = run_cli("lessons")
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert [lesson.split()[0] for lesson in lines] == [lesson.name for lesson in lessons.available()]
    assert lines[0].startswith("seed000-snip ") and "seed 000" in lines[0]
    zh = run_cli("lessons", "--lang", "zh_CN")
    assert "种子 000" in zh.stdout
    ok = run_cli("lesson", "layer-order", "--check", "--json")
    assert ok.returncode == 0 and json.loads(ok.stdout)["ok"] is True
    missing = run_cli("lesson", "no-such-lesson", "--check")
    assert missing.returncode == 2 and "no lesson 'no-such-lesson'" in missing.stderr and "seed000-snip" in missing.stderr


def test_cli_check_fails_on_a_wrong_value(tmp_path):
    src = json.loads((ROOT / "assets" / "lessons" / "seed000-snip.json").read_text(encoding="utf-8"))
    src["state"]["file"] = str(ROOT / "assets" / "examples" / "seed000_snip.json")
    src["slides"] = src["slides"][2:3]
    src["slides"][0]["expect"] = {"step.snip_compact.vars.head_end_after_guard": 5}
    p = tmp_path / "wrong.json"
    p.write_text(json.dumps(src, ensure_ascii=False), encoding="utf-8")
    r = run_cli("lesson", str(p), "--check")
    assert r.returncode == 1 and "narrated 5, the run says 4" in r.stdout
