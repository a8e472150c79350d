"""What the headless commands share: error reports, the strategy-choice and inference lines, the context
options, the join with a partner recording. The subcommand modules (cli_replay, cli_report, ...) import this,
never ``cli`` itself, so the command table in ``cli`` can import them without a circle."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


EXIT_OK, EXIT_REJECTED, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 3


class CliError(Exception):
    """Bad input or usage: the message is printed and the exit code is 2."""


def load_file(path: str, index: int = 0):
    from compactscope.core.loaders import LoadError, load
    try:
        result = load(path)
    except LoadError as e:
        raise CliError(str(e)) from None
    if not 0 <= index < len(result.conversations):
        raise CliError(f"{path}: there is no conversation {index} (the file holds {len(result.conversations)})")
    say_left_out(path, result.problems)
    # the loaded transcript lives as long as the command and has no cycles: the cyclic GC need not rescan its
    # 100k+ objects at every collection (hermes over 100k messages: 9.2 -> 5.5 s)
    import gc
    gc.freeze()
    return result, result.conversations[index]


def say_left_out(path: str, problems: list) -> None:
    """What the load had to leave out (a corrupt line, one too long), on stderr with its file and line: the
    output then covers the rest of the file. Values the load made valid are findings (bad_value) instead."""
    left = [p for p in problems if getattr(p, "severity", "") == "error"]
    if left:
        more = f" (and {len(left) - 3} more)" if len(left) > 3 else ""
        print(f"compactscope: {len(left)} part(s) of {path} could not be read and are left out: "
              + "; ".join(str(p) for p in left[:3]) + more + f". `compactscope info {path}` lists every problem.",
              file=sys.stderr)


def errors_dir() -> Path:
    from compactscope.core.files.workspace import default_root
    return default_root().parent / "errors"


def report_internal(what: str, details: str) -> int:
    """An internal error (a bug): one line on stderr naming where the details are; returns exit code 3."""
    where = ""
    try:
        from compactscope.core.files.safeio import atomic_write
        folder = errors_dir()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"error-{time.strftime('%Y%m%d-%H%M%S')}-{id(details) % 100000:05d}.txt"
        atomic_write(path, f"compactscope {' '.join(sys.argv[1:])}\n\n{details}")
        where = f"; details in {path}"
    except Exception:  # no cache folder: the traceback goes to stderr instead of a file
        where = "; details:\n" + details
    what = " ".join(what.split())
    print(f"compactscope: internal error (a bug in Compactscope, please report it): {what[:300]}{where}",
          file=sys.stderr)
    return EXIT_INTERNAL


def internal_steps_report(steps, context: str = "") -> int:
    """Exit code for a finished run whose layers failed: 3 with the report when one of ours raised
    (``Step.internal``); 2 with a line on stderr when a plugin failed (it raised or returned no message list:
    the strategy given is broken, ``Step.plugin_failed``); else 0."""
    steps = list(steps)
    plugin = [s for s in steps if getattr(s, "plugin_failed", False)]
    steps = [s for s in steps if getattr(s, "internal", None)]
    if not steps:
        if plugin:
            more = f" (and {len(plugin) - 1} more time(s))" if len(plugin) > 1 else ""
            print(f"compactscope: {context}the plugin failed in layer {plugin[0].layer}{more}: {plugin[0].error}; "
                  f"its input was passed on unchanged", file=sys.stderr)
            return EXIT_BAD_INPUT
        return EXIT_OK
    first = steps[0]
    details = "\n\n".join(f"layer {s.layer}:\n{s.internal}" for s in steps)
    more = f" (and {len(steps) - 1} more)" if len(steps) > 1 else ""
    return report_internal(f"{context}layer {first.layer} raised{more}: {first.error}", details)


def inferred_json(engine) -> dict:
    inf = getattr(engine, "inferred", None)
    return inf.to_json(getattr(engine, "user_params", None)) if inf is not None else {"params": {}, "reasons": {}}


def choice_json(engine) -> dict | None:
    """Which strategy ran and why (``StrategyChoice.to_json``), for every --json output."""
    choice = getattr(engine, "choice", None)
    return choice.to_json() if choice is not None else None


def warn_choice(engine) -> None:
    """A chosen strategy that is not the file's own pipeline, on stderr (for outputs without a text header)."""
    choice = getattr(engine, "choice", None)
    if choice is not None and choice.warning():
        print(f"compactscope: warning: {choice.warning()}", file=sys.stderr)


def print_inferred(engine, out=None) -> None:
    """The CLI header's lines: which strategy runs and why (and a warning when it is not the file's own
    pipeline), then what the strategy read from the session and why."""
    out = out or sys.stdout
    choice = getattr(engine, "choice", None)
    if choice is not None:
        out.write(choice.header() + "\n")
        if choice.warning():
            out.write(f"warning: {choice.warning()}\n")
    inf = getattr(engine, "inferred", None)
    if not inf:
        return
    out.write(f"inferred from the session ({engine.strategy.name}; --set overrides, --no-infer turns it off):\n")
    for line in inf.lines(getattr(engine, "user_params", None)):
        out.write(f"  {line}\n")


def join_partner(args, conv):
    """``--with OTHER``: the other view of the same session (a proxy recording for a session file, or the
    reverse) lends the system prompt and tools this one lacks."""
    other_path = getattr(args, "with_file", None)
    if not other_path:
        return conv
    from compactscope.core.model.join import borrow, same_session
    _, other = load_file(other_path, 0)
    why = same_session(conv, other)
    if why is None:
        print(f"compactscope: note: {other_path} does not look like the same session (no shared session id "
              f"or first user message); its system prompt and tools are used anyway", file=sys.stderr)
    return borrow(conv, other, why or "--with")


def segment_arg(text: str):
    from compactscope.core.model.contexts import parse_segment
    try:
        return parse_segment(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_context(p: argparse.ArgumentParser, default: str) -> None:
    """--segment and --call, the same in run, check and report (``core.contexts``)."""
    p.add_argument("--segment", type=segment_arg, metavar="S", help="the real context between compactions S (0 = "
                   "the start of the file, -1 = the last; 'all' = the whole history, which was never sent as one "
                   f"request); default: {default}")
    p.add_argument("--call", type=int, metavar="N", help="exactly what was sent at model call N (0-based, one "
                   "call per assistant message, numbered as replay does); wins over --segment")
