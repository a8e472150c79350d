"""The window on a real X server (Xvfb, started here) the size of a classroom projector, with no window manager:
it opens inside the screen without --size, presenter mode (F11) gives the message list and the before/after the
room, nothing is clipped, the geometry is remembered per screen, and in zh_CN every text the window shows is
Chinese (identifiers aside).

Each case starts ``compactscope`` in a subprocess with DISPLAY set and QT_QPA_PLATFORM=xcb and the hidden
``--probe OUT.json`` option (app/probe.py): the window reports its geometry, what it shows and every text, and
exits. Skips when Xvfb or Qt's X11 libraries are not installed (.ci/run installs them)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "assets" / "examples"
SIZES = ["1024x768", "1280x800"]


class XServer:
    """``Xvfb -screen 0 WxHx24`` on a display number it picks itself (-displayfd: never one in use)."""

    def __init__(self, size: str):
        self.size = size
        r, w = os.pipe()
        self.proc = subprocess.Popen(["Xvfb", "-displayfd", str(w), "-screen", "0", f"{size}x24", "-nolisten", "tcp"],
                                     pass_fds=(w,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(w)
        with os.fdopen(r) as f:
            number = f.readline().strip()
        if not number.isdigit():
            self.stop()
            raise RuntimeError(f"Xvfb did not start (it said {number!r})")
        self.display = f":{number}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def _need_x11() -> None:
    if shutil.which("Xvfb") is None:
        pytest.skip("Xvfb is not installed (apt-get install xvfb; .ci/run does)")
    from ctypes.util import find_library
    missing = [n for n in ("xcb-cursor", "xcb-icccm", "xkbcommon-x11") if find_library(n) is None]
    if missing:
        pytest.skip(f"Qt's xcb platform needs lib{', lib'.join(missing)} (apt-get install libxcb-cursor0 ...)")


@pytest.fixture(params=SIZES)
def xserver(request):
    _need_x11()
    x = XServer(request.param)
    yield x
    x.stop()


def start_x(size: str) -> XServer:
    _need_x11()
    return XServer(size)


def probe(x: XServer, tmp_path: Path, *args: str, name: str = "probe") -> dict:
    """Start the window on ``x`` with ``args``; what it reports (app/probe.py)."""
    out = tmp_path / f"{name}.json"
    env = {**os.environ, "DISPLAY": x.display, "QT_QPA_PLATFORM": "xcb", "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
           "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("WAYLAND_DISPLAY", None)
    r = subprocess.run([sys.executable, "-m", "compactscope", *args, "--probe", str(out)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(out.read_text(encoding="utf-8"))


def inside(frame: list, avail: list) -> bool:
    x, y, w, h = frame
    ax, ay, aw, ah = avail
    return ax <= x and ay <= y and x + w <= ax + aw and y + h <= ay + ah


def test_the_window_opens_inside_the_screen(xserver, tmp_path):
    p = probe(xserver, tmp_path, str(EXAMPLES / "long_session.json"), "--step", "1", "--lang", "en")
    w, h = (int(v) for v in xserver.size.split("x"))
    assert p["platform"] == "xcb" and p["available"][2:] == [w, h]
    assert inside(p["frame"], p["available"]), (p["frame"], p["available"])
    assert p["frame"][2] >= w * 0.9 and p["frame"][3] >= h * 0.9        # and takes the room there is
    assert p["status_in_sight"] and p["clipped"] == []
    assert p["tabs"][:3] == ["Before / after", "Snip boundary", "Timeline"]


def test_presenter_mode_gives_the_lists_the_room(xserver, tmp_path):
    p = probe(xserver, tmp_path, str(EXAMPLES / "long_session.json"), "--step", "2", "--presenter", "--lang", "en")
    assert p["presenter"] and inside(p["frame"], p["available"])
    assert p["frame"][2:] == p["available"][2:]                         # the whole screen
    assert p["whole_messages"] >= 4, p["whole_messages"]                 # several messages, not one or two
    assert p["diff_in_sight"] and min(p["diff_columns"]) >= 250, p["diff_columns"]
    # the inspector, the chart and the findings are tabs now; every text grew, the layer buttons too
    assert p["tabs"][3:] == ["Inspector", "Chart", "Findings"]
    assert p["stepper_font"] == [p["font"]] and p["font"] >= 12
    assert p["clipped"] == [], p["clipped"]


def test_the_geometry_is_remembered_per_screen(tmp_path):
    small = start_x("1024x768")
    try:
        first = probe(small, tmp_path, "--size", "900x640", name="first")
        again = probe(small, tmp_path, name="again")         # no --size: what this screen had
    finally:
        small.stop()
    assert first["frame"][2:] == [900, 640] and again["frame"][2:] == [900, 640]
    big = start_x("1280x800")
    try:
        other = probe(big, tmp_path, name="other")            # another screen: its own room, not 900x640
    finally:
        big.stop()
    assert other["frame"][2:] == [1280, 800]
    huge = start_x("1024x768")
    try:
        asked = probe(huge, tmp_path, "--size", "1600x1200", name="asked")     # never larger than the screen
    finally:
        huge.stop()
    assert asked["frame"][2:] == [1024, 768]


# ------------------------------------------------------------------ every text in Chinese
HAN = re.compile(r"[\u4e00-\u9fff]")
WORD = re.compile(r"[A-Za-z][\w'\-]*[A-Za-z0-9_]")
NAMES = set("""Compactscope Claude Code Hermes Inspect AI OpenAI Anthropic JSON JSONL API LLM README token tokens
Python PNG HTML Markdown SVG Parquet Gemini Ctrl Shift Enter Esc Alt PageUp PageDown Home End Tab Space MoA CLI
English ContextCompressor CompactionEdit CompactionTrim CompactionSummary agent user assistant system tool text
thinking image len str messages offline anthropic fixed chars tiktoken preTokens TEXT MODEL""".split())


def identifiers() -> set[str]:
    """Words that are names, not prose: strategies, their parameters, layers and variants, block types, lessons."""
    from compactscope.core.session import lesson as lessons
    from compactscope.core import strategies
    out = set(NAMES)
    for name in strategies.available():
        st = strategies.get(name)
        out |= {name, st.name}
        out |= {p.name for p in st.params}
        out |= {la.name for la in st.layers} | {v.name for v in st.variants}
        out |= {str(c) for p in st.params for c in (getattr(p, "choices", None) or ())}
    out |= {le.name for le in lessons.available()}
    return out


def titles() -> list[str]:
    """The examples' conversation titles (their first user message): the transcript's words, shown as they are."""
    from compactscope.core.loaders import load
    out = []
    for p in EXAMPLES.glob("*.json*"):
        out += [c.title for c in load(str(p)).conversations if len(c.title or "") >= 15]
    return out


def strip_titles(text: str, known: list[str]) -> str:
    """``text`` without the parts that are a title or the start of one (a box elides it with "…")."""
    for t in known:
        i = text.find(t[:15])
        while i >= 0:
            j = i
            while j < len(text) and j - i < len(t) and text[j] == t[j - i]:
                j += 1
            text = text[:i] + " " + text[j:]
            i = text.find(t[:15])
    return text


def untranslated(text: str, names: set) -> bool:
    """English words left in a text: any in a text without Chinese; three in a row in a text with some. A
    summarizer spec (fixed:TEXT) is an identifier."""
    if re.match(r"(fixed|anthropic):", text):
        return False
    t = re.sub(r"\S+\.(?:jsonl?|py|db|eval|png|md|txt)\b|\S*[/\\]\S*|`[^`]*`|'[^']*'|\"[^\"]*\"", " ", text)
    words = [w for w in WORD.findall(t) if w not in names and not re.search(r"[_\d]", w)
             and w.lower() not in {n.lower() for n in names}]
    if not words:
        return False
    if not HAN.search(text):
        return True
    run = 0
    for tok in re.findall(r"[A-Za-z][\w'\-]*|[^\sA-Za-z]", t):
        run = run + 1 if tok in words else 0
        if run >= 3:
            return True
    return False


CASES = [  # (file, window arguments): representative files and strategies, normal and presenter
    ("long_session.json", ["--step", "1"]),
    ("long_session.json", ["--step", "-1", "--select", "0", "--presenter"]),
    ("long_session.json", ["--step", "2", "--tab", "snip"]),
    ("cc_autocompact.json", ["--strategy", "claude_code", "--set", "window=40000", "--step", "-1", "--select", "0"]),
    ("long_session.json", ["--strategy", "hermes", "--set", "trigger=always", "--step", "-1", "--select", "3"]),
    ("long_session.json", ["--strategy", "inspect_summary", "--step", "-1", "--select", "1"]),
    ("cc_real_compaction.jsonl", ["--tab", "timeline", "--presenter"]),
]


def test_every_text_the_window_shows_in_chinese_is_chinese(tmp_path):
    x = start_x("1024x768")
    names = identifiers()
    known = titles()
    left: dict = {}
    try:
        for k, (name, args) in enumerate(CASES):
            p = probe(x, tmp_path, str(EXAMPLES / name), "--lang", "zh_CN", *args, name=f"zh{k}")
            assert p["language"] == "zh_CN" and len(p["texts"]) > 150
            assert inside(p["frame"], p["available"]) and p["clipped"] == [], (name, args, p["clipped"])
            for text, where in p["texts"].items():
                if untranslated(strip_titles(text, known), names):
                    left.setdefault(text, f"{name} {' '.join(args)}: {where}")
    finally:
        x.stop()
    assert left == {}, f"{len(left)} text(s) the Chinese window shows in English:\n" + "\n".join(
        f"{t[:200]!r} ({w})" for t, w in left.items())


def test_the_check_finds_english():
    names = identifiers()
    assert untranslated("L3 budget", names) and untranslated("hermes-agent not installed", names)
    assert untranslated("自动压缩在 the whole max output 之后", names)
    assert not untranslated("L3 大工具结果预算", names) and not untranslated("max_messages", names)
    assert not untranslated("snip_max_messages = 0", names) and not untranslated("long_session.json", names)
    assert not untranslated("大小：len(str(messages))；token：字符数/4", names)
