"""Where the simulated Claude Code auto-compaction lands next to the real one, per Claude Code version.

Replays every Claude Code session under FOLDER (default: the shared corpus) with the claude_code
strategy and its session-inferred defaults (what a user gets with no --set), and prints:

* sessions with a real auto compact_boundary: how many have their FIRST simulated auto-compaction
  within +-1 model call of the first real one (target: >= 90%);
* sessions that never compacted: how many got a simulated auto-compaction anyway (target: <= 2%);
* every real auto compaction (later ones too, matched as ``replay --json``'s divergence block matches them):
  how many have a simulated one within +-1 call, and the median error of the replay's estimate just before
  the first simulated compaction against the ``preTokens`` Claude Code counted.

With ``--excerpts K`` it also cuts every session that has a real compaction at K user records spread over the
stretch before its first compaction, as files that start mid-session (what a session excerpt looks like:
the first record's parent is not in the file), and measures those too: the same rule on histories it has
not seen from their start.

    python bench/bench_cc_accuracy.py [FOLDER ...] [--no-infer] [--set NAME=VALUE ...] [--excerpts K] [-v]
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
        users = [i for i in range(first or 0) if '"type":"user"' in lines[i].replace(" ", "")]
        picks = sorted({users[int(j * (len(users) - 1) / max(1, k - 1))] for j in range(k)} - {0}) if users else []
        for start in picks:
            out = folder / f"{Path(f).stem}-from-line{start + 1}.jsonl"
            out.write_text("".join(lines[start:]), encoding="utf-8")
            conv = _session(out)
            if conv is not None:
                yield out, conv


def measure(conv, workdir: Path, infer: bool, sets: dict) -> dict:
    inf = infer_params("claude_code", conv) if infer else None
    params = inf.apply(sets) if inf is not None else dict(sets)
    res = replay(conv, engine=Engine("claude_code", params, workspace=Workspace(workdir)), keep_inputs=False)
    autos = [e for e in res.real_events if e["trigger"] == "auto" and e["call"] is not None]
    sims = [c for c in res.calls if "auto_compact" in c.fired]
    vs = sorted(v for v in (parse_version(x) for x in conv.extra.get("versions") or ()) if v)
    out = {"version": fmt_version(vs[-1]) if vs else "?", "calls": len(res.calls), "real_auto": len(autos),
           "real_any": len(res.real_events), "simulated": len(sims), "threshold": res.threshold}
    rows = [r for r in divergence.report(res, conv)["compactions"] if r["trigger"] == "auto" and r["real_call"]]
    out["every_auto"] = [r["calls_apart"] for r in rows]
    out["token_errors"] = [r["token_error_share"] for r in rows if "token_error_share" in r]
    if autos and autos[0]["call"] == 0:
        # the compaction came before the file's first model call (an excerpt that starts just before it): no call
        # of the file could have fired it, so the session says nothing about where the simulation fires
        out["undecidable"] = True
    elif autos:
        real = autos[0]["call"]
        first = sims[0].index if sims else None
        out.update(real_call=real, sim_call=first, apart=None if first is None else first - real,
                   pre_tokens=autos[0]["pre_tokens"], estimate=sims[0].tokens_before if sims else None)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folders", nargs="*", type=Path, help=f"folders of sessions (default {DEFAULT})")
    ap.add_argument("--no-infer", action="store_true", help="the strategy's documented defaults, not inferred ones")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--excerpts", type=int, default=0, metavar="K", help="also measure K excerpts cut from each "
                    "session with a real compaction (files that start mid-session, before the first compaction)")
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per session")
    args = ap.parse_args(argv)
    sets = dict(s.split("=", 1) for s in args.set)
    folders = args.folders or [DEFAULT]
    per = defaultdict(lambda: {"auto": 0, "hit": 0, "never": 0, "false": 0, "every": 0, "every_hit": 0})
    errors: list[float] = []
    skipped = 0
    with tempfile.TemporaryDirectory() as tmp:
        found = list(sessions(folders))
        cut = Path(tmp) / "excerpts"
        cut.mkdir()
        for f, conv in found + list(excerpts(found, cut, args.excerpts)):
            r = measure(conv, Path(tmp), not args.no_infer, sets)
            row = per[r["version"]]
            row["every"] += len(r["every_auto"])
            row["every_hit"] += sum(a is not None and abs(a) <= 1 for a in r["every_auto"])
            errors += r["token_errors"]
            if r.get("undecidable"):
                skipped += 1
            elif r["real_auto"]:
                row["auto"] += 1
                row["hit"] += r["apart"] is not None and abs(r["apart"]) <= 1
            elif not r["real_any"]:
                row["never"] += 1
                row["false"] += r["simulated"] > 0
            if args.verbose:
                what = ("its first real compaction comes before its first model call: not counted"
                        if r.get("undecidable") else
                        f"real auto at call {r['real_call']} (preTokens {r['pre_tokens']}), simulated at "
                        f"{r['sim_call']} ({'-' if r['apart'] is None else format(r['apart'], '+d')})"
                        if r["real_auto"] else f"{r['real_any']} real (manual) compaction(s)" if r["real_any"]
                        else "never compacted")
                print(f"{r['version']:>8}  {f.name[:44]:<44} {r['calls']:>5} calls  threshold {r['threshold']:,.0f}"
                      f"  {what}; simulated auto-compactions: {r['simulated']}")
    def key(v):
        return parse_version(v) or (999,)
    print(f"{'version':>8}  {'auto sessions':>13}  {'within +-1':>10}  {'never compacted':>15}  {'fired anyway':>12}"
          f"  {'every auto CB':>13}  {'within +-1':>10}")
    tot = {"auto": 0, "hit": 0, "never": 0, "false": 0, "every": 0, "every_hit": 0}
    for v in sorted(per, key=key):
        row = per[v]
        for k in tot:
            tot[k] += row[k]
        print(f"{v:>8}  {row['auto']:>13}  {row['hit']:>10}  {row['never']:>15}  {row['false']:>12}"
              f"  {row['every']:>13}  {row['every_hit']:>10}")
    pct = lambda a, b: f"{100 * a / b:.0f}%" if b else "-"   # noqa: E731
    print(f"{'all':>8}  {tot['auto']:>13}  {tot['hit']:>10}  {tot['never']:>15}  {tot['false']:>12}"
          f"  {tot['every']:>13}  {tot['every_hit']:>10}")
    print(f"first simulated auto-compaction within +-1 call: {tot['hit']}/{tot['auto']} ({pct(tot['hit'], tot['auto'])}, "
          f"target >= 90%); fired on sessions that never compacted: {tot['false']}/{tot['never']} "
          f"({pct(tot['false'], tot['never'])}, target <= 2%)")
    if skipped:
        print(f"{skipped} file(s) not counted: their first real compaction comes before their first model call")
    med = sorted(abs(e) for e in errors)[len(errors) // 2] if errors else None
    print(f"every real auto compaction: {tot['every_hit']}/{tot['every']} ({pct(tot['every_hit'], tot['every'])}) with a "
          f"simulated one within +-1 call; median estimate error against preTokens just before the simulated "
          f"one: {'-' if med is None else format(med, '.2%')} over {len(errors)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
