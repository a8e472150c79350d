"""``compactscope events | retention | watch FILE``: what happened in a conversation, what each compaction kept and
lost, and where a term went.

    compactscope events FILE [--json] [--strategy S]      real and simulated compactions, layer changes, findings,
                                                          divergences and compaction loops, in call order
    compactscope retention FILE [--json] [--strategy S]   per compaction: the paths, requests, tools, errors and
                                                          recurring names it replaced, each kept or lost
    compactscope watch FILE TERM [--json] [--strategy S]  the real contexts and calls that hold TERM, what removed it

Headless: never imports Qt. The simulated compactions are the replay's of the file's own strategy (or --strategy).
"""
from __future__ import annotations


class _Ctx:
    """What the commands need from app/cli (passed to ``register``)."""

    def __init__(self, load, make_engine, print_json, CliError):
        self.load, self.make_engine, self.print_json, self.CliError = load, make_engine, print_json, CliError

    def prepare(self, args):
        from compactscope.app.cli_common import join_partner
        from compactscope.core.analysis.session_events import replay_for
        result, conv = self.load(args.file, args.conversation)
        conv = join_partner(args, conv)
        engine = self.make_engine(args, args.strategy, conversation=conv)
        return result, conv, replay_for(conv, engine), engine     # the engine says which strategy and why


def _exit(res, what: str) -> int:
    """3 (with the one-line report) when a layer raised in the replay, 2 when a plugin failed, else 0."""
    from compactscope.app.cli_common import internal_steps_report
    return internal_steps_report([lr for c in res.calls for lr in c.layers], f"{what}: ")


def _header(args, result, conv, res, engine) -> None:
    from compactscope.app.cli_common import print_inferred
    print(f"{args.file}: {result.format}, {len(conv.messages)} messages, {len(res.calls)} model calls, "
          f"{len(conv.events)} real compaction(s)")
    print_inferred(engine)


def register(sub, add_common, add_engine, make_engine, load, print_json, CliError) -> None:
    ctx = _Ctx(load, make_engine, print_json, CliError)
    commands = (
        ("events", cmd_events, False, "what happened, in call order: real and simulated compactions, layer changes, "
         "API findings, divergences, compaction loops", 'one JSON object: {"events": [{"kind", "call", "segment", '
         '"text", ...}]}'),
        ("retention", cmd_retention, False, "what each real and simulated compaction kept and lost: paths, requests, "
         "tools, errors, recurring names", 'one JSON object: {"compactions": [{"kind", "call", "segment", "kept": '
         '[...], "lost": [...]}]}'),
        ("watch", cmd_watch, True, "follow a term (a path, a tool id, a phrase) through the history: where it is, "
         "what removed it", 'one JSON object: {"term", "contexts": [{"segment", "present"}], "lost_at": [{"call", '
         '"by"}]}'),
    )
    for name, fn, takes_term, what, json_help in commands:
        p = sub.add_parser(name, help=what)
        add_common(p)
        if takes_term:
            p.add_argument("term", metavar="TERM", help="the text to follow, as the file holds it (case-sensitive)")
        add_engine(p)
        p.add_argument("--json", action="store_true", help=json_help)
        p.set_defaults(fn=lambda args, fn=fn: fn(args, ctx))

def cmd_events(args, ctx: _Ctx) -> int:
    from compactscope.app.cli_common import warn_choice
    from compactscope.core.analysis.session_events import events_json, history_events
    result, conv, res, engine = ctx.prepare(args)
    events = history_events(conv, res)
    if args.json:
        warn_choice(engine)
        ctx.print_json(events_json(events))
        return _exit(res, "events")
    _header(args, result, conv, res, engine)
    counts: dict = {}
    for e in events:
        where = "end" if e.call is None else f"call {e.call}"
        print(f"{where:>10}  segment {e.segment}  {e.kind:<21} {e.text}")
        counts[e.kind] = counts.get(e.kind, 0) + 1
    print(f"{len(events)} event(s): " + (", ".join(f"{n} {k}" for k, n in counts.items()) or "none"))
    return _exit(res, "events")


def cmd_retention(args, ctx: _Ctx) -> int:
    from compactscope.app.cli_common import warn_choice
    from compactscope.core.analysis.retention import retention, retention_json
    result, conv, res, engine = ctx.prepare(args)
    found = retention(conv, res)
    if args.json:
        warn_choice(engine)
        ctx.print_json(retention_json(found))
        return _exit(res, "retention")
    _header(args, result, conv, res, engine)
    for r in found:
        where = "at the end of the file" if r.call is None else f"before call {r.call}"
        print(f"{r.kind} compaction {where} (segment {r.segment}): {r.replaced_messages} message(s) replaced, "
              f"{len(r.kept)} item(s) kept, {len(r.lost)} lost")
        last = r.last_request()
        if last is not None:
            print(f"  the last request {'KEPT' if last[1] else 'LOST'}: {_one_line(last[0].text)}")
        for word, items in (("kept", r.kept), ("LOST", r.lost)):
            for it in items:
                print(f"  {word:<5} {it.kind:<10} {_one_line(it.text)}")
    if not found:
        print("no compaction, real or simulated")
    return _exit(res, "retention")


def cmd_watch(args, ctx: _Ctx) -> int:
    from compactscope.app.cli_common import warn_choice
    from compactscope.core.analysis.watch import watch
    if not args.term:
        raise ctx.CliError("watch: the term is empty")
    result, conv, res, engine = ctx.prepare(args)
    w = watch(conv, args.term, res)
    if args.json:
        warn_choice(engine)
        ctx.print_json(w.to_json())
        return _exit(res, "watch")
    _header(args, result, conv, res, engine)
    print(f"term: {args.term!r}")
    for c in w.contexts:
        if not c.present:
            print(f"  segment {c.segment}: absent")
        elif c.first_call is None:
            print(f"  segment {c.segment}: present from message {c.first_message}, sent to no call")
        else:
            print(f"  segment {c.segment}: present from message {c.first_message}, in the contexts of calls "
                  f"{c.first_call}-{c.last_call}")
    sim = ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in w.simulated) or "none"
    print(f"  in the {w.strategy} replay's context at calls: {sim}")
    for x in w.lost_at:
        print(f"  removed before call {x.call} by {x.by}")
    if not w.lost_at:
        print("  never removed")
    return _exit(res, "watch")


def _one_line(text: str, n: int = 150) -> str:
    s = " ".join(text.split())
    return s if len(s) <= n else s[:n - 1] + "…"

