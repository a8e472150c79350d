"""The texts the core gives the window to show (layer explanations, edits in words, boundaries, findings, stage
names, parameter help, status and captions), gathered by running every bundled example under every built-in
strategy and every lesson slide: what core/i18n_zh_CN.json must translate."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "assets" / "examples"
RUNS = [  # (example, strategy, params, order)
    ("long_session.json", "s08", {}, None),
    ("long_session.json", "s08", {"variant": "readme"}, None),
    ("long_session.json", "s08", {"context_limit": 500_000}, None),
    ("boundary_case.json", "s08", {}, None),
    ("short_session.json", "s08", {}, None),
    ("seed000_snip.json", "s08", {"max_messages": 8}, None),
    ("seed000_snip.json", "s08", {"max_messages": 11}, None),
    ("seed000_snip.json", "s08", {"max_messages": 3}, None),
    ("readme_parallel.json", "s08", {"max_messages": 6}, None),
    ("readme_parallel.json", "s08", {"max_messages": 6, "variant": "readme"}, None),
    ("layer_order.json", "s08", {"max_bytes": 30000}, None),
    ("layer_order.json", "s08", {"max_bytes": 30000},
     ["micro_compact", "tool_result_budget", "snip_compact", "compact_history"]),
    ("long_session.json", "claude_code", {}, None),
    ("cc_autocompact.json", "claude_code", {"window": 40000}, None),
    ("cc_autocompact.json", "claude_code", {}, None),
    ("long_session.json", "hermes", {}, None),
    ("long_session.json", "hermes", {"trigger": "always"}, None),
    ("short_session.json", "hermes", {"trigger": "always"}, None),
    ("long_session.json", "inspect_edit", {}, None),
    ("long_session.json", "inspect_trim", {}, None),
    ("long_session.json", "inspect_summary", {}, None),
    ("long_session.json", "gemini_cli", {}, None),
    ("long_session.json", "gemini_cli", {"compression_threshold": 0.005}, None),
    ("short_session.json", "gemini_cli", {"force": True}, None),
]


def session_texts(session) -> set[str]:
    from compactscope.core.explain import boundary_explanation, cut_lines, variant_rows
    out: set[str] = set()
    add = out.add
    st = session.strategy
    for t in (st.title, st.description, st.threshold.label, st.threshold.unit):
        add(t)
    for p in st.params:
        add(p.help)
        if p.unit:
            add(p.unit)
    for v in st.variants:
        add(v.title)
        add(v.description)
    for l in st.layers:
        add(l.label or l.name)
        add(l.description)
    tr = session.trace
    if tr is None:
        return {t for t in out if t}
    for info in session.stages():
        add(info.label)
        add(info.explanation)
    for f in tr.input_findings:
        add(str(f))
    for k, step in enumerate(tr.steps):
        add(step.explain())
        add(step.description)
        if step.error:
            add(step.error)
        for e in step.edits[:300]:
            add(e.text)
        for f in step.findings:
            add(str(f))
        ex = boundary_explanation(step, st.name)
        add(ex.title)
        add(ex.tab_title)
        for _, t in ex.rows:
            add(t)
        for lines in cut_lines(step):
            for texts in lines.values():
                for t, _ in texts:
                    add(t)
    vr = session.variant_run()
    if vr is not None and vr.step is not None:
        for row in variant_rows(session.boundary_step(), vr.step):
            add(row[1])
        add(vr.variant.title)
        ex = boundary_explanation(vr.step, st.name)
        for _, t in ex.rows:
            add(t)
        if vr.error:
            add(vr.error)
    for x in session.lost():
        add(x.text)
    for k in range(len(tr.steps) + 1):
        session.set_stage(k)
        for mode in ("after", "before"):
            session.set_view_mode(mode)
            view = session.stage_view()
            add(view.where)
            for b in view.badges.values():
                add(b)
            for part in session.status_text().split(" \u00b7 "):      # the window translates it part by part
                add(part)
    session.set_view_mode("after")
    if session.check is not None and session.check.verdict is not None:
        add(session.check.verdict.text)
        add(session.check.description)
    if session.error is not None:
        add(session.error.what)
        add(session.error.todo)
    return {t for t in out if t}


def gather(tmp) -> dict[str, str]:
    """text -> where it was seen."""
    from compactscope.core import lessons
    from compactscope.core.replay import COMPARISON_COLUMNS
    from compactscope.core.session import Session
    from compactscope.core.workspace import Workspace
    seen: dict[str, str] = {}
    for _, title in COMPARISON_COLUMNS:
        seen.setdefault(title, "COMPARISON_COLUMNS")
    for k, (name, strategy, params, order) in enumerate(RUNS):
        s = Session(Workspace(Path(tmp) / f"r{k}"))
        s.set_strategy(strategy, params)
        if order:
            s.set_order(order)
        s.open(str(EXAMPLES / name))
        for t in session_texts(s):
            seen.setdefault(t, f"{name} {strategy} {params}")
        s.close()
    for lesson in lessons.available():
        s = Session(Workspace(Path(tmp) / f"l-{lesson.name}"))
        for slide in lesson.slides:
            lessons.play(s, lesson, slide)
            for t in session_texts(s):
                seen.setdefault(t, f"lesson {lesson.name} slide {slide.index + 1}")
            rr = s.replay_result
            if rr is not None:
                from compactscope.core.replay.calibration import calibration_words
                seen.setdefault(rr.token_estimator, "replay")
                seen.setdefault(calibration_words(rr), "the timeline's calibration")
                if s.cursor is not None:
                    seen.setdefault(s.call_caption(s.cursor), "replay caption")
        s.close()
    return seen
