"""Start the window: ``compactscope [FILE] [--step N] [--screenshot out.png] [--size 1400x900]``.

With ``--screenshot`` the window renders offscreen at stage N (0 = Original,
1 = after the first layer, ...), saves a PNG and exits; nothing is written to
the user's settings.
"""
from __future__ import annotations

import argparse
import os
import sys

from compactscope.app.window_exit import dispose


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="compactscope", description="The Compactscope debugger window.")
    ap.add_argument("file", nargs="?", help="a transcript (default: the bundled long_session.json example)")
    ap.add_argument("--conversation", type=int, default=0, metavar="K",
                    help="which conversation of the file (0 = the main one; then subagents and sidechains)")
    ap.add_argument("--segment", metavar="S", help="the real context between compactions S (0 = the start of the "
                    "file, -1 = the last, the default for a compacted session; 'all' = the whole history)")
    ap.add_argument("--step", type=int, default=None, metavar="N",
                    help="open at stage N (0 = Original, 1 = after the first layer; -1 = the last)")
    ap.add_argument("--screenshot", metavar="PNG", help="render offscreen, save a PNG and exit")
    ap.add_argument("--screenshots", metavar="DIR", help="render offscreen, save one PNG per layer step (and per "
                                                        "registered frame, e.g. a lesson's slides) in DIR and exit")
    ap.add_argument("--size", default=None, help="window size WxH (default: the screen's room, at most 1400x900; "
                                                  "offscreen 1400x900); never larger than the screen")
    ap.add_argument("--presenter", action="store_true", help="start in presenter mode (F11): the whole screen, "
                                                            "large type, the side panels folded into tabs")
    ap.add_argument("--probe", metavar="JSON", help=argparse.SUPPRESS)   # tests: geometry and texts, then exit
    ap.add_argument("--strategy", help="strategy name (s08, claude_code, hermes, inspect_trim, ...) or a plugin "
                                       "PATH.py:FUNCTION (docs/plugins.md)")
    ap.add_argument("--set", action="append", metavar="NAME=VALUE", help="override a strategy parameter")
    ap.add_argument("--summarizer", help="offline, anthropic[:MODEL] or fixed:TEXT")
    ap.add_argument("--no-infer", action="store_true", help="do not read defaults from the session (e.g. Claude Code's "
                    "version picks its threshold rule); the strategy's documented defaults apply, as run --no-infer")
    ap.add_argument("--variant", metavar="NAME", help="run a variant of the strategy (s08: readme = the seed "
                                                       "README's snip, without the overlap and bounds checks)")
    ap.add_argument("--order", metavar="LAYERS", help="comma-separated layer order, e.g. "
                                                      "micro_compact,tool_result_budget,snip_compact,compact_history")
    ap.add_argument("--dark", action="store_true", help="dark palette")
    ap.add_argument("--mode", choices=("after", "before"), help="message list shows the stage after/before the layer")
    ap.add_argument("--tab", choices=("diff", "snip", "timeline"), help="which centre tab to show")
    ap.add_argument("--select", type=int, metavar="I", help="select message I")
    ap.add_argument("--zoom", type=float, help="zoom steps (points added to the font size)")
    ap.add_argument("--compare", action="append", metavar="RUNS",
                    help="timeline: also replay these runs, [LABEL=]NAME[:K=V,...], repeatable or ';'-separated "
                         "(e.g. 's08;hermes'), as in replay, report and fleet")
    ap.add_argument("--call", type=int, metavar="N", help="exactly what was sent at model call N (0-based, one call per "
                    "assistant message, numbered as replay and run --call do; -1 = the last); wins over --segment; "
                    "the timeline's cursor goes to it")
    ap.add_argument("--follow", metavar="SESSION", help="follow a Claude Code session file that is still being "
                                                       "written: the views update as it grows")
    ap.add_argument("--lang", metavar="LANG", help="the window's language: en or zh_CN (default: the one chosen in "
                                                   "View > Language, else the system's)")
    ap.add_argument("--lesson", metavar="NAME", help="open a lesson (compactscope lessons lists them; or a lesson "
                                                     "file's path) at --slide K; PageDown/PageUp move between slides")
    ap.add_argument("--slide", type=int, default=1, metavar="K", help="with --lesson: the slide (1 = the first)")
    ap.add_argument("--export-lesson", metavar="DIR", help=argparse.SUPPRESS)
    ap.add_argument("--fleet", metavar="RESULTS", help="open the results of compactscope fleet (a Parquet file) "
                                                      "in the fleet view")
    ap.add_argument("--threshold", type=float, metavar="N", help="with --fleet: the what-if threshold to show "
                                                                "(default 150,000 tokens)")
    return ap


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = text.lower().split("x")
        return max(400, int(w)), max(300, int(h))
    except ValueError:
        raise SystemExit(f"compactscope: --size takes WxH, e.g. 1400x900, not {text!r}") from None


