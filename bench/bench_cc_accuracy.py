"""Where the simulated Claude Code auto-compaction lands next to the real one, per Claude Code version.

Replays every Claude Code session under FOLDER (default: the shared corpus) with the claude_code
strategy and its session-inferred defaults (what a user gets with no --set), and prints:

* sessions with a real auto compact_boundary: how many have their FIRST simulated auto-compaction
  within +-1 model call of the first real one (target: >= 90%);
* sessions that never compacted: how many got a simulated auto-compaction anyway (target: <= 2%).

    python bench/bench_cc_accuracy.py [FOLDER ...] [--no-infer] [--set NAME=VALUE ...] [-v]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from compactscope.core.loaders import LoadError, load  # noqa: E402
from compactscope.core.pipeline import Engine  # noqa: E402
from compactscope.core.replay import replay  # noqa: E402
from compactscope.core.strategies import infer_params  # noqa: E402
from compactscope.core.strategies.claude_code_versions import fmt_version, parse_version  # noqa: E402
from compactscope.core.workspace import Workspace  # noqa: E402

DEFAULT = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"


def sessions(folders: list[Path]):
    for folder in folders:
        files = [folder] if folder.is_file() else sorted(folder.rglob("*.jsonl"))
        for f in files:
            if "/subagents/" in str(f):
                continue
            try:
                r = load(f)
            except LoadError:
                continue
            if r.format == "claude-code" and r.main.messages:
                yield f, r.main


def measure(conv, workdir: Path, infer: bool, sets: dict) -> dict:
    inf = infer_params("claude_code", conv) if infer else None
    params = inf.apply(sets) if inf is not None else dict(sets)
    res = replay(conv, engine=Engine("claude_code", params, workspace=Workspace(workdir)), keep_inputs=False)
    autos = [e for e in res.real_events if e["trigger"] == "auto" and e["call"] is not None]
    sims = [c for c in res.calls if "auto_compact" in c.fired]
    vs = sorted(v for v in (parse_version(x) for x in conv.extra.get("versions") or ()) if v)
    out = {"version": fmt_version(vs[-1]) if vs else "?", "calls": len(res.calls), "real_auto": len(autos),
           "real_any": len(res.real_events), "simulated": len(sims), "threshold": res.threshold}
    if autos:
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
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per session")
    args = ap.parse_args(argv)
    sets = dict(s.split("=", 1) for s in args.set)
    folders = args.folders or [DEFAULT]
    per = defaultdict(lambda: {"auto": 0, "hit": 0, "never": 0, "false": 0})
    with tempfile.TemporaryDirectory() as tmp:
        for f, conv in sessions(folders):
            r = measure(conv, Path(tmp), not args.no_infer, sets)
            row = per[r["version"]]
            if r["real_auto"]:
                row["auto"] += 1
                row["hit"] += r["apart"] is not None and abs(r["apart"]) <= 1
            elif not r["real_any"]:
                row["never"] += 1
                row["false"] += r["simulated"] > 0
            if args.verbose:
                what = (f"real auto at call {r['real_call']} (preTokens {r['pre_tokens']}), simulated at "
                        f"{r['sim_call']} ({'-' if r['apart'] is None else format(r['apart'], '+d')})"
                        if r["real_auto"] else f"{r['real_any']} real (manual) compaction(s)" if r["real_any"]
                        else "never compacted")
                print(f"{r['version']:>8}  {f.name[:44]:<44} {r['calls']:>5} calls  threshold {r['threshold']:,.0f}"
                      f"  {what}; simulated auto-compactions: {r['simulated']}")
    def key(v):
        return parse_version(v) or (999,)
    print(f"{'version':>8}  {'auto sessions':>13}  {'within +-1':>10}  {'never compacted':>15}  {'fired anyway':>12}")
    tot = {"auto": 0, "hit": 0, "never": 0, "false": 0}
    for v in sorted(per, key=key):
        row = per[v]
        for k in tot:
            tot[k] += row[k]
        print(f"{v:>8}  {row['auto']:>13}  {row['hit']:>10}  {row['never']:>15}  {row['false']:>12}")
    pct = lambda a, b: f"{100 * a / b:.0f}%" if b else "-"   # noqa: E731
    print(f"{'all':>8}  {tot['auto']:>13}  {tot['hit']:>10}  {tot['never']:>15}  {tot['false']:>12}")
    print(f"first simulated auto-compaction within +-1 call: {tot['hit']}/{tot['auto']} ({pct(tot['hit'], tot['auto'])}, "
          f"target >= 90%); fired on sessions that never compacted: {tot['false']}/{tot['never']} "
          f"({pct(tot['false'], tot['never'])}, target <= 2%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
