"""The texts the core gives the window to show (layer explanations, edits in words, boundaries, findings, stage
names, parameter help, status and captions), gathered by running every bundled example under every built-in
strategy and every lesson slide: what core/i18n/i18n_zh_CN.json must translate."""
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
    ("long_session.json", "codex", {}, None),
    ("long_session.json", "codex", {"model_auto_compact_token_limit": 2000}, None),
    ("short_session.json", "codex", {"trigger": "always"}, None),
    ("long_session.json", "gemini_cli", {}, None),
    ("long_session.json", "gemini_cli", {"compression_threshold": 0.005}, None),
    ("short_session.json", "gemini_cli", {"force": True}, None),
]


def session_texts(session) -> set[str]:
    from compactscope.core.analysis.explain import boundary_explanation, cut_lines, variant_rows
    out: set[str] = set()
    add = out.add
    st = session.setup.strategy
    for t in (st.title, st.description, st.threshold.label, st.threshold.unit):
        add(t)
    for p in st.params:
        add(p.help)
        if p.unit:
            add(p.unit)
    for v in st.variants:
        add(v.title)
        add(v.description)
    for layer in st.layers:
        add(layer.label or layer.name)
        add(layer.description)
    tr = session.trace
    if tr is None:
        return {t for t in out if t}
    for info in session.view.stages():
        add(info.label)
        add(info.explanation)
    for f in tr.input_findings:
        add(str(f))
    for step in tr.steps:
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
    vr = session.view.variant_run()
    if vr is not None and vr.step is not None:
        for row in variant_rows(session.view.boundary_step(), vr.step):
            add(row[1])
        add(vr.variant.title)
        ex = boundary_explanation(vr.step, st.name)
        for _, t in ex.rows:
            add(t)
        if vr.error:
            add(vr.error)
    for x in session.view.lost():
        add(x.text)
    for k in range(len(tr.steps) + 1):
        session.view.set_stage(k)
        for mode in ("after", "before"):
            session.view.set_view_mode(mode)
            view = session.view.stage_view()
            add(view.where)
            for b in view.badges.values():
                add(b)
            for part in session.view.status_text().split(" \u00b7 "):      # the window translates it part by part
                add(part)
    session.view.set_view_mode("after")
    if session.crosscheck.check is not None and session.crosscheck.check.verdict is not None:
        add(session.crosscheck.check.verdict.text)
        add(session.crosscheck.check.description)
    if session.error is not None:
        add(session.error.what)
        add(session.error.todo)
    inf = getattr(session, "inferred", None)
    for line in (inf.lines(session.setup.pinned) if inf else ()):       # the status line's tooltip, run's header
        add(line)
    return {t for t in out if t}


BROKEN = {  # name -> content: files whose load leaves lines out or fails (their problems are shown in words)
    "msgs.json": '[{"role":"user","content":"a"}, 5, {"content":"x"}, {"role":"assistant","content":"b"}]',
    "msgs.jsonl": '{"role":"user","content":"hi"}\n{"role":"assistant","content":"ok"}\n{"role":"user","content":'
                  '"more"}\n{broken\n{"x":1}\n{"role":"assistant","content":"ok"}\n',
    "cc.jsonl": '{"type":"user","sessionId":"s","uuid":"1","message":{"role":"user","content":"hi"},"timestamp":'
                '"2026-01-01T00:00:00Z"}\n{"type":"assistant",broken\n[3]\n',
    "unknown.json": '{"hello": 1}',
    "empty.json": "",
}


def other_texts(tmp) -> dict[str, str]:
    """Texts the window shows besides a run's: the loaders' problems and errors, the cross-checks' notes when
    nothing was compared, the summarizers' names."""
    from compactscope.core.oracles import hermes_agent as hermes_oracle, inspect_ai as inspect_oracle
    from compactscope.core.loaders import LoadError, load
    from compactscope.core.summarizers.fixed import FixedSummarizer
    from compactscope.core.summarizers.offline import OfflineSummarizer
    seen: dict[str, str] = {}
    for name, content in BROKEN.items():
        p = Path(tmp) / name
        p.write_text(content, encoding="utf-8")
        try:
            for prob in load(str(p)).problems:
                seen.setdefault(str(prob), f"loading {name}")
        except LoadError as e:
            seen.setdefault(f"Could not open {p}: {e}", f"loading {name}")
    for t in hermes_oracle.NOT_COMPARED + inspect_oracle.NOT_COMPARED:
        seen.setdefault(t, "cross-check")
    for t in (OfflineSummarizer.name, FixedSummarizer("x").name):
        seen.setdefault(t, "summarizer")
    return seen


def gather(tmp) -> dict[str, str]:
    """text -> where it was seen."""
    from compactscope.core.session import lesson as lessons
    from compactscope.core.replay import COMPARISON_COLUMNS
    from compactscope.core.session.model import Session
    from compactscope.core.files.workspace import Workspace
    seen: dict[str, str] = other_texts(tmp)
    for _, title in COMPARISON_COLUMNS:
        seen.setdefault(title, "COMPARISON_COLUMNS")
    for k, (name, strategy, params, order) in enumerate(RUNS):
        s = Session(Workspace(Path(tmp) / f"r{k}"))
        s.setup.set_strategy(strategy, params)
        if order:
            s.setup.set_order(order)
        s.source.open(str(EXAMPLES / name))
        for t in session_texts(s):
            seen.setdefault(t, f"{name} {strategy} {params}")
        s.close()
    for lesson in lessons.available():
        s = Session(Workspace(Path(tmp) / f"l-{lesson.name}"))
        for slide in lesson.slides:
            lessons.play(s, lesson, slide)
            for t in session_texts(s):
                seen.setdefault(t, f"lesson {lesson.name} slide {slide.index + 1}")
            rr = s.replay.replay_result
            if rr is not None:
                from compactscope.core.replay.calibration import calibration_words
                seen.setdefault(rr.token_estimator, "replay")
                seen.setdefault(calibration_words(rr), "the timeline's calibration")
                if s.replay.cursor is not None:
                    seen.setdefault(s.replay.call_caption(s.replay.cursor), "replay caption")
        s.close()
    return seen
