"""Where the simulated Claude Code auto-compaction lands next to the real one, per Claude Code version.

Replays every Claude Code session under FOLDER (default: the shared corpus) with the claude_code
strategy and its session-inferred defaults (what a user gets with no --set), in both modes (following
reality, the default replay, and the free-running what-if, --free), and prints per Claude Code version:

* the first real auto compaction of each file: how many have their paired simulated compaction (as
  ``replay --json``'s divergence block pairs them) within +-1 model call (target: >= 95%);
* the later real auto compactions, apart (target: >= 85% within +-1 call);
* simulated compactions paired with two real ones (target: none);
* files that never compacted: how many got a simulated auto-compaction anyway (target: <= 1 in 80);
* the median error of the replay's estimate just before the pair against the ``preTokens`` Claude Code counted.

With ``--excerpts K`` it also cuts every session that has a real compaction at K user records spread over the
stretch before its first compaction, as files that start mid-session (what a session excerpt looks like:
the first record's parent is not in the file), and measures those too: the same rule on histories it has
not seen from their start. It also cuts files that end a few user records before the first compaction (from
the start and from each excerpt's start): sessions that never compacted, where any simulated compaction is a
false one.

    python bench/bench_cc_accuracy.py [FOLDER ...] [--no-infer] [--set NAME=VALUE ...] [--excerpts K]
                                      [--mode both|follow|free] [-v]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from compactscope.core.analysis import divergence  # noqa: E402
from compactscope.core.loaders import LoadError, load  # noqa: E402
from compactscope.core.pipeline.engine import Engine  # noqa: E402
from compactscope.core.replay import replay  # noqa: E402
from compactscope.core.replay.pairing import pairs  # noqa: E402
from compactscope.core.strategies import infer_params  # noqa: E402
from compactscope.core.strategies.claude_code_versions import fmt_version, parse_version  # noqa: E402
from compactscope.core.files.workspace import Workspace  # noqa: E402

DEFAULT = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"


def sessions(folders: list[Path]):
    for folder in folders:
        files = [folder] if folder.is_file() else sorted(folder.rglob("*.jsonl"))
        for f in files:
            if "/subagents/" in str(f):
                continue
            conv = _session(f)
            if conv is not None:
                yield f, conv


def _session(path: Path):
    """The main conversation of a Claude Code session file, or None (another format, empty, unreadable)."""
    try:
        r = load(path)
    except LoadError:
        return None
    return r.main if r.format == "claude-code" and r.main.messages else None


def excerpts(sessions_found, folder: Path, k: int):
    """(path, conversation) of excerpts cut from each session with a real compaction: the file from the i-th
    user record on, for k records spread over the stretch before the first compaction."""
    for f, conv in sessions_found:
        if not conv.events or k <= 0:
            continue
        lines = Path(f).read_text(encoding="utf-8").splitlines(True)
        first = next((i for i, line in enumerate(lines) if '"compact_boundary"' in line), None)
        for start in _picks(lines, first, k):
            out = folder / f"{Path(f).stem}-from-line{start + 1}.jsonl"
            out.write_text("".join(lines[start:]), encoding="utf-8")
            conv = _session(out)
            if conv is not None:
                yield out, conv


def _picks(lines: list, first: int | None, k: int) -> list[int]:
    users = [i for i in range(first or 0) if '"type":"user"' in lines[i].replace(" ", "")]
    return sorted({users[int(j * (len(users) - 1) / max(1, k - 1))] for j in range(k)} - {0}) if users else []


def heads(sessions_found, folder: Path, k: int, margin: int = 3):
    """(path, conversation) of files that never compacted, cut from each session with a real compaction: from
    its start and from each excerpt's start up to ``margin`` user records before its first compaction (an
    excerpt of a session before it compacted: a replay that compacts there fires falsely)."""
    for f, conv in sessions_found:
        if not conv.events or k <= 0:
            continue
        lines = Path(f).read_text(encoding="utf-8").splitlines(True)
        first = next((i for i, line in enumerate(lines) if '"compact_boundary"' in line), None)
        if first is None:
            continue
        users = [i for i in range(first) if '"type":"user"' in lines[i].replace(" ", "")]
        if len(users) <= margin:
            continue
        end = users[-margin]
        for start in [0] + [s for s in _picks(lines, first, k) if s < end]:
            out = folder / f"{Path(f).stem}-from-line{start + 1}-to-line{end}.jsonl"
            out.write_text("".join(lines[start:end]), encoding="utf-8")
            conv = _session(out)
            if conv is not None and not conv.events:
                yield out, conv


def measure(conv, workdir: Path, infer: bool, sets: dict, free: bool = False) -> dict:
    """One replay (following reality, or ``free``) measured: per real auto compaction the calls apart of its
    pair (first and later ones apart), the estimate's error, double pairs, and the simulated auto-compactions of
    a session that never compacted."""
    inf = infer_params("claude_code", conv) if infer else None
    params = inf.apply(sets) if inf is not None else dict(sets)
    res = replay(conv, engine=Engine("claude_code", params, workspace=Workspace(workdir)), keep_inputs=False,
                 free=free)
    sims = [c for c in res.calls if "auto_compact" in c.fired]
    vs = sorted(v for v in (parse_version(x) for x in conv.extra.get("versions") or ()) if v)
    out = {"version": fmt_version(vs[-1]) if vs else "?", "calls": len(res.calls), "simulated": len(sims),
           "real_any": len(res.real_events), "threshold": res.threshold, "mode": res.mode}
    rows = divergence.report(res, conv)["compactions"]
    autos = [r for r in rows if r["trigger"] == "auto"]
    # the compaction came before the file's first model call (an excerpt that starts just before it): no call of
    # the file could have fired it, so it says nothing about where the simulation fires
    counted = [r for r in autos if r["real_call"] > 0]
    out["undecidable"] = len(autos) - len(counted)
    first_real = min((r["real_call"] for r in rows), default=None)
    out["first"] = [r["calls_apart"] for r in counted if r["real_call"] == first_real]
    out["later"] = [r["calls_apart"] for r in counted if r["real_call"] != first_real]
    out["real_auto"] = len(counted)
    out["token_errors"] = [r["token_error_share"] for r in counted if "token_error_share" in r]
    paired = [p["call"] for p in pairs(res) if p is not None and not p["late"]]
    out["double"] = len(paired) - len(set(paired))
    out["rows"] = counted
    return out


def count_errors(conv) -> dict:
    """Claude Code's count (``SessionTokens``) before each call against that call's recorded usage (share; calls with
    a response before them in their segment), and against each compaction's ``preTokens`` (tokens), with the
    response's output counted as the file's placeholder and as the whole output (what 2.1.21+ counts)."""
    from compactscope.core.layers.claude_code import SessionTokens
    from compactscope.core.pipeline.size import SizeMeter
    msgs, meta = conv.messages, conv.meta
    starts = sorted(set(conv.segments or [0]) | {0})
    out = {}
    for final in (False, True):
        st, meter = SessionTokens(final_output=final), SizeMeter()
        st.bind(conv, meter)
        errs, pre = [], []
        for j, m in enumerate(msgs):
            u = meta[j].usage if j < len(meta) else None
            if not (isinstance(m, dict) and m.get("role") == "assistant") or u is None or u.context_tokens <= 0:
                continue
            s0 = max(x for x in starts if x <= j)
            if j > s0:
                est = st.tokens(msgs[s0:j], meter)
                if st.anchored:
                    errs.append((est - u.context_tokens) / u.context_tokens)
        for e in conv.events:
            s0 = max((x for x in starts if x < e.message_index), default=0)
            if isinstance(e.pre_tokens, int) and e.message_index > s0:
                pre.append(st.tokens(msgs[s0:e.message_index], meter) - e.pre_tokens)
        out[final] = (errs, pre)
    return out


def _hit(apart) -> bool:
    return apart is not None and abs(apart) <= 1


def _fmt(a) -> str:
    return "-" if a is None else format(a, "+d")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folders", nargs="*", type=Path, help=f"folders of sessions (default {DEFAULT})")
    ap.add_argument("--no-infer", action="store_true", help="the strategy's documented defaults, not inferred ones")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--excerpts", type=int, default=0, metavar="K", help="also measure K excerpts cut from each "
                    "session with a real compaction (files that start mid-session, before the first compaction), "
                    "and files cut before its first compaction (sessions that never compacted)")
    ap.add_argument("--mode", choices=("both", "follow", "free"), default="both",
                    help="follow reality (the default replay), the free-running what-if (--free), or both")
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per session")
    args = ap.parse_args(argv)
    sets = dict(s.split("=", 1) for s in args.set)
    folders = args.folders or [DEFAULT]
    modes = ["follow", "free"] if args.mode == "both" else [args.mode]
    keys = ("sessions", "first", "first_hit", "later", "later_hit", "never", "false", "double")
    per = {m: defaultdict(lambda: dict.fromkeys(keys, 0)) for m in modes}
    errors: dict = {m: [] for m in modes}
    skipped = 0
    counts: dict = defaultdict(lambda: {False: ([], []), True: ([], [])})
    with tempfile.TemporaryDirectory() as tmp:
        found = list(sessions(folders))
        for _f, conv in found:
            vs = sorted(v for v in (parse_version(x) for x in conv.extra.get("versions") or ()) if v)
            got = count_errors(conv)
            for final in (False, True):
                counts[fmt_version(vs[-1]) if vs else "?"][final][0].extend(got[final][0])
                counts[fmt_version(vs[-1]) if vs else "?"][final][1].extend(got[final][1])
        cut = Path(tmp) / "excerpts"
        cut.mkdir()
        files = found + list(excerpts(found, cut, args.excerpts)) + list(heads(found, cut, args.excerpts))
        for f, conv in files:
            for mode in modes:
                r = measure(conv, Path(tmp), not args.no_infer, sets, free=mode == "free")
                row = per[mode][r["version"]]
                row["sessions"] += 1
                row["first"] += len(r["first"])
                row["first_hit"] += sum(map(_hit, r["first"]))
                row["later"] += len(r["later"])
                row["later_hit"] += sum(map(_hit, r["later"]))
                row["double"] += r["double"]
                errors[mode] += r["token_errors"]
                if mode == modes[0]:
                    skipped += r["undecidable"]
                if not r["real_any"]:
                    row["never"] += 1
                    row["false"] += r["simulated"] > 0
                if args.verbose:
                    what = "; ".join(f"real auto at call {x['real_call']} (preTokens {x['real_pre_tokens']}): "
                                     f"simulated at {x['simulated_call']} ({_fmt(x['calls_apart'])}"
                                     f"{', late' if x['late'] else ''})" for x in r["rows"]) \
                        or (f"{r['real_any']} real compaction(s), none counted" if r["real_any"] else "never compacted")
                    print(f"{mode:>6} {r['version']:>8}  {f.name[:52]:<52} {r['calls']:>5} calls  {what}; "
                          f"simulated auto-compactions: {r['simulated']}")
    for mode in modes:
        _table(mode, per[mode], errors[mode])
    _count_table(counts)
    if skipped:
        print(f"{skipped} real auto compaction(s) not counted: they come before their file's first model call")
    return 0


def _count_table(counts: dict) -> None:
    def key(v):
        return parse_version(v) or (999,)

    def med(xs):
        return sorted(xs)[len(xs) // 2] if xs else None
    print("\nClaude Code's count after the last usage (sessions only): the response's output as the file's placeholder "
          "/ as its whole output (2.1.21+ counts the whole output)")
    print(f"{'version':>8}  {'calls':>5}  {'vs next usage (median)':>28}  {'vs preTokens (tokens)':>40}")
    for v in sorted(counts, key=key):
        (e0, p0), (e1, p1) = counts[v][False], counts[v][True]
        if not e0:
            continue
        a, b = med(e0), med(e1)
        print(f"{v:>8}  {len(e0):>5}  {a:>+13.2%} / {b:>+12.2%}  {str(p0):>19} / {str(p1):>18}")


def _table(mode: str, per: dict, errors: list) -> None:
    def key(v):
        return parse_version(v) or (999,)
    print(f"\n{mode}: {'following reality (the default)' if mode == 'follow' else 'free-running (--free)'}")
    print(f"{'version':>8}  {'files':>5}  {'first CB':>8}  {'+-1':>4}  {'later CBs':>9}  {'+-1':>4}  "
          f"{'never compacted':>15}  {'fired anyway':>12}  {'double pairs':>12}")
    tot = dict.fromkeys(next(iter(per.values())).keys() if per else (), 0)
    for v in sorted(per, key=key):
        row = per[v]
        for k in row:
            tot[k] = tot.get(k, 0) + row[k]
        print(f"{v:>8}  {row['sessions']:>5}  {row['first']:>8}  {row['first_hit']:>4}  {row['later']:>9}  "
              f"{row['later_hit']:>4}  {row['never']:>15}  {row['false']:>12}  {row['double']:>12}")
    if not tot:
        return
    print(f"{'all':>8}  {tot['sessions']:>5}  {tot['first']:>8}  {tot['first_hit']:>4}  {tot['later']:>9}  "
          f"{tot['later_hit']:>4}  {tot['never']:>15}  {tot['false']:>12}  {tot['double']:>12}")
    pct = lambda a, b: f"{100 * a / b:.0f}%" if b else "-"   # noqa: E731
    med = sorted(abs(e) for e in errors)[len(errors) // 2] if errors else None
    print(f"first auto compaction within +-1 call: {tot['first_hit']}/{tot['first']} "
          f"({pct(tot['first_hit'], tot['first'])}, "
          f"target >= 95%); later ones: {tot['later_hit']}/{tot['later']} ({pct(tot['later_hit'], tot['later'])}, "
          f"target >= 85%); simulated compactions paired twice: {tot['double']}; fired on files that never "
          f"compacted: {tot['false']}/{tot['never']} (target <= 1 in 80); median estimate error against preTokens "
          f"just before: {'-' if med is None else format(med, '.2%')} over {len(errors)}")


if __name__ == "__main__":
    sys.exit(main())
