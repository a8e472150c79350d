"""Lessons: a sequence of slides, each a state of the app plus narration in English and Simplified Chinese.

A lesson is one JSON file in ``assets/lessons/`` (format: docs/lessons.md). Qt-free: ``load`` reads and
checks it (``LessonError`` names the file and the slide), ``Lesson.slides`` are the slides with their
*whole* state (each slide's ``state`` keys replace the previous slide's values, starting from the lesson's
``state``), ``snapshot(slide)`` turns a slide into a ``core.session.Session`` snapshot, ``play(session,
slide)`` shows it, and ``check(session, slide)`` evaluates the slide's ``expect``: the values its narration
states, read from the session by ``probe`` (e.g. ``step.snip_compact.vars.head_end``). Tests and
``compactscope lesson NAME --check`` run every lesson headless this way; the window adds zoom, the
presenter layout and the narration panel (app/lessons.py).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from ..runtime.record import field, record

FORMAT = 1
LANGS = ("en", "zh_CN")
TAB_ALIASES = {"snip": "boundary", "boundaries": "boundary", "before/after": "diff"}
STATE_KEYS = {
    "file": "the transcript, relative to the lesson file (or absolute)",
    "conversation": "which conversation of the file (0 = the main one)",
    "segment": "the real context between compactions S (null = the whole conversation)",
    "call": "the context before model call N (null = all of it)",
    "strategy": "the strategy's name (s08, claude_code, hermes, ...)",
    "params": "the strategy's parameters that differ from its defaults (replace the previous slide's)",
    "variant": "a variant of the strategy by name (null = the main way)",
    "order": "the layers' order, a list of layer names (null = the strategy's own)",
    "summarizer": "offline (default), fixed:TEXT or anthropic[:MODEL]",
    "stage": "0 = Original, k = after the k-th step, a layer's name (after that layer), or \"last\"",
    "mode": "\"after\" (default) or \"before\" the layer",
    "tab": "\"diff\", \"boundary\" (or \"snip\") or \"timeline\"",
    "select": "the message selected in the shown list (null = the first one the layer changed)",
    "block": "the block of the selected message",
    "compare": "timeline: other runs, ';'-separated [LABEL=]NAME[:K=V,...]",
    "cursor": "timeline: the model call under the cursor",
    "focus": "a text the window highlights in the explanations (e.g. \"after the head guard\")",
    "zoom": "window: points added to the font size",
    "layout": "window: \"presenter\" (large type, inspector and parameters hidden, narration shown) or \"normal\"",
    "show": "window, presenter layout: the panel the narration points at, shown large: \"chart\" (the size and "
            "token chart), \"findings\" or \"inspector\" (this slide only; null = the slide's tab)",
}
SHOW = ("chart", "findings", "inspector")
DEFAULT_STATE: dict[str, Any] = {
                 "file": None, "conversation": 0, "segment": None, "call": None, "strategy": "s08", "params": {},
                 "variant": None, "order": None, "summarizer": "offline", "stage": 0, "mode": "after",
                 "tab": "diff", "select": None, "block": None, "compare": "", "cursor": None, "focus": "",
                 "zoom": 4, "layout": "presenter", "show": None}


class LessonError(Exception):
    """A lesson file that cannot be used: the message names the file (and the slide) and what is wrong."""


def lessons_dir() -> Path:
    from compactscope import asset_path
    return asset_path("lessons")


def text(value: Any, lang: str = "en") -> str:
    """A text in ``lang`` from a string (the same in every language) or a {lang: text} dict (English when the
    language is missing)."""
    if isinstance(value, dict):
        return str(value.get(lang) or value.get(lang.split("_")[0]) or value.get("en") or "")
    return "" if value is None else str(value)


@record
class Slide:
    index: int                      # 0-based
    title: Any                      # str or {lang: str}
    narration: Any
    state: dict                     # the whole state (inherited keys included)
    expect: dict = field(default_factory=dict)

    def title_in(self, lang: str = "en") -> str:
        return text(self.title, lang)

    def narration_in(self, lang: str = "en") -> str:
        return text(self.narration, lang)


@record
class Lesson:
    name: str
    path: Path
    title: Any
    description: Any
    slides: list[Slide]
    position: float = 100.0          # where ``available`` lists it (then by name)

    def title_in(self, lang: str = "en") -> str:
        return text(self.title, lang)

    def file_of(self, slide: Slide) -> Path | None:
        f = slide.state.get("file")
        if not f:
            return None
        p = Path(f)
        return p if p.is_absolute() else (self.path.parent / p).resolve()

    def slide(self, k: int) -> Slide:
        """Slide k, 1-based as people count (``--slide 1`` is the first); out of range: a LessonError."""
        if not 1 <= k <= len(self.slides):
            raise LessonError(f"lesson {self.name} has slides 1..{len(self.slides)}, not {k}")
        return self.slides[k - 1]


def available() -> list[Lesson]:
    """The bundled lessons, by name (a broken file is skipped here; ``load`` says what is wrong with it)."""
    out = []
    for p in sorted(lessons_dir().glob("*.json")):
        try:
            out.append(load(p))
        except LessonError:
            continue
    return sorted(out, key=lambda item: (item.position, item.name))


def find(name: str) -> Path:
    """A lesson file by name (a bundled lesson) or by path."""
    p = Path(name)
    if p.suffix == ".json" and p.is_file():
        return p
    bundled = lessons_dir() / f"{name}.json"
    if bundled.is_file():
        return bundled
    known = ", ".join(p.stem for p in sorted(lessons_dir().glob("*.json")))
    raise LessonError(f"no lesson {name!r} (bundled lessons: {known}; or give a lesson file's path)")


def load(name_or_path: str | Path) -> Lesson:
    path = find(str(name_or_path))
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise LessonError(f"{path}: cannot read it: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise LessonError(f"{path}, line {e.lineno}: not JSON: {e.msg}") from None
    if not isinstance(raw, dict):
        raise LessonError(f"{path}: a lesson is a JSON object with 'title' and 'slides'")
    if raw.get("format", FORMAT) != FORMAT:
        raise LessonError(f"{path}: lesson format {raw.get('format')!r}; this Compactscope reads format {FORMAT}")
    slides_raw = raw.get("slides")
    if not isinstance(slides_raw, list) or not slides_raw:
        raise LessonError(f"{path}: 'slides' must be a non-empty list")
    state = dict(DEFAULT_STATE)
    state.update(_state(raw.get("state") or {}, path, "the lesson's 'state'"))
    slides = []
    for k, sr in enumerate(slides_raw):
        where = f"slide {k + 1}"
        if not isinstance(sr, dict):
            raise LessonError(f"{path}: {where} is not an object")
        unknown = set(sr) - {"title", "narration", "state", "expect", "notes"}
        if unknown:
            raise LessonError(f"{path}: {where} has unknown keys {', '.join(sorted(unknown))} (known: title, "
                              "narration, state, expect, notes)")
        if not sr.get("narration"):
            raise LessonError(f"{path}: {where} has no narration")
        state = {**state, "show": None, **_state(sr.get("state") or {}, path, where)}    # show: this slide only
        if not state.get("file"):
            raise LessonError(f"{path}: {where}: no 'file' to show (set it in the lesson's 'state')")
        expect = sr.get("expect") or {}
        if not isinstance(expect, dict):
            raise LessonError(f"{path}: {where}: 'expect' is an object {{probe: value}}")
        slides.append(Slide(k, sr.get("title") or f"{k + 1}", sr["narration"], dict(state), dict(expect)))
    unknown = set(raw) - {"format", "position", "title", "description", "state", "slides", "notes"}
    if unknown:
        raise LessonError(f"{path}: unknown keys {', '.join(sorted(unknown))} (known: format, position, title, "
                          "description, state, slides, notes)")
    try:
        position = float(raw.get("position", 100))
    except (TypeError, ValueError):
        raise LessonError(f"{path}: position is a number") from None
    return Lesson(path.stem, path, raw.get("title") or path.stem, raw.get("description") or "", slides, position)


def _state(d: Any, path: Path, where: str) -> dict:
    if not isinstance(d, dict):
        raise LessonError(f"{path}: {where}: 'state' is an object")
    unknown = set(d) - set(STATE_KEYS)
    if unknown:
        raise LessonError(f"{path}: {where}: unknown state keys {', '.join(sorted(unknown))} "
                          f"(known: {', '.join(STATE_KEYS)})")
    out = dict(d)
    if "tab" in out:
        out["tab"] = TAB_ALIASES.get(out["tab"], out["tab"])
        if out["tab"] not in ("diff", "boundary", "timeline"):
            raise LessonError(f"{path}: {where}: tab is diff, boundary or timeline, not {d['tab']!r}")
    if out.get("show") is not None and out["show"] not in SHOW:
        raise LessonError(f"{path}: {where}: show is {', '.join(SHOW)} or null, not {out['show']!r}")
    if "mode" in out and out["mode"] not in ("after", "before"):
        raise LessonError(f"{path}: {where}: mode is after or before, not {out['mode']!r}")
    if "params" in out and not isinstance(out["params"], dict):
        raise LessonError(f"{path}: {where}: params is an object {{name: value}}")
    return out


def snapshot(lesson: Lesson, slide: Slide) -> dict:
    """The ``core.session`` snapshot that shows ``slide`` (the window's extras aside: zoom, layout, focus)."""
    from .. import strategies
    from .model import SNAPSHOT_VERSION
    st = slide.state
    params = dict(st.get("params") or {})
    if st.get("variant"):
        strategy = strategies.get(st.get("strategy") or "s08")
        v = next((v for v in strategy.variants if v.name == st["variant"]), None)
        if v is None:
            raise LessonError(f"{lesson.path}: slide {slide.index + 1}: strategy {strategy.name} has no variant "
                              f"{st['variant']!r}")
        params.update(v.params)
    compare = [c for c in str(st.get("compare") or "").split(";") if c.strip()]
    known = set(strategies.available())
    return {"version": SNAPSHOT_VERSION,
            "source": {"path": str(lesson.file_of(slide)), "conversation": st.get("conversation") or 0,
                       "segment": st.get("segment"), "call": st.get("call")},
            "strategy": st.get("strategy") or "s08", "params": params,
            "summarizer": st.get("summarizer") or "offline", "order": st.get("order"),
            "view": {"stage": st.get("stage") or 0, "mode": st.get("mode") or "after", "selection": st.get("select"),
                     "block": st.get("block"), "tab": st.get("tab") or "diff", "filters": {}},
            "replay": {"compare": [c.strip() for c in compare if c.strip() in known],
                       "extra": "; ".join(c.strip() for c in compare if c.strip() not in known),
                       "cursor": st.get("cursor"), "follow": True}}


def play(session, lesson: Lesson, slide: Slide) -> bool:
    """Bring ``session`` to the slide's state (with an inline session everything has run when it returns).
    False, with ``session.error`` set, when it cannot."""
    return session.restore(snapshot(lesson, slide))


# ------------------------------------------------------------------ probes: the values a narration states
class ProbeError(LookupError):
    pass


def _roots(session) -> dict:
    from ..analysis.explain import placeholder_of  # noqa: F401 - documented root helpers below
    return {
        "step": lambda name: _step(session.trace, name),
        "variant": lambda name: _step(session.view.variant_run().trace if session.view.variant_run() else None, name),
    }


def _step(trace, name: str):
    if trace is None:
        raise ProbeError("no run")
    s = trace.step(name)
    if s is None:
        raise ProbeError(f"the run has no step {name!r} (steps: {', '.join(x.layer for x in trace.steps)})")
    return s


def probe(session, path: str) -> Any:
    """A value of the session by a dotted path. Roots: ``step.LAYER`` and ``variant.LAYER`` (that layer's step in
    the run, or in the variant run beside it), ``lost`` (``core.explain.LostResult``s), ``replay`` (the
    timeline's first replay), ``view`` (the shown stage: ``view.messages``), ``params``, ``trace``, ``stage``.
    Then attributes, dict keys and list indices; ``count`` is a length, ``placeholder`` a snip step's
    placeholder text, ``duplicated`` the messages a snip step repeated, ``restored`` the files a compaction
    restored, ``real_compactions`` a replay's real compactions, ``compactions`` its simulated ones."""
    from ..analysis.explain import placeholder_of
    parts = path.split(".")
    head = parts.pop(0)
    if head in ("step", "variant"):
        if not parts:
            raise ProbeError(f"{path}: name a layer after {head}.")
        obj: Any = _roots(session)[head](parts.pop(0))
    elif head == "lost":
        obj = session.view.lost()
    elif head == "replay":
        obj = session.replay.replay_result
        if obj is None:
            raise ProbeError("no replay (the slide's tab is not the timeline?)")
    elif head == "view":
        obj = session.view.stage_view()
    elif head in ("params", "trace", "stage"):
        obj = {"params": session.setup.params, "trace": session.trace, "stage": session.view.stage}[head]
    else:
        raise ProbeError(f"{path}: unknown root {head!r} (step, variant, lost, replay, view, params, trace, stage)")
    for seg in parts:
        if seg == "count":
            obj = len(obj)
        elif seg == "placeholder":
            obj = placeholder_of(obj)
        elif seg == "duplicated":
            e = next((e for e in obj.edits if e.kind == "snip" and e.data and "duplicated" in e.data), None)
            obj = list(e.data["duplicated"]) if e is not None else []
        elif seg == "restored":
            obj = [f["path"] for f in (obj.vars or {}).get("restored_files", [])]
        elif seg == "real_compactions":
            obj = [e for e in obj.real_events if e.get("call") is not None]
        elif seg == "compactions":
            obj = [c.index for c in obj.calls if c.fired and any(f in c.fired for f in _summary_layers(obj))]
        elif isinstance(obj, dict):
            if seg not in obj:
                raise ProbeError(f"{path}: no {seg!r} (there: {', '.join(map(str, obj))})")
            obj = obj[seg]
        elif isinstance(obj, (list, tuple)):
            try:
                obj = obj[int(seg)]
            except (ValueError, IndexError):
                raise ProbeError(f"{path}: no item {seg!r} in a list of {len(obj)}") from None
        elif hasattr(obj, seg):
            obj = getattr(obj, seg)
        else:
            raise ProbeError(f"{path}: {type(obj).__name__} has no {seg!r}")
    return obj


def _summary_layers(replay) -> set:
    names = set(getattr(replay, "layer_names", ()) or ())
    return {n for n in names if "compact" in n or "summar" in n} or names


@record
class Check:
    probe: str
    expected: Any
    actual: Any
    ok: bool
    error: str = ""


def check(session, slide: Slide) -> list[Check]:
    """Each ``expect`` entry of the slide against the session now showing it."""
    out = []
    for key, want in slide.expect.items():
        try:
            got = probe(session, key)
        except ProbeError as e:
            out.append(Check(key, want, None, False, str(e)))
            continue
        if isinstance(got, tuple):
            got = list(got)
        out.append(Check(key, want, got, _same(got, want)))
    return out


def _same(got, want) -> bool:
    if isinstance(want, dict) and set(want) == {"contains"}:
        return isinstance(got, (str, list)) and want["contains"] in got
    if isinstance(want, float) and isinstance(got, (int, float)):
        return abs(got - want) <= 1e-9 * max(1.0, abs(want))
    return got == want


def narrated(value: Any) -> list[list[str]]:
    """How a value appears in a narration: one list of accepted spellings per thing to find (ints with or
    without thousands separators, every item of a list, the text of {"contains": TEXT}; booleans and None are
    not narrated)."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, dict) and set(value) == {"contains"}:
        return narrated(value["contains"])
    if isinstance(value, int):
        return [[str(value), f"{value:,}"]]
    if isinstance(value, float):
        return [[f"{value:g}", f"{value:,.0f}"]]
    if isinstance(value, (list, tuple)):
        return [forms for v in value for forms in narrated(v)]
    return [[str(value)]]


def unnarrated(slide: Slide, lang: str) -> list[str]:
    """The expected values the slide's narration in ``lang`` does not state."""
    said = slide.narration_in(lang)
    missing = []
    for key, want in slide.expect.items():
        for forms in narrated(want):
            if not any(f in said for f in forms):
                missing.append(f"{key} = {forms[0]}")
    return missing


def run(lesson: Lesson, workspace=None) -> list[tuple[Slide, list[Check], str | None]]:
    """Every slide of the lesson on a headless, inline session: (slide, checks, error)."""
    from .model import Session
    from ..files.workspace import Workspace
    session = Session(workspace or Workspace())
    out = []
    for slide in lesson.slides:
        ok = play(session, lesson, slide)
        err = None if ok else (session.error.what if session.error else "could not show the slide")
        if ok and session.error is not None and session.trace is None:
            err = session.error.what
        out.append((slide, check(session, slide) if ok else [], err))
    session.close()
    return out
