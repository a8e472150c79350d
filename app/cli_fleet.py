"""``compactscope fleet`` and ``compactscope fleet-report``: a whole archive of sessions.

    compactscope fleet [PATH...] --out RESULTS.parquet [--strategy S] [--set K=V]... [--compare SPEC]...
                       [--workers N | --scheduler tcp://HOST:PORT] [--overwrite] [--retry-errors]
    compactscope fleet-report RESULTS.parquet -o fleet.html [--threshold 150000]

Headless: never imports Qt. Columns of the results: docs/fleet.md.
"""
from __future__ import annotations

import sys
import threading


def _need_fleet(CliError):
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise CliError("the fleet needs pyarrow: pip install 'compactscope[fleet]'") from None


def register(sub, add_common, add_engine, make_engine, load, print_json, CliError) -> None:
    p = sub.add_parser("fleet", help="replay every session of an archive and write the distribution to Parquet",
                       description="Replay every session file under PATH (default: your Claude Code projects "
                                   "folder, ~/.claude/projects or $CLAUDE_CONFIG_DIR/projects) with the strategy's "
                                   "session-inferred defaults, and write one row per session (each Inspect sample, "
                                   "each hermes chain) to --out (Parquet; "
                                   "columns in docs/fleet.md). Sessions already in --out with the same size and "
                                   "mtime are skipped, so a stopped run goes on where it stopped.")
    p.add_argument("paths", nargs="*", metavar="PATH", help="session files or folders (searched recursively)")
    p.add_argument("--out", "-o", required=True, metavar="RESULTS.parquet", help="the results file")
    p.add_argument("--strategy", default=None,
                   help="the main run's strategy (default: each file's own pipeline, as every command chooses it: "
                        "claude_code for Claude Code, hermes for Hermes, the inspect_* an Inspect log ran, else s08); "
                        "a named strategy replays only the sessions it fits, the others are rows saying why not")
    p.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="override a parameter of the main run (over the session-inferred defaults; without "
                        "--strategy, in every session whose strategy has it)")
    p.add_argument("--compare", action="append", metavar="[LABEL=]NAME[:K=V,...]",
                   help="replay every session again with this strategy/parameters; its totals become columns "
                        "cmp_<label>_* (repeatable)")
    p.add_argument("--workers", type=int, metavar="N",
                   help="worker processes on this machine (default: one per core; 0 = in this process)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="run on this dask.distributed scheduler instead (its workers must see the same paths)")
    p.add_argument("--timeout", type=float, default=900, metavar="SECONDS",
                   help="local pool: a session replayed longer than this is stopped and becomes a row with the "
                        "error (default 900; 0 = no limit)")
    p.add_argument("--overwrite", action="store_true", help="start --out afresh instead of resuming it")
    p.add_argument("--retry-errors", action="store_true", help="replay again the sessions whose row has an error")
    p.add_argument("--no-infer", action="store_true", help="use the strategy's defaults, not the session-inferred ones")
    p.add_argument("--summarizer", default="offline",
                   help="who writes the simulated summaries: offline (default, no LLM) or fixed:TEXT")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress line")
    p.add_argument("--json", action="store_true", help="print the run's summary as JSON")

    def cmd_fleet(args) -> int:
        _need_fleet(CliError)
        from compactscope.core.fleet import FleetError, make_config
        from compactscope.core.fleet.engines import make_engine as fleet_engine
        from compactscope.core.fleet.run import duration, run_fleet
        if args.scheduler and args.workers is not None:
            raise CliError("--workers and --scheduler do not go together: the cluster has its own workers")
        if args.summarizer.startswith("anthropic"):
            raise CliError("--summarizer anthropic would call the API for every simulated summary of the fleet; "
                           "use offline or fixed:TEXT")
        from compactscope.core.strategies.spec import parse_assignments
        try:
            cfg = make_config(args.strategy, parse_assignments(args.set), args.compare, args.summarizer,
                              infer=not args.no_infer)
            engine = fleet_engine(args.workers, args.scheduler, args.timeout)
        except (FleetError, ValueError) as e:
            raise CliError(str(e)) from None
        tty = sys.stderr.isatty()
        state = {"last": 0.0}

        def progress(pr):
            if args.quiet:
                return
            if tty:
                sys.stderr.write("\r\x1b[2K" + pr.line())
                sys.stderr.flush()
            elif pr.done == 0 or pr.elapsed - state["last"] >= 10 or pr.done == pr.total:
                state["last"] = pr.elapsed
                print(pr.line(), file=sys.stderr, flush=True)
        cancel = threading.Event()
        try:
            s = run_fleet(args.paths or None, cfg, args.out, engine=engine, overwrite=args.overwrite,
                          retry_errors=args.retry_errors, progress=progress, cancel=cancel)
        except FleetError as e:
            raise CliError(str(e)) from None
        if tty and not args.quiet:
            sys.stderr.write("\n")
        if args.json:
            print_json(vars(s))
            return 130 if s.stopped else 0
        for m in s.missing:
            print(f"not found: {m}", file=sys.stderr)
        if s.discovered == 0:
            print("no session files found" + (f" under {', '.join(args.paths)}" if args.paths else
                                               " in your Claude Code projects folder"), file=sys.stderr)
        print(f"{s.replayed:,} file(s) replayed in {duration(s.seconds)} on {s.engine}"
              + (f" ({s.bytes / 1e6:,.0f} MB, {s.bytes / 1e6 / max(s.seconds, 1e-9):,.1f} MB/s"
                 + (f"; workers peaked at {s.worker_peak_mb:,.0f} MB of memory" if s.worker_peak_mb else "") + ")"
                 if s.bytes else "")
              + (f"; {s.skipped:,} unchanged, kept from before" if s.skipped else "")
              + (f"; {s.errors:,} with an error (a row each, column error)" if s.errors else ""))
        if s.duplicates:
            print(f"{s.duplicates:,} row(s) hold a session another row holds too (a hermes snapshot of its state.db, "
                  f"an Inspect .json of its .eval, a copied file): marked duplicate_of, the figures count each "
                  f"session once")
        for example in s.error_examples[:3]:
            print(f"  error: {example}")
        if s.orphan_agents:
            print(f"{len(s.orphan_agents)} subagent file(s) whose session is not among the files were left out, "
                  f"e.g. {s.orphan_agents[0]}")
        if s.stopped:
            print(f"stopped: {s.rows:,} row(s) written to {s.out}; run the same command again to go on")
            return 130
        _print_overview(s.out)
        print(f"{s.rows:,} row(s) in {s.out}; look at it: compactscope --fleet {s.out}  or  "
              f"compactscope fleet-report {s.out} -o fleet.html")
        return 0

    p.set_defaults(fn=cmd_fleet)

    r = sub.add_parser("fleet-report", help="a fleet's results as a self-contained HTML page")
    r.add_argument("results", metavar="RESULTS.parquet")
    r.add_argument("-o", "--output", required=True, metavar="fleet.html")
    r.add_argument("--threshold", action="append", metavar="N",
                   help="also show what this threshold would do (repeatable; default 150000 for token strategies)")

    def cmd_report(args) -> int:
        _need_fleet(CliError)
        from compactscope.core.fleet import FleetError
        from compactscope.core.fleet.report import write_report
        try:
            thresholds = [float(t.replace(",", "").replace("_", "")) for t in args.threshold or []]
        except ValueError:
            raise CliError(f"--threshold takes numbers, not {args.threshold}") from None
        try:
            path = write_report(args.results, args.output, thresholds or None)
        except FleetError as e:
            raise CliError(str(e)) from None
        except OSError as e:
            raise CliError(f"{args.output}: cannot write it: {e.strerror or e}") from None
        print(f"wrote {path}")
        return 0

    r.set_defaults(fn=cmd_report)


def _print_overview(out: str) -> None:
    from compactscope.core.fleet.model import FleetData
    d = FleetData.load(out)
    for line in d.overview_lines():
        print(line)
