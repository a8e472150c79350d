"""Fleet figures: 500 generated Claude Code sessions (~600 MB) replayed by 1 and 2 worker processes
and by a local Dask cluster (same table?), and the threshold re-evaluation over 10,000 sessions.

    python bench/bench_fleet.py [--dir DIR] [--sessions 500] [--mb 600] [--skip-dask]

The sessions are made by bench/fleet_sessions.py from the corpus (kept in DIR for the next run).
Prints figures; asserts nothing. The machine is shared: quote ratios from one run.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from compactscope.core.fleet import make_config  # noqa: E402
from compactscope.core.fleet.engines import DaskCluster, LocalPool  # noqa: E402
from compactscope.core.fleet.model import FleetData  # noqa: E402
from compactscope.core.fleet.run import run_fleet  # noqa: E402


def _load() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def _table(path) -> list:
    return pq.read_table(path).drop_columns(["seconds", "worker_peak_mb"]).sort_by("path").to_pylist()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "compactscope-fleet-bench"))
    ap.add_argument("--sessions", type=int, default=500)
    ap.add_argument("--mb", type=float, default=600)
    ap.add_argument("--skip-dask", action="store_true")
    ap.add_argument("--skip-one", action="store_true", help="skip the one-worker run (no speed-up figure)")
    a = ap.parse_args(argv)
    root = Path(a.dir) / "projects"
    if not root.is_dir():
        from fleet_sessions import generate
        print(f"generating {a.sessions} sessions ({a.mb:.0f} MB) into {a.dir} ...")
        g = generate(a.dir, a.sessions, a.mb, say=None)
        print(f"  {g['sessions']} files, {g['bytes'] / 1e6:,.0f} MB, {g['compactions']} real compactions, "
              f"{g['seconds']:.0f} s")
    files = [p for p in root.rglob("*.jsonl") if "subagents" not in p.parts]
    mb = sum(p.stat().st_size for p in files) / 1e6
    print(f"fleet: {len(files)} session files, {mb:,.0f} MB under {root}; cores {os.cpu_count()}, load {_load()}")
    cfg = make_config("claude_code")
    out = Path(tempfile.mkdtemp(prefix="fleet-bench-"))
    times = {}
    for n in ([2] if a.skip_one else [1, 2]):
        t0 = time.perf_counter()
        s = run_fleet([root], cfg, out / f"w{n}.parquet", engine=LocalPool(n))
        times[n] = time.perf_counter() - t0
        print(f"  {s.engine}: {s.replayed} sessions, {s.errors} error row(s), {times[n]:.1f} s "
              f"({mb / times[n]:.1f} MB/s); load {_load()}")
    if 1 in times:
        print(f"  speed-up, 2 workers vs 1: {times[1] / times[2]:.2f}x")
    print(f"  target: 500 sessions (~600 MB) in at most 180 s on 2 cores: "
          f"{'met' if times[2] <= 180 else 'NOT met'} ({times[2]:.0f} s)")
    if not a.skip_dask:
        import distributed
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                      dashboard_address="127.0.0.1:0", silence_logs=40) as cluster:
            t0 = time.perf_counter()
            s = run_fleet([root], cfg, out / "dask.parquet", engine=DaskCluster(cluster.scheduler_address))
            dt = time.perf_counter() - t0
        same = _table(out / "dask.parquet") == _table(out / "w2.parquet")
        print(f"  {s.engine}: {s.replayed} sessions in {dt:.1f} s; same table as the local pool: "
              f"{'yes' if same else 'NO'}")
    # the threshold slider: 10,000 sessions (the results repeated)
    t = pq.read_table(out / "w2.parquet")
    reps = max(1, -(-10_000 // t.num_rows))
    parts = []
    for i in range(reps):
        parts.append(t.set_column(0, "path", pa.compute.binary_join_element_wise(t.column("path"), str(i), "#")))
    big = pa.concat_tables(parts).slice(0, 10_000)
    pq.write_table(big.replace_schema_metadata(t.schema.metadata), out / "big.parquet")
    t0 = time.perf_counter()
    data = FleetData.load(out / "big.parquet")
    load_s = time.perf_counter() - t0
    calls = int(data.calls.sum())
    runs = []
    for thr in (100_000, 120_000, 150_000, 167_000, 180_000, 190_000):
        t0 = time.perf_counter()
        data.reevaluate(thr)
        runs.append(time.perf_counter() - t0)
    print(f"re-evaluation over {data.n:,} sessions ({calls:,} calls): load {load_s * 1000:.0f} ms, one threshold "
          f"{np.median(runs) * 1000:.1f} ms median ({min(runs) * 1000:.1f}-{max(runs) * 1000:.1f} ms); "
          f"at 150k: {data.reevaluate(150_000).total_compactions:,} compactions")
    print(f"results in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