def _missing_xcb_libraries() -> list[str]:
    """X11 libraries Qt's xcb plugin needs and does not ship (without them Qt aborts the process)."""
    if not sys.platform.startswith("linux") or not os.environ.get("DISPLAY") \
            or os.environ.get("WAYLAND_DISPLAY") or os.environ.get("QT_QPA_PLATFORM", "xcb") != "xcb":
        return []
    from ctypes.util import find_library
    return [f"lib{n}" for n in ("xcb-cursor", "xcb-icccm", "xkbcommon-x11") if find_library(n) is None]


class _UsageError(Exception):
    """A command-line argument the window cannot honour: main prints ``compactscope: <message>`` and exits 2."""


def _environment_error(offscreen: bool) -> str | None:
    """Why no window can open here (no display, X11 libraries missing), or None."""
    if (not offscreen and sys.platform.startswith("linux")
            and not any(os.environ.get(k) for k in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"))):
        return ("there is no display to open the window on (DISPLAY is not set). Use "
                "--screenshot out.png to render offscreen, or the headless commands: compactscope run|check|info "
                "FILE")
    missing = _missing_xcb_libraries() if not offscreen else []
    if missing:
        return ("Qt cannot open a window on X11: the system libraries "
                f"{', '.join(missing)} are missing. On Debian or Ubuntu: sudo apt install libxcb-cursor0 "
                "libxcb-icccm4 libxcb-keysyms1 libxcb-shape0 libxkbcommon-x11-0 libxcb-render-util0 libxcb-image0. "
                "Meanwhile --screenshot out.png and the headless commands work.")
    return None


def _error_text(e: BaseException) -> str:
    return str(e.args[0] if e.args else e)


def _set_strategy(win, args) -> None:
    from compactscope.core import strategies
    try:
        strategies.get(args.strategy)
    except (KeyError, ImportError) as e:
        raise _UsageError(_error_text(e)) from e
    win.set_strategy(args.strategy)
    win.session.setup.pin_strategy()      # every file opens with it; without --strategy, with the file's own


def _pin_params(win, args) -> dict:
    from compactscope.core.strategies.spec import parse_assignments
    try:
        pinned = parse_assignments(args.set)
        if args.strategy or not args.file:      # else checked against the file's own pipeline once it opened
            win.session.setup.strategy.resolve({**win.session.setup.params, **pinned})
    except (KeyError, ValueError) as e:
        raise _UsageError(_error_text(e)) from e
    win.session.setup.pin_params(pinned, run=False)    # --set wins over inferred defaults
    return pinned


def _set_variant_and_order(win, args) -> None:
    try:
        if args.variant and args.variant not in ("main", "guarded"):
            win.session.setup.set_variant(args.variant)
        elif args.variant:
            win.session.setup.set_variant(None)
    except KeyError as e:
        known = ", ".join(["main"] + [v.name for v in win.session.setup.strategy.variants])
        raise _UsageError(f"{e.args[0]} (variants: {known})") from e
    if args.order:
        order = [n.strip() for n in args.order.split(",") if n.strip()]
        if not win.session.setup.set_order(order):
            raise _UsageError(win.session.error.what)


def _configure(win, args, w: int, h: int, sized: bool = True) -> dict:
    """The window's strategy, parameters and look from the arguments; returns the pinned --set values."""
    pinned: dict = {}
    if args.strategy:
        _set_strategy(win, args)
    if args.no_infer:
        win.session.setup.infer = False
    if args.summarizer:
        win.session.setup.set_summarizer(args.summarizer, run=False)
    if args.set:
        pinned = _pin_params(win, args)
    if args.variant or args.order:
        _set_variant_and_order(win, args)
    if args.dark:
        win.dark_action.setChecked(True)
        win.set_dark(True, save=False)
    if args.zoom is not None:
        win.set_zoom(args.zoom, save=False)
    if sized:
        from compactscope.app.screen_fit import fit
        fit(win, w, h)
    if args.follow:
        if not os.path.isfile(args.follow):
            raise _UsageError(f"{args.follow}: no such file to follow")
        args.file = args.file or args.follow
    return pinned


def _check_pinned_against_file(win, pinned: dict) -> None:
    try:                                      # --set against the pipeline the file opened with
        win.session.setup.strategy.resolve({**win.session.setup.params, **pinned})
    except (KeyError, ValueError) as e:
        raise _UsageError(f"{_error_text(e)} (strategy {win.session.setup.strategy.name}, the file's own "
                          f"pipeline; --strategy picks another)") from e


def _go_to_segment(win, segment: str) -> None:
    segs = len(getattr(win.session.source.conversation, "segments", None) or [0])
    try:
        k = None if segment == "all" else int(segment)
        if k is not None and not -segs <= k < segs:
            raise ValueError
    except ValueError:
        raise _UsageError(f"there is no segment {segment}: the conversation has {segs} "
                          f"(0..{segs - 1}, -1 = the last, 'all')") from None
    win.session.source.set_segment(None if k is None else k % segs)


def _go_to_call(win, call: int) -> None:
    n = len(win.session.source.calls())
    if not -n <= call < n:
        raise _UsageError(f"there is no model call {call}: the conversation has {n} model call(s) "
                          f"(0..{n - 1}, -1 = the last)")
    win.session.source.set_call(call)


def _after_open(win, args, pinned: dict) -> None:
    """What the arguments ask of the opened file: --set checked against its pipeline, --segment, --call, --follow."""
    if args.set and not args.strategy and win.session.source.loading is None:
        _check_pinned_against_file(win, pinned)
    if args.segment is not None:
        _go_to_segment(win, args.segment)
    if args.call is not None:
        _go_to_call(win, args.call)
    if args.follow:
        from compactscope.app.live import open_live
        open_live(win, 2)
        win.live_panel.follow_path.setText(args.follow)
        win.live_controller.start_follow(args.follow)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    try:
        return _main(args)
    except _UsageError as e:
        print(f"compactscope: {e}", file=sys.stderr)
        return 2


def _main(args) -> int:
    offscreen = bool(args.screenshot or args.screenshots or args.export_lesson)
    if offscreen and "QT_QPA_PLATFORM" not in os.environ:
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    problem = _environment_error(offscreen)
    if problem:
        raise _UsageError(problem)
    w, h = _size(args.size) if args.size else (1400, 900)
    sized = bool(args.size) or offscreen        # else the window takes the room the screen has (app/screen_fit.py)
    from PySide6.QtWidgets import QApplication
    app = QApplication.instance() or QApplication([sys.argv[0] if sys.argv else "compactscope"])
    app.setOrganizationName("Compactscope")
    app.setApplicationName("compactscope")
    from compactscope.app.main_window import MainWindow
    from compactscope.app.settings import Settings
    from compactscope.app import language
    settings = Settings(enabled=not offscreen)
    lang = language.normalise(args.lang or settings.value("view/language", "") or language.system_language())
    if lang not in language.LANGUAGES:
        raise _UsageError(f"--lang is one of {', '.join(language.LANGUAGES)}, not {args.lang!r}")
    language.install(lang)
    win = MainWindow(settings)
    pinned = _configure(win, args, w, h, sized)
    if args.fleet:
        return _fleet(app, win, args, w, h)
    if args.lesson:
        return _lesson(app, win, args, w, h, offscreen, sized)
    ok = win.open_path(args.file, conversation=args.conversation) if args.file else win.open_default()
    if ok:
        _after_open(win, args, pinned)
    if offscreen:
        if not ok:
            raise _UsageError(getattr(win, 'last_error', 'could not open the file'))
        if args.screenshots:
            return _screenshots(app, win, args, w, h)
        return _screenshot(app, win, args, w, h)
    win.show()
    if args.step is not None or args.mode or args.tab or args.select is not None or args.compare or args.probe:
        win.wait_idle(60000)
        _apply_view_args(win, args)
    if args.presenter:
        win.set_presenter(True)
    if args.probe:
        from compactscope.app.probe import write_probe
        return write_probe(app, win, args.probe)
    rc = app.exec()
    dispose(app, win)
    return rc


def _apply_view_args(win, args) -> None:
    if args.mode:
        win.set_view_mode(args.mode)
    if args.step is not None:
        n = len(win.stepper.stages)
        k = args.step if args.step >= 0 else n + args.step
        win.stepper.set_current(max(0, min(k, n - 1)))
    if args.tab:
        win.tabs.setCurrentIndex({"diff": 0, "snip": 1, "timeline": 2}[args.tab])
    if args.compare:
        win.set_compare(args.compare)
    if args.select is not None:
        win.select_message(args.select)


def _settle(win, args, w, h) -> bool:
    """Show the window offscreen at its size, wait for the run, apply the view arguments, wait again (the
    timeline's replay and the cross-check run in workers too). False: the run did not finish in time."""
    win.show()
    win.resize(w, h)
    if not win.wait_idle(120000):
        print("compactscope: the pipeline did not finish within 120 s; nothing written", file=sys.stderr)
        return False
    _apply_view_args(win, args)
    win.wait_idle(120000)
    return True


def _screenshots(app, win, args, w, h) -> int:
    if not _settle(win, args, w, h):
        return 3                 # (the pipeline did not finish: an internal error, the exit codes of app/cli.py)
    return _write_frames(app, win, args.screenshots)


def _write_frames(app, win, folder, only=None) -> int:
    """One PNG per layer step (or per lesson slide, ``only``) into ``folder``; their paths printed; the window
    closed. Exit 2 when the folder cannot be written."""
    from compactscope.app.screenshots import write_screenshots
    try:
        paths = write_screenshots(app, win, folder, only=only)
    except OSError as e:
        print(f"compactscope: {e.strerror or e}", file=sys.stderr)
        return 2
    for p in paths:
        print(p)
    win.session.close()
    win.close()
    dispose(app, win)
    return 0


def _fleet(app, win, args, w, h) -> int:
    """``--fleet RESULTS``: the fleet window (the debugger window appears when a session is opened)."""
    from compactscope.core.fleet import FleetError
    from compactscope.app.fleet import FleetWindow, load_fleet
    try:
        data = load_fleet(args.fleet)
    except FleetError as e:
        print(f"compactscope: {e}", file=sys.stderr)
        return 2
    fw = FleetWindow(data, win, args.threshold)
    win.fleet_windows = [fw]
    fw.resize(w, h)
    fw.show()
    if args.file:
        win.open_path(args.file)
    if args.screenshot:
        for _ in range(5):
            app.processEvents()
        img = fw.grab().toImage()
        from compactscope.app.screenshots import save_image
        if not save_image(img, args.screenshot):
            print(f"compactscope: could not write {args.screenshot}", file=sys.stderr)
            return 2
        print(f"{args.screenshot}: {img.width()}x{img.height()}, fleet of {fw.view.data.n} sessions")
        fw.close()
        win.session.close()
        win.close()
        return 0
    rc = app.exec()
    dispose(app, win)
    return rc


def _screenshot(app, win, args, w, h) -> int:
    from pathlib import Path
    if not _settle(win, args, w, h):
        return 3                 # (the pipeline did not finish: an internal error, the exit codes of app/cli.py)
    for _ in range(5):
        app.processEvents()
    from compactscope.app.screenshots import save_image
    img = win.grab().toImage()
    out = Path(args.screenshot)
    if out.parent and not out.parent.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
    if not save_image(img, out):
        print(f"compactscope: could not write {out} (a folder you can write to; not a symbolic link)",
              file=sys.stderr)
        return 2
    print(f"{out}: {img.width()}x{img.height()} at stage {win.session.view.stage} "
          f"({win.stepper.stages[win.session.view.stage][1] if win.stepper.stages else '?'})")
    win.session.close()
    win.close()
    dispose(app, win)
    return 0


def _lesson(app, win, args, w, h, offscreen: bool, sized: bool = True) -> int:
    """``--lesson NAME [--slide K]``: the window on the lesson; ``--export-lesson DIR``: a PNG per slide, then exit
    (``--screenshot`` renders the one slide)."""
    from compactscope.core.session import lesson as lessons
    try:
        lesson = lessons.load(args.lesson)
        lesson.slide(args.slide)
    except lessons.LessonError as e:
        print(f"compactscope: {e}", file=sys.stderr)
        return 2
    if sized:
        from compactscope.app.screen_fit import fit
        fit(win, w, h)
    if offscreen:
        win.show()
        win.resize(w, h)
    if not win.lesson_controller.open(lesson, args.slide) and offscreen:
        print(f"compactscope: {win.last_error or 'the lesson could not be shown'}", file=sys.stderr)
        return 2
    if args.export_lesson:
        if not win.wait_idle(120000):
            print("compactscope: the pipeline did not finish within 120 s; nothing written", file=sys.stderr)
            return 3
        return _write_frames(app, win, args.export_lesson, only=win.lesson_controller.frames())
    if offscreen:
        return _screenshots(app, win, args, w, h) if args.screenshots else _screenshot(app, win, args, w, h)
    win.show()
    if args.probe:
        from compactscope.app.probe import write_probe
        win.wait_idle(60000)
        return write_probe(app, win, args.probe)
    rc = app.exec()
    dispose(app, win)
    return rc
