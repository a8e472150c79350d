"""``compactscope lessons`` and ``compactscope lesson NAME``: the bundled lessons (format: docs/lessons.md).

    compactscope lessons [--lang zh_CN] [--json]      one lesson a line: its name, then its title
    compactscope lesson NAME --check [--json]         run every slide headless; the narrated values must hold
    compactscope lesson NAME --export DIR [--lang L] [--size WxH]   one PNG per slide (offscreen window)
    compactscope lesson NAME [--slide K]              open the window on the lesson

``lessons`` and ``--check`` never import Qt. NAME is a bundled lesson's name or a lesson file's path.
"""
from __future__ import annotations

import sys


def register(sub, add_common, add_engine, make_engine, load, print_json, CliError) -> None:
    p = sub.add_parser("lessons", help="list the bundled lessons: name, then title")
    p.add_argument("--lang", default=None, help="the titles' language: en or zh_CN (default: the system's locale)")
    p.add_argument("--json", action="store_true", help="one JSON list")

    def cmd_lessons(args) -> int:
        from compactscope.core.session import lesson as lessons
        found = lessons.available()
        if args.json:
            print_json([{"name": lesson.name, "title": lesson.title_in(args.lang), "slides": len(lesson.slides),
                         "description": lessons.text(lesson.description, args.lang), "path": str(lesson.path)}
                        for lesson in found])
            return 0
        width = max((len(lesson.name) for lesson in found), default=0)
        for lesson in found:
            print(f"{lesson.name:<{width}}  {lesson.title_in(args.lang)}")
        return 0
    p.set_defaults(fn=cmd_lessons)

    p = sub.add_parser("lesson", help="check a lesson headless, export its slides as PNGs, or open it")
    p.add_argument("name", metavar="NAME", help="a bundled lesson (compactscope lessons) or a lesson file")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--check", action="store_true", help="run every slide headless and check its narrated "
                                                           "values (exit 1 when one does not hold)")
    what.add_argument("--export", metavar="DIR", help="render every slide offscreen to DIR/NN-slug.png")
    p.add_argument("--slide", type=int, default=1, metavar="K", help="open at slide K (1 = the first)")
    p.add_argument("--lang", choices=("en", "zh_CN"), help="the window's language (default: the system's)")
    p.add_argument("--size", default="1280x800", help="window size WxH for --export (default 1280x800)")
    p.add_argument("--json", action="store_true", help="with --check: one JSON object")

    def cmd_lesson(args) -> int:
        from compactscope.core.session import lesson as lessons
        try:
            lesson = lessons.load(args.name)
            if not args.check and not args.export:
                lesson.slide(args.slide)
        except lessons.LessonError as e:
            raise CliError(str(e)) from None
        if args.check:
            return _check(lesson, args, print_json)
        argv = ["--lesson", str(lesson.path), "--slide", str(args.slide)]
        if args.lang:
            argv += ["--lang", args.lang]
        if args.export:
            argv += ["--export-lesson", args.export, "--size", args.size]
        from compactscope.app.gui import main as gui_main
        return gui_main(argv)
    p.set_defaults(fn=cmd_lesson)


def _check(lesson, args, print_json) -> int:
    from compactscope.core.session import lesson as lessons
    results = lessons.run(lesson)
    bad = 0
    out = []
    for slide, checks, err in results:
        unsaid = {lang: lessons.unnarrated(slide, lang) for lang in lessons.LANGS}
        failed = [c for c in checks if not c.ok]
        bad += bool(err or failed or any(unsaid.values()))
        out.append({"slide": slide.index + 1, "title": slide.title_in("en" if args.json else args.lang or "en"),
                    "error": err,
                    "checks": [{"probe": c.probe, "expected": c.expected, "actual": c.actual, "ok": c.ok,
                                **({"error": c.error} if c.error else {})} for c in checks],
                    "unnarrated": unsaid})
    if args.json:
        print_json({"lesson": lesson.name, "path": str(lesson.path), "ok": not bad, "slides": out})
        return 1 if bad else 0
    for s in out:
        mark = "ok" if not (s["error"] or any(not c["ok"] for c in s["checks"]) or any(s["unnarrated"].values())) \
            else "FAILED"
        print(f"slide {s['slide']}: {s['title']}: {mark}")
        if s["error"]:
            print(f"  cannot show it: {s['error']}")
        for c in s["checks"]:
            if not c["ok"]:
                print(f"  {c['probe']}: narrated {c['expected']!r}, the run says {c['actual']!r}"
                      + (f" ({c['error']})" if c.get("error") else ""))
        for lang, missing in s["unnarrated"].items():
            for m in missing:
                print(f"  the {lang} narration does not say {m}")
    print(f"{lesson.name}: {len(out)} slide(s), " + ("every narrated value holds" if not bad else
                                                     f"{bad} slide(s) with a problem"), file=sys.stderr)
    return 1 if bad else 0
