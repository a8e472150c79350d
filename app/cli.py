"""The ``compactscope`` command.

Headless subcommands (never import Qt, start fast):
  run FILE      run a strategy's pipeline once and print every step
  check FILE    print the API-validity findings; exit 1 when the API would reject the list
  info FILE     what the file holds: format, conversations, tool pairs, compaction events, usage
  replay FILE   run the pipeline before every model call over the conversation's life
  fleet [PATH]  replay every session of an archive (default ~/.claude/projects) into a Parquet file
  fleet-report  that file as a self-contained HTML page
  report FILE   write a self-contained HTML (or Markdown) report: every layer, the summaries, the replay
  strategies    list the strategies and their parameters
  cache         what the workspace cache holds; --prune to the cap, --clear to empty it
  lessons       the bundled lessons (name, then title); lesson NAME --check | --export DIR | [--slide K]
  events FILE   what happened, in call order: real and simulated compactions, layer changes, findings, loops
  retention FILE  what each compaction kept and lost (paths, requests, tools, errors, recurring names)
  watch FILE TERM  the real contexts and calls that hold TERM, and what removed it

Anything else opens the window: ``compactscope [FILE] [options]`` (``compactscope --help`` lists both).
Exit codes, the same for every subcommand: 0 fine; 1 the API would reject the list (check); 2 bad input or
usage (a file that cannot be loaded, a wrong option, a plugin strategy that raised or returned no message list);
3 an internal error (a bug in Compactscope): one line on stderr says what failed and names the file holding
the details.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from compactscope.app.cli_common import (
    EXIT_BAD_INPUT, EXIT_OK, EXIT_REJECTED, CliError, add_context, choice_json, inferred_json,
    internal_steps_report, join_partner, load_file, print_inferred, report_internal, warn_choice,
)

HEADLESS = ("run", "check", "info", "replay", "report", "strategies", "proxy", "record", "fleet", "fleet-report",
            "cache", "lessons", "lesson", "events", "retention", "watch")
HELP_INTRO = ("Compactscope: the context compaction of LLM agents, layer by layer. A subcommand runs headless "
              "('compactscope SUBCOMMAND --help' for its options); without one, 'compactscope [FILE] [options]' "
              "opens the window (its options follow the subcommands).")


def _print_json(obj) -> None:
    """One strict JSON document on stdout (a lone surrogate or NaN anywhere cannot break the output),
    written as it is encoded: a trace of 100k messages is never one string in memory."""
    from compactscope.core.files.jsonout import write_json
    write_json(obj, sys.stdout.write)
    sys.stdout.write("\n")


def _engine(args, strategy_name: str, params: dict | None = None, conversation=None):
    """The Engine the arguments describe. ``params``: these overrides instead of ``--set``/``--variant``
    (and no ``--order``), e.g. a ``--compare`` run's. With ``conversation``, the strategy's session-inferred
    defaults apply under those overrides (``engine.inferred`` says what and why; ``--no-infer`` turns it off)."""
    from compactscope.core import strategies
    from compactscope.core.pipeline.engine import Engine
    from compactscope.core.summarizers import make_summarizer
    from compactscope.core.files.workspace import Workspace
    own = params is None
    # no --strategy: the file's own pipeline (strategies.choose_strategy, the one rule of every command)
    choice = strategies.choose_strategy(conversation, strategy_name)
    try:
        strategy = strategies.get(choice.name)
    except KeyError as e:
        raise CliError(str(e.args[0])) from None
    if own:
        try:
            assignments = getattr(args, "set", None)
            if assignments:             # (its module only when there is a --set: start-up, issue 27)
                from compactscope.core.strategies.spec import parse_assignments
                params = parse_assignments(assignments)
            else:
                params = {}
        except ValueError as e:
            raise CliError(str(e)) from None
        if getattr(args, "variant", None):
            params["variant"] = args.variant
    inferred = strategies.Inferred() if getattr(args, "no_infer", False) \
        else strategies.infer_params(strategy, conversation)
    user = dict(params or {})
    params = inferred.apply(params)
    try:
        resolved = strategy.resolve(params)
    except (KeyError, ValueError) as e:
        raise CliError(str(e.args[0] if e.args else e)) from None
    try:
        summarizer = make_summarizer(getattr(args, "summarizer", None))
    except ValueError as e:
        raise CliError(str(e)) from None
    order = [s.strip() for s in args.order.split(",")] if own and getattr(args, "order", None) else None
    workspace = Workspace(_workdir(args.workdir)) if getattr(args, "workdir", None) else None
    tokens = _token_estimator(getattr(args, "tokens", None))
    try:
        engine = Engine(strategy, resolved, workspace=workspace, summarizer=summarizer, order=order, tokens=tokens)
    except KeyError as e:
        raise CliError(str(e.args[0])) from None
    engine.inferred, engine.user_params, engine.choice = inferred, user, choice
    return engine


def _workdir(path: str):
    from compactscope.core.files.workspace import WorkspaceError, check_workdir
    try:
        return check_workdir(path)
    except WorkspaceError as e:
        raise CliError(str(e)) from None


def _token_estimator(spec: str | None):
    from compactscope.core.pipeline.size import CharsPerToken, make_anthropic_counter
    if not spec:
        return None
    if spec in ("chars4", "chars/4"):
        return CharsPerToken()
    if spec == "anthropic" or spec.startswith("anthropic:"):
        try:
            return make_anthropic_counter(spec.partition(":")[2] or None)
        except ValueError as e:
            raise CliError(str(e)) from None
    raise CliError(f"unknown token estimator {spec!r}: use chars4 or anthropic[:MODEL]")


def _context(args, conv):
    """The real API context ``--segment``/``--call`` name (default: the last segment)."""
    from compactscope.core.model.contexts import ContextError, real_context
    try:
        return real_context(conv, getattr(args, "segment", None), getattr(args, "call", None))
    except ContextError as e:
        raise CliError(f"{args.file}: {e}") from None


def _context_line(ctx) -> str:
    c = (ctx.extra or {}).get("context") if isinstance(ctx.extra, dict) else None
    if not c:
        return ""
    return (f"context: {c['label']} (messages {c['start']}..{c['end'] - 1} of the {c['history_messages']}-message "
            f"history; {c['segments']} segment(s): --segment S or --call N picks another)")


def cmd_run(args) -> int:
    result, history = load_file(args.file, args.conversation)
    history = join_partner(args, history)
    engine = _engine(args, args.strategy, conversation=history)      # choice and inference read the whole history
    conv = _context(args, history)
    layers = None
    if args.reactive or args.compact_tool:
        extra = engine.strategy.reactive_layer if args.reactive else engine.strategy.compact_tool_layer
        if not extra:
            raise CliError(f"strategy {engine.strategy.name} has no "
                           f"{'reactive compaction' if args.reactive else 'compact tool'}")
        layers = [layer.name for layer in engine.layers] + [extra]
    # a real context is run as it was sent; a whole history (a conversation never split, --call/--segment not
    # given) each message once: segments that repeat the compacted context (Inspect, hermes) are not run twice
    from compactscope.core.model.contexts import is_context, whole_history_note
    messages = conv.messages if is_context(conv) else conv.history()
    trace = engine.run(messages, conversation=conv, layers=layers)
    from compactscope.core.analysis.explain import lost_results
    if args.json:
        d = trace.to_json(include_messages=not args.no_messages, shared=args.shared, lazy=True)
        warn_choice(engine)
        out = {"strategy": d["strategy"], "strategy_choice": choice_json(engine), "params": d["params"],
               "input": {"path": str(Path(args.file)), "format": result.format, "messages": len(messages),
                         "conversation": args.conversation, "dialect": conv.dialect,
                         "context": (conv.extra or {}).get("context"),
                         "whole_history_note": whole_history_note(conv) or None},
               "inferred": inferred_json(engine),
               "estimators": d["estimators"], "order": d["order"], "steps": d["steps"],
               "findings": d["findings"], "input_findings": d["input_findings"],
               "lost": [{"step": x.step, "layer": trace.steps[x.step].layer, "tool_id": x.tool_id, "chars": x.chars,
                         "message": x.message, "budget_after": x.budget_after} for x in lost_results(trace)],
               "workdir": str(engine.workspace.root)}
        if "input_messages" in d:
            out["input_messages"] = d["input_messages"]
        _print_json(out)
        return internal_steps_report(trace.steps)
    copies = len(conv.messages) - len(messages)
    print(f"{args.file}: {result.format}, {len(messages)} messages"
          + (f" (without the {copies} that compactions re-sent)" if copies else ""))
    if _context_line(conv):
        print(_context_line(conv))
    if whole_history_note(conv):
        print(f"note: {whole_history_note(conv)}")
    joined = (conv.extra or {}).get("joined")
    if joined:
        lent = " and ".join(w for w, ok in (("system prompt", joined["system_from_other"]),
                                             ("tools", joined["tools_from_other"])) if ok) or "nothing new"
        print(f"joined with {joined['source']} ({joined['reason']}): {lent} from it")
    print_inferred(engine)
    print(f"sizes: {trace.size_estimator}; tokens: {trace.token_estimator}")
    from compactscope.app.cli_lang import run_header, run_row
    print(run_header())
    for s in trace.steps:
        print(run_row(s, engine.strategy))
        lost = {x.edit: x for x in lost_results(trace) if trace.steps[x.step] is s}
        for k, e in enumerate(s.edits):
            print(f"{'':<22}- {e.text}")
            if k in lost:
                print(f"{'':<22}  {lost[k].text}")
    findings = trace.final_findings
    print(f"findings after the last layer: {len(findings)}")
    for f in findings[:50]:
        print(f"  {f}")
    return internal_steps_report(trace.steps)


def cmd_check(args) -> int:
    from compactscope.core.analysis.checker import check_conversation, rejected
    result, conv = load_file(args.file, args.conversation)
    conv = join_partner(args, conv)
    if args.strategy:
        return _check_output(args, result, conv)
    if getattr(args, "segment", None) is not None or getattr(args, "call", None) is not None:
        conv = _context(args, conv)      # one real context; without: every context of the history
    findings = check_conversation(conv)
    if args.json:
        _print_json({"path": args.file, "format": result.format, "messages": len(conv.messages),
                     "context": (conv.extra or {}).get("context"),
                     "findings": [f.to_json() for f in findings], "rejected": rejected(findings)})
    else:
        for f in findings:
            meta = conv.meta_at(f.message)
            where = f" ({meta.provenance})" if meta.provenance and meta.provenance.line else ""
            print(f"{f}{where}")
        segs = f" in {len(conv.segments)} contexts split at real compactions" if len(conv.segments) > 1 else ""
        if _context_line(conv):
            segs = "; " + _context_line(conv)
        print(f"{args.file}: {len(conv.messages)} messages, {len(findings)} finding(s)"
              + (": the API would reject this list" if rejected(findings) else "") + segs)
    return EXIT_REJECTED if rejected(findings) else EXIT_OK


def _check_output(args, result, conv) -> int:
    """``check FILE --strategy S``: would the API accept what the strategy leaves? Findings of its
    output (and of every step that failed), exit 1 when rejected."""
    from compactscope.core.analysis.checker import rejected
    engine = _engine(args, args.strategy, conversation=conv)
    conv = _context(args, conv)          # a real context, as run takes it (default: the last segment)
    trace = engine.run(conv.messages, conversation=conv)
    findings = trace.final_findings
    errors = [{"layer": s.layer, "error": s.error} for s in trace.steps if s.error]
    if args.json:
        warn_choice(engine)
        _print_json({"path": args.file, "format": result.format, "messages": len(conv.messages),
                     "strategy": trace.strategy, "strategy_choice": choice_json(engine),
                     "output_messages": len(trace.output),
                     "findings": [f.to_json() for f in findings], "errors": errors, "rejected": rejected(findings)})
    else:
        print_inferred(engine)
        for e in errors:
            print(f"{e['layer']} failed: {e['error']}")
        for f in findings:
            print(f)
        print(f"{args.file}: {len(conv.messages)} messages -> {len(trace.output)} after {engine.strategy.title}, "
              f"{len(findings)} finding(s)" + (": the API would reject this list" if rejected(findings) else ""))
    return 1 if rejected(findings) else 0


def cmd_info(args) -> int:
    from compactscope.core.analysis.info import describe
    from compactscope.core.loaders import LoadError, load
    try:
        result = load(args.file)
    except LoadError as e:
        raise CliError(str(e)) from None
    info = describe(result)
    if args.json:
        _print_json(info)
        return 0
    from compactscope.core.i18n.english import count
    print(f"{info['path']}: {info['format']}, {count(len(info['conversations']), 'conversation')}")
    for c in info["conversations"]:
        copies = f" ({c['copies']} of them re-sent by compactions)" if c.get("copies") else ""
        contexts = f" in {len(c['segments'])} contexts" if len(c.get("segments") or []) > 1 else ""
        print(f"  [{c['index']}] {c['title'] or '(untitled)'}: {count(c['messages'], 'message')}{copies}{contexts} "
              f"({c['dialect']}), {count(c['tool_pairs'], 'tool pair')} ({c['complete_pairs']} complete)"
              + (f", model {c['model']}" if c.get("model") else ""))
        if c.get("agent"):
            a = c["agent"]
            print(f"      written by {a['name']} {a.get('version') or a.get('versions') or ''}".rstrip()
                  + (f" ({a['version_note']})" if a.get("version_note") else ""))
        for ev in c["events"]:
            what = " ".join(str(ev[k]) for k in ("kind", "type", "mode", "strategy") if ev.get(k))
            held = [f"{k}={ev[f]}" for k, f in (("trigger", "trigger"), ("preTokens", "pre_tokens"))
                    if ev.get(f) is not None]
            lacks = [k for k, f in (("trigger", "trigger"), ("preTokens", "pre_tokens")) if ev.get(f) is None]
            line = f"      compaction at message {ev['message_index']}: {what}" + "".join(" " + h for h in held) \
                + (f" (the recording holds no {' or '.join(lacks)})" if lacks else "")
            if ev.get("post_tokens") is not None:
                line += f" postTokens={ev['post_tokens']}"
            if ev.get("messages_before") is not None:
                line += f", messages {ev['messages_before']} -> {ev.get('messages_after')}"
            if ev.get("summary_index") is not None:
                line += f", summary at message {ev['summary_index']}"
            sc = ev.get("summary_call")
            if sc and "input_tokens" in sc:
                line += f", summary call {sc['input_tokens']:,} in / {sc['output_tokens']:,} out"
            elif sc:
                line += f", summary calls share one usage row ({sc['shared_by']} calls)"
            print(line)
        if c.get("usage"):
            u = c["usage"]
            print(f"      usage: {u['calls']} calls, input {u['input_tokens']:,}, output {u['output_tokens']:,}, "
                  f"cache write {u['cache_creation_input_tokens']:,}, cache read {u['cache_read_input_tokens']:,}, "
                  f"peak context {u['peak_context_tokens']:,}")
        if c["findings"]:
            print(f"      findings: {len(c['findings'])} (" + ", ".join(
                f"{k} x{v}" for k, v in c["finding_counts"].items()) + ")")
    for p in info["problems"]:
        print(f"  problem: {p}")
    main = result.conversations[0] if result.conversations else None
    if main is not None and not (main.system and main.tools):
        from compactscope.core.model.join import partners
        for d in partners(args.file, main)[:3]:
            lends = " and ".join(w for w, ok in (("a system prompt", d["has_system"]), ("tools", d["has_tools"]))
                                 if ok)
            print(f"  the same session ({d['reason']}): {d['path']}"
                  + (f" holds {lends}: add --with {d['path']} to run/replay/check" if lends else ""))
    return 0


def _strategy_descriptions(specs: list[str]) -> list[dict]:
    """What ``strategies`` lists: the strategies ``specs`` name, else every installed one (the built-ins from
    ``catalogue.json`` without importing their layers, then those installed packages register)."""
    from compactscope.core import strategies
    from compactscope.core.strategies.catalogue import describe, stored
    described: list[dict] | None
    names: list[str]
    if specs:
        described, names = [], list(specs)
    else:
        described = stored()
        if described is None or [d["name"] for d in described] != strategies.builtin():
            described, names = [], strategies.available()                 # no usable file: each described live
        else:
            names = strategies.available_installed()
    for name in names:
        try:
            s = strategies.get(name)
        except KeyError as e:
            raise CliError(str(e.args[0] if e.args else e)) from None
        described.append(describe(s, strategies.source(s)))
    return described


def cmd_strategies(args) -> int:
    from compactscope.core import strategies
    from compactscope.core.i18n import english as words
    out = _strategy_descriptions(args.specs)
    if args.json:
        _print_json(out)
        return 0
    if args.markdown:
        from compactscope.core.strategies.reference import parameters_markdown
        print(parameters_markdown([strategies.get(s["name"]) for s in out]), end="")
        return 0
    for s in out:
        from compactscope.core.i18n.catalog import translate
        print(f"{s['name']}: {translate(s['title'])}\n  {s['description']}\n  from: {s['source']}; dialect: {s['dialect']}\n"
              f"  layers: {' -> '.join(s['layers'])}")
        for p in s["params"]:
            print(f"    {p['name']} = {words.value(p['default'])}: {p['help']}")
        if s.get("not_reproduced"):
            print(f"  not reproduced: {s['not_reproduced']}")
    return 0


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="a transcript file (format detected from its content)")
    p.add_argument("--with", dest="with_file", metavar="OTHER",
                   help="the other view of the same session (a proxy recording of a Claude Code session file, or "
                        "the reverse): its system prompt and tools are used where FILE has none")
    p.add_argument("--conversation", type=int, default=0, metavar="N",
                   help="which conversation of the file (0 = the main one)")


STRATEGY_HELP = ("s08, claude_code, hermes, inspect_edit|trim|summary, a strategy an installed package registers, or "
                 "your own compactor: PATH.py:FUNCTION or MODULE:NAME (see docs/plugins.md). Default: the file's own "
                 "pipeline: claude_code for a Claude Code session, hermes for a Hermes session or database, the "
                 "inspect_* strategy an Inspect log's compaction events name, s08 for anything else")


def _add_engine(p: argparse.ArgumentParser) -> None:
    p.add_argument("--strategy", default=None, metavar="SPEC", help=STRATEGY_HELP)
    p.add_argument("--set", action="append", metavar="NAME=VALUE", help="override a strategy parameter")
    p.add_argument("--no-infer", action="store_true",
                   help="do not read defaults from the session (e.g. Claude Code's version picks its threshold "
                        "rule); the strategy's documented defaults apply")
    p.add_argument("--variant", choices=("guarded", "readme"),
                   help="readme = the seed README's snip: both guards, but no overlap check and no bounds checks")
    p.add_argument("--order", help="comma-separated layer order, e.g. micro_compact,tool_result_budget,...")
    p.add_argument("--summarizer", default="offline", help="offline (default), anthropic[:MODEL] or fixed:TEXT")
    p.add_argument("--workdir", help="folder for persisted results and transcripts (default: a per-session "
                                     "folder in the user cache)")
    p.add_argument("--tokens", default=None, help="token estimator: the strategy's own (default), chars4, or "
                                                  "anthropic[:MODEL] (count_tokens; needs ANTHROPIC_API_KEY)")
    _add_plugin_limits(p)


def _add_plugin_limits(p: argparse.ArgumentParser) -> None:
    p.add_argument("--plugin-timeout", metavar="SECONDS", default=None,
                   help="a plugin call that takes longer is stopped and is its layer's error (default 60; "
                        "COMPACTSCOPE_PLUGIN_TIMEOUT)")
    p.add_argument("--plugin-memory", metavar="MB", default=None,
                   help="the memory a plugin's process may take (default 4096; COMPACTSCOPE_PLUGIN_MEMORY)")


def _apply_plugin_limits(args) -> None:
    timeout, memory = getattr(args, "plugin_timeout", None), getattr(args, "plugin_memory", None)
    if timeout is None and memory is None:
        return
    from compactscope.core.strategies import plugin_worker as pw
    try:
        pw.check_limits(timeout, memory)
    except ValueError as e:
        raise CliError(str(e)) from None
    if timeout is not None:
        os.environ[pw.TIMEOUT_ENV] = str(float(timeout))
    if memory is not None:
        os.environ[pw.MEMORY_ENV] = str(int(float(memory)))


# the subcommands the cli_* modules register (the others are this module's own)
_REGISTERED = {"replay": "cli_replay", "report": "cli_report", "proxy": "cli_proxy", "record": "cli_proxy",
               "fleet": "cli_fleet", "fleet-report": "cli_fleet", "cache": "cli_cache", "lessons": "cli_lessons",
               "lesson": "cli_lessons", "events": "cli_events", "retention": "cli_events", "watch": "cli_events"}
_MODULE_ORDER = ("cli_replay", "cli_report", "cli_proxy", "cli_fleet", "cli_cache", "cli_lessons", "cli_events")


class _Discarded:
    """What ``_OnlyOne`` hands out for a subcommand that is not the one run: every call (``add_argument``,
    ``set_defaults``, ``add_argument_group``...) is accepted and forgotten, and answers this same object, so
    the options of the others are neither built nor checked (an ``ArgumentParser`` costs gettext look-ups)."""

    def __getattr__(self, name: str):
        return self._ignore

    def _ignore(self, *args, **kw) -> _Discarded:
        return self


class _OnlyOne:
    """The subparsers action of ``build_parser(only=NAME)``: the parser of NAME is added as usual, any other is
    a ``_Discarded`` (so a command's start pays neither for the others' options nor their modules)."""

    def __init__(self, sub, only: str):
        self.sub, self.only = sub, only

    def add_parser(self, name: str, **kw) -> Any:
        if name == self.only:
            return self.sub.add_parser(name, **kw)
        return _Discarded()

    @property
    def choices(self):
        return self.sub.choices


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand; with ``only``, of that one alone (what ``headless`` runs: the same
    options and help for it, without building or importing the other commands)."""
    ap = argparse.ArgumentParser(prog="compactscope", description=HELP_INTRO,
                                 epilog="Exit codes: 0 fine, 1 the API would reject the list (check), 2 bad input or "
                                        "usage (a plugin strategy that failed too), 3 an internal error (one line on "
                                        "stderr names the file with the details).")
    real_sub = ap.add_subparsers(dest="cmd", required=True)
    sub: Any = real_sub if only is None else _OnlyOne(real_sub, only)
    p = sub.add_parser("run", help="run a strategy's pipeline once over a real context of FILE")
    _add_common(p)
    add_context(p, "the last segment (what the agent would send next)")
    _add_engine(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--no-messages", action="store_true", help="with --json: message counts instead of lists")
    p.add_argument("--shared", action="store_true",
                   help="with --json: the input messages once (input_messages); each step lists only the messages "
                        "it made (new: index -> message), the others are found through its origin map")
    p.add_argument("--reactive", action="store_true",
                   help="then simulate the API's prompt-too-long error: run reactive compaction on the result")
    p.add_argument("--compact-tool", action="store_true",
                   help="then run the compact tool path (the last assistant message called `compact`)")
    p.set_defaults(fn=cmd_run)
    p = sub.add_parser("check", help="would the API accept FILE's messages (or, with --strategy, what the strategy "
                                     "leaves of them)? exit 1 if not")
    _add_common(p)
    add_context(p, "every context of the history, each as the API saw it")
    p.add_argument("--json", action="store_true")
    p.add_argument("--strategy", metavar="SPEC", help="check the output of this strategy (a name or a plugin "
                                                     "PATH.py:FUNCTION) instead of the file's own messages")
    p.add_argument("--set", action="append", metavar="NAME=VALUE", help="with --strategy: override a parameter")
    p.add_argument("--summarizer", default="offline", help="with --strategy: offline (default), anthropic[:MODEL] "
                                                          "or fixed:TEXT")
    _add_plugin_limits(p)
    p.set_defaults(fn=cmd_check)
    p = sub.add_parser("info", help="what FILE holds")
    p.add_argument("file")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=cmd_info)
    p = sub.add_parser("strategies", help="list strategies (built-in, installed, or the plugins named) and parameters")
    p.add_argument("specs", nargs="*", metavar="SPEC", help="describe these (e.g. a plugin PATH.py:FUNCTION) "
                                                           "instead of every installed strategy")
    p.add_argument("--json", action="store_true")
    p.add_argument("--markdown", action="store_true", help="the parameter reference as Markdown (docs/parameters.md)")
    p.set_defaults(fn=cmd_strategies)
    import importlib
    for name in _MODULE_ORDER:
        if only is None or _REGISTERED.get(only) == name:
            mod = importlib.import_module(f"compactscope.app.{name}")
            mod.register(sub, _add_common, _add_engine, _engine, load_file, _print_json, CliError)
    from compactscope.app.cli_lang import add_lang
    add_lang(real_sub)               # --lang on every text command (app/cli_lang.py)
    return ap


