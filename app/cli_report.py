"""``compactscope report FILE -o OUT``: one self-contained HTML (or Markdown) file to share what a compaction did.

    compactscope report FILE -o report.html [--strategy S] [--set K=V]... [--conversation K]
                         [--segment S] [--call N] [--replay] [--compare SPEC]... [--format html|md]

Headless: never imports Qt. The HTML makes no network request (everything is inline).
"""
from __future__ import annotations

import os
import sys
import time


def register(sub, add_common, add_engine, make_engine, load, print_json, CliError) -> None:
    p = sub.add_parser("report", help="write a self-contained HTML or Markdown report of a compaction",
                       description="Write one self-contained file (HTML: no network at all; or Markdown) with what "
                                   "the file is, every layer's before and after with its edits, the boundary, the "
                                   "API findings, the size chart, every compaction summary in full and, with "
                                   "--replay, the timeline of the conversation's whole life.")
    add_common(p)
    add_engine(p)
    p.set_defaults(strategy=None)
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="the report file (.html or .md; '-' writes to standard output)")
    p.add_argument("--format", choices=("html", "md"), help="html or md (default: from OUT's name, else html)")
    from compactscope.app.cli_common import add_context
    add_context(p, "the last segment (what the agent would send next), as run and check take it")
    p.add_argument("--replay", action="store_true",
                   help="add the replay: the pipeline before every model call, with the real context and "
                        "compactions, and the strategy comparison table")
    p.add_argument("--compare", action="append", metavar="[LABEL=]NAME[:K=V,...]",
                   help="replay this strategy too and compare (repeatable, or ';'-separated; implies --replay)")
    p.add_argument("--max-calls", type=int, metavar="N", help="replay: stop after N model calls")
    p.add_argument("--free", action="store_true",
                   help="replay: free-running, its own summaries all the way (default: follow reality, going on from "
                        "the real context after each real compaction)")
    p.add_argument("--title", help="the report's title")

    def cmd_report(args) -> int:
        from compactscope.core.report import build_report, format_for, render, write_report
        from compactscope.core.model.contexts import ContextError, locate_call
        from compactscope.core.strategies.spec import parse_compare
        t0 = time.perf_counter()
        out = args.output
        if out != "-" and os.path.exists(out) and os.path.exists(args.file) and os.path.samefile(out, args.file):
            raise CliError(f"{out}: that is the transcript itself; the report goes to another file")
        result, conv = load(args.file, args.conversation)
        engine = make_engine(args, args.strategy, conversation=conv)     # no --strategy: the file's own pipeline
        segment, call = args.segment, None
        if args.call is not None:        # numbered over the whole history, as run and replay do
            try:
                segment, call = locate_call(conv, args.call)
            except ContextError as e:
                raise CliError(f"{args.file}: {e}") from None
        try:
            runs = parse_compare(args.compare)
        except ValueError as e:
            raise CliError(f"--compare: {e}") from None
        compare = [(label, make_engine(args, sname, params, conversation=conv)) for label, sname, params in runs]
        progress = (lambda text: print(f"compactscope: {text}", file=sys.stderr)) if sys.stderr.isatty() else None
        try:
            rep = build_report(result, engine, conversation=args.conversation, segment=segment, call=call,
                               replay=args.replay, compare=compare, max_calls=args.max_calls, title=args.title,
                               progress=progress, choice=engine.choice, inferred=getattr(engine, "inferred", None),
                               user_params=getattr(engine, "user_params", None), free=args.free)
        except ValueError as e:
            raise CliError(f"{args.file}: {e}") from None
        fmt = format_for(out, args.format)
        from compactscope.app.cli_common import internal_steps_report     # a layer that raised: 3; a plugin that failed: 2
        if out == "-":
            render(rep, sys.stdout, fmt)
            return internal_steps_report(rep.trace.steps, "report: ")
        try:
            write_report(rep, out, fmt)
        except OSError as e:
            raise CliError(f"cannot write {out}: {e.strerror or e}") from None
        print(f"{out}: {fmt} report of {args.file}, {os.path.getsize(out):,} bytes in {time.perf_counter() - t0:.2f} s")
        print(f"  {engine.choice.header()}")
        print(f"  ran over {rep.source.scope}")
        for note in rep.notes:
            print(f"  note: {note}")
        return internal_steps_report(rep.trace.steps, "report: ")

    p.set_defaults(fn=cmd_report)
