"""``compactscope replay FILE``: the pipeline before every model call, one row per call.

    compactscope replay FILE [--strategy NAME] [--set NAME=VALUE]... [--json | --csv]
    compactscope replay FILE --compare s08 --compare claude_code --compare "s08:context_limit=100000"
    compactscope replay FILE --compare "s08;hermes"          (the same syntax as report, fleet and the window)

Headless: never imports Qt.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _exit_code(*results) -> int:
    """3 (with the one-line report) when a layer raised in any of the replays, else 0."""
    from compactscope.app.cli_common import internal_steps_report
    flat = []
    for r in results:
        flat += r if isinstance(r, list) else [r]
    return internal_steps_report([layer for r in flat for c in r.calls for layer in c.layers], "replay: ")


def register(sub, add_common, add_engine, make_engine, load, print_json, CliError) -> None:
    p = sub.add_parser("replay", help="run the pipeline before every model call over the conversation's life")
    add_common(p)
    add_engine(p)
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="one JSON object: totals, compactions, one entry per call")
    fmt.add_argument("--csv", action="store_true", help="CSV, one row per call")
    p.add_argument("--compare", action="append", metavar="[LABEL=]NAME[:K=V,...]",
                   help="replay again with this strategy/parameters and print the comparison table (repeatable, or "
                        "several ';'-separated: \"s08;hermes\")")
    p.add_argument("--max-calls", type=int, metavar="N", help="stop after N calls")
    p.add_argument("--check", action="store_true", help="run the API checker on every step (slower)")
    p.add_argument("--iteration-cap", type=int, default=None, metavar="N",
                   help="the iteration budget: the turn loop's cap (default: the strategy's, 90 = seed 002's); every "
                        "call consumes one iteration, a compaction restart is refunded (JSON/CSV: iterations "
                        "used/refunded per call)")
    p.add_argument("--calibrate", action=argparse.BooleanOptionalAction, default=None,
                   help="recordings with usage: add what the API saw beyond the recorded messages (system prompt, "
                        "tools, history before the file starts) to every token estimate (default: on when the file "
                        "has usage and the strategy's threshold is in tokens)")

    p.add_argument("--manual-compacts", action=argparse.BooleanOptionalAction, default=True,
                   help="where the recording holds a real manual /compact, replay the user's command at that call "
                        "(strategies with a manual_compact layer; default on)")

    p.add_argument("--free", action="store_true",
                   help="the free-running what-if: after a real compaction go on from the replay's own summary (its "
                        "own context all the way); default: follow reality, each real compaction predicted from the "
                        "real context the agent had after the one before")

    def cmd_replay(args) -> int:
        from compactscope.core.layers.base import MICRO, SNIP
        from compactscope.core.replay import compare, format_table, replay
        from compactscope.app.cli_common import choice_json, inferred_json, print_inferred, warn_choice
        from compactscope.core.replay.calibration import calibration_words, default_calibration
        from compactscope.core.replay.views import pre_tokens_text
        from compactscope.core.analysis import divergence
        from compactscope.core.strategies.spec import parse_compare
        from compactscope.app.cli_common import join_partner
        result, conv = load(args.file, args.conversation)
        conv = join_partner(args, conv)
        engine = make_engine(args, args.strategy, conversation=conv)
        if args.iteration_cap is not None and args.iteration_cap < 1:
            raise CliError(f"--iteration-cap must be at least 1, not {args.iteration_cap}")
        try:
            specs = parse_compare(args.compare)
        except ValueError as e:
            raise CliError(f"--compare: {e}") from None
        runs = [(label, make_engine(args, name, params, conversation=conv)) for label, name, params in specs]
        # the runs compared decide the calibration together, as the window's timeline does (one rule)
        calibrate = args.calibrate if args.calibrate is not None else \
            default_calibration(conv, [engine.strategy] + [e.strategy for _, e in runs])
        res = replay(conv, engine=engine, check=args.check, max_calls=args.max_calls, keep_inputs=False,
                     calibrate=calibrate, iteration_cap=args.iteration_cap, manual_compacts=args.manual_compacts,
                     free=args.free)
        if not res.calls:
            raise CliError(f"{args.file}: the conversation has no model call (no assistant message) to replay")
        others = []
        for label, eng2 in runs:
            others += compare(conv, [(label, eng2.strategy, eng2.params)], engine=eng2, check=args.check,
                              max_calls=args.max_calls, keep_inputs=False, iteration_cap=args.iteration_cap,
                              manual_compacts=args.manual_compacts, calibrate=calibrate, free=args.free)
        if args.json:
            d = res.to_json(lazy=True)
            d["mode"] = res.mode
            d["inferred"] = inferred_json(engine)
            d["strategy_choice"] = choice_json(engine)
            warn_choice(engine)
            div = divergence.report(res, conv)
            d["version"], d["divergence"] = div["version"], div
            d["input"] = {"path": str(Path(args.file)), "format": result.format, "messages": len(conv.messages),
                          "conversation": args.conversation}
            if others:
                d["comparison"] = [r.totals() for r in [res] + others]
            print_json(d)
            return _exit_code(res, others)
        if args.csv:
            warn_choice(engine)
            sys.stdout.write(res.to_csv())
            return _exit_code(res, others)
        tot = res.totals()
        unit = res.threshold_unit
        print(f"{args.file}: {result.format}, {len(conv.messages)} messages, {len(res.calls)} model calls"
              + (f"; threshold {res.threshold:,.0f} {unit}" if res.threshold else ""))
        print_inferred(engine)
        print(f"sizes: {res.size_estimator}; tokens: {res.token_estimator}; {res.seconds:.2f} s")
        print(calibration_words(res))
        if res.real_events:
            from compactscope.core.replay.follow import mode_words
            print(mode_words(res))
        real = any(c.real_tokens is not None for c in res.calls)
        print(f"{'call':>5}{'msg':>6}{'ctx msgs':>9}{'size before':>13}{'size after':>12}{'tok before':>12}"
              f"{'tok after':>11}" + (f"{'real tok':>10}" if real else "") + "  fired")
        for c in res.calls:
            line = (f"{c.index:>5}{c.message_index:>6}{c.messages_before:>9}{c.size_before:>13,}{c.size_after:>12,}"
                    f"{c.tokens_before:>12,}{c.tokens_after:>11,}"
                    + (f"{c.real_tokens:>10,}" if real and c.real_tokens is not None else (" " * 10 if real else "")))
            line += "  " + ", ".join(c.fired)
            if c.reset is not None:
                line += f"  [then the real context: {c.reset['messages']} messages]"
            if c.real_boundary:
                line += f"  [REAL {_real_label(c.real_boundary)} compaction, " \
                        f"{pre_tokens_text(c.real_boundary.get('pre_tokens'))}]"
            print(line)
            quiet = {rec.layer for rec in c.layers if rec.role in (MICRO, SNIP)}      # routine, unless it summarised
            for event in c.events:
                if event.split(":", 1)[0] not in quiet or c.summaries:
                    print(f"{'':>11}- {event}")
            for error in c.errors:
                print(f"{'':>11}! {error}")
        print(f"compactions {tot['compactions']}, summaries {tot['summaries']}, peak {tot['peak_tokens']:,} tokens, "
              f"total input {tot['total_input_tokens']:,} tokens, messages dropped {tot['messages_dropped']}, "
              f"tool results dropped {tot['tool_results_dropped']}")
        reached = tot.get("iteration_cap_reached_at")
        if tot.get("iteration_cap") is not None:      # only strategies whose agent loop has an iteration budget
            print(f"iteration budget (cap {tot['iteration_cap']} per user turn): {tot['iterations_used']} used over "
                  f"{tot['user_turns']} user turn(s), at most {tot['most_iterations_in_a_turn']} in one; "
                  f"{tot['iterations_refunded']} refunded by compaction restarts"
                  + (f"; the cap stops a turn's loop at call {reached}" if reached is not None else ""))
        for b in res.boundary_report():
            from compactscope.core.replay.follow import boundary_words
            sim = boundary_words(b)
            print(f"real {_real_label(b)} compaction before call {b['real_call']} "
                  f"({pre_tokens_text(b['real_pre_tokens'])}): {sim}")
        div = divergence.report(res, conv)
        for r in div["compactions"]:
            if r["diverges"]:
                print("! " + divergence.warning(r))
        from compactscope.core.replay.evidence import untrusted_words
        for u in div["untrusted"]:
            print("! " + untrusted_words(u))
        if others:
            print()
            print(format_table([res] + others))
        return _exit_code(res, others)

    p.set_defaults(fn=cmd_replay)


def _real_label(ev: dict) -> str:
    """How a real compaction is named: its recorder and its trigger, those the file gives (Claude Code
    "auto"/"manual", Inspect "threshold"/"forced"; hermes records none)."""
    return " ".join(str(ev[k]) for k in ("kind", "trigger") if ev.get(k)) or "recorded"