def _tolerant_streams() -> None:
    """Text that cannot be encoded for the terminal (a lone surrogate, a character the locale lacks) is
    replaced instead of stopping the command half-way through its output."""
    from compactscope.core.files.safeio import TEXT_ERRORS
    for stream, errors in ((sys.stdout, TEXT_ERRORS), (sys.stderr, "backslashreplace")):
        reconfigure = getattr(stream, "reconfigure", None)          # (a TextIOWrapper's; a replaced stream
        try:                                                       # may lack it)
            if reconfigure is not None:
                reconfigure(errors=errors)
        except ValueError:
            pass


def _is_workspace_error(e: BaseException) -> bool:
    """Whether ``e`` is a ``WorkspaceError`` (its module imported only by a command that uses a workspace: an
    error of that class cannot come from a command that never imported it)."""
    mod = sys.modules.get("compactscope.core.files.workspace")
    return mod is not None and isinstance(e, mod.WorkspaceError)


def headless(argv: list[str]) -> int:
    ap = build_parser(argv[0] if argv and argv[0] in HEADLESS else None)
    args = ap.parse_args(argv)
    _tolerant_streams()
    from compactscope.app import cli_lang
    try:
        args.lang = cli_lang.resolve(args)
    except argparse.ArgumentTypeError as e:
        ap.error(str(e))
    cli_lang.install(args.lang, cli_lang.wants_json(args))
    try:
        _apply_plugin_limits(args)
        return args.fn(args)
    except CliError as e:
        print(f"compactscope: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        return EXIT_OK
    except KeyboardInterrupt as e:
        from compactscope.core.strategies.plugin_worker import PluginInterrupted
        if isinstance(e, PluginInterrupted):
            print(f"compactscope: the plugin {e}: the command stopped there, as Ctrl+C would stop it (exit 130)",
                  file=sys.stderr)
        return 130
    except Exception as e:  # a bug: one line and where the traceback is, never the traceback itself
        if _is_workspace_error(e):              # a workdir that filled up or changed mid-run is bad input too
            print(f"compactscope: {e}", file=sys.stderr)
            return EXIT_BAD_INPUT
        import traceback
        return report_internal(f"{type(e).__name__}: {e}", traceback.format_exc())
    finally:
        cli_lang.uninstall()


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and (argv[0] in HEADLESS or argv[0] in ("-h", "--help")):
        if argv[0] in ("-h", "--help"):
            from compactscope.app.gui import build_parser as window_parser     # Qt-free
            build_parser().print_help()
            print("\n" + "-" * 20 + " the window (no subcommand) " + "-" * 20 + "\n")
            window_parser().print_help()
            return 0
        return headless(argv)
    try:
        from compactscope.app.gui import main as gui_main
    except ImportError as e:
        print(f"compactscope: the window cannot start ({e}); the headless commands still work: "
              f"compactscope run|check|info FILE", file=sys.stderr)
        return 2
    return gui_main(argv)


if __name__ == "__main__":
    sys.exit(main())
