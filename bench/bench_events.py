"""What events, retention and watch cost on generated Claude Code sessions with real compactions.

    python bench/bench_events.py [--mb 2,10] [--seed 1]

For each size: one session made from the corpus's turns (bench/fleet_sessions.py), then the CPU seconds of the
load, the replay (claude_code, its inputs kept), the events, the retention and a watch of an item the first real
compaction lost; and how many events, compactions and claims there are. Needs ../shared/corpus."""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def _timed(fn):
    t0 = time.process_time()
    out = fn()
    return out, time.process_time() - t0


def one(path: Path) -> dict:
    from compactscope.core.analysis.session_events import history_events, replay_for
    from compactscope.core.loaders import load
    from compactscope.core.analysis.retention import retention
    from compactscope.core.analysis.watch import watch
    from compactscope.core.files.workspace import Workspace
    result, t_load = _timed(lambda: load(path))
    conv = max(result.conversations, key=lambda c: len(c.messages))
    with tempfile.TemporaryDirectory() as ws:
        res, t_replay = _timed(lambda: replay_for(conv, workspace=Workspace(ws)))
        events, t_events = _timed(lambda: history_events(conv, res))
        found, t_ret = _timed(lambda: retention(conv, res))
        lost = next((i.text for r in found if r.kind == "real" for i in r.lost), None)
        w, t_watch = _timed(lambda: watch(conv, lost, res)) if lost else (None, 0.0)
    return {"bytes": path.stat().st_size, "messages": len(conv.messages), "calls": len(res.calls),
            "real": len(conv.events), "events": len(events), "compactions": len(found),
            "claims": sum(len(r.kept) + len(r.lost) for r in found), "load": t_load, "replay": t_replay,
            "events_s": t_events, "retention_s": t_ret, "watch_s": t_watch,
            "watch_lost": len(w.lost_at) if w is not None else 0}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", default="2,10", help="session sizes in MB, comma-separated")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    from fleet_sessions import generate
    print(f"{'MB':>6}{'msgs':>8}{'calls':>7}{'real':>5}{'events':>7}{'claims':>7}{'load s':>8}{'replay s':>9}"
          f"{'events s':>9}{'retention s':>12}{'watch s':>8}")
    for mb in (float(x) for x in args.mb.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            info = generate(tmp, sessions=1, total_mb=mb, seed=args.seed, say=None)
            path = max(Path(info["root"]).rglob("*.jsonl"), key=lambda p: p.stat().st_size)
            d = one(path)
        print(f"{d['bytes'] / 1e6:>6.1f}{d['messages']:>8,}{d['calls']:>7,}{d['real']:>5}{d['events']:>7}"
              f"{d['claims']:>7}{d['load']:>8.2f}{d['replay']:>9.2f}{d['events_s']:>9.2f}{d['retention_s']:>12.2f}"
              f"{d['watch_s']:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
