"""Fleet figures: 10,000 generated Claude Code sessions replayed on a real local Dask cluster of 1, then
2 worker processes (one thread each, on loopback), and the threshold re-evaluation over 10,000 sessions.

What it measures, per cluster: the wall time; the CPU time summed over the workers, and the CPU of this
process (the client, the results writer, and LocalCluster's scheduler, which runs here); each worker's
resident memory sampled every 0.2 s over the run, quoted at the start (workers started and warm, before the
first session), the middle (half of the sessions done), the end, and its peak. Then:

* the speed-up, 2 workers against 1 (the reference: the same sessions on the one-worker cluster, same run):
  target >= 1.7x. It needs two idle cores: on a shared machine it is wrong, so a CPU-time estimate is
  printed beside it (the busiest worker's CPU, or the total CPU over two cores if more, against the
  one-worker run's): that one says whether the split itself (scheduler round trips, client, imbalance at
  the end) would allow 1.7x;
* the work the split adds: summed CPU of 2 workers against 1 (target <= 1.1x), the client and scheduler's
  CPU against the workers' (target <= 10%);
* memory per worker flat: the end against the middle (the second half of the sessions, thousands of small
  ones, target <= 1.10x; the biggest sessions are replayed first, so the peak is early);
* the results table identical between the 1- and 2-worker runs (timings and worker memory aside);
* re-evaluating a threshold over 10,000 sessions (the run's table, repeated up to 10,000 rows when smaller).

The sessions are made by bench/fleet_sessions.py from the corpus with the sizes of a real
``~/.claude/projects`` folder (``--profile projects``: mostly small, log-normal, a few of tens of MB), kept
in DIR for the next run. Prints figures; asserts nothing.

    python bench/bench_fleet.py                                   # 10,000 sessions, 1,500 MB (~10 min)
    python bench/bench_fleet.py --sessions 10000 --mb 1500 --max-mb 40 --workers 1,2 [--dir DIR]
    python bench/bench_fleet.py --sessions 40 --mb 2 --workers 1,2  # small (the smoke test)
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from compactscope.core.fleet import make_config  # noqa: E402
from compactscope.core.fleet.engines import DaskCluster  # noqa: E402
from compactscope.core.fleet.model import FleetData  # noqa: E402
from compactscope.core.fleet.run import run_fleet  # noqa: E402
from compactscope.core.fleet.worker import SessionTask, replay_session  # noqa: E402


def _load() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def _table(path) -> list:
    return pq.read_table(path).drop_columns(["seconds", "worker_peak_mb"]).sort_by("path").to_pylist()


def _ok(good: bool) -> str:
    return "OK" if good else "NOT met"


class Sampler(threading.Thread):
    """Each worker's RSS every ``every`` seconds, with the sessions done at that moment."""

    def __init__(self, pids: list[int], every: float = 0.2):
        super().__init__(daemon=True)
        import psutil
        self.procs = [psutil.Process(p) for p in pids]
        self.every = every
        self.progress = None                       # run_fleet's Progress (the same object all along)
        self.samples: list[tuple[int, list[float]]] = []
        self.stop = threading.Event()

    def sample(self) -> None:
        done = self.progress.done if self.progress is not None else 0
        self.samples.append((done, [p.memory_info().rss / 1e6 for p in self.procs]))

    def run(self) -> None:
        while not self.stop.wait(self.every):
            self.sample()

    def figures(self, total: int) -> list[dict]:
        """Per worker: RSS at the start, the middle (half the sessions done), the end, and the peak (MB)."""
        out = []
        def at(share):
            return min(self.samples, key=lambda s: abs(s[0] - total * share))[1]
        for w in range(len(self.procs)):
            series = [s[1][w] for s in self.samples]
            k = int(np.argmax(series))
            out.append({"start": series[0], "middle": at(0.5)[w], "end": series[-1], "peak": series[k],
                        "peak_at": self.samples[k][0], "quarters": [at(q)[w] for q in (0.1, 0.25, 0.5, 0.75)]})
        return out


def _cpu(procs) -> float:
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except Exception:  # noqa: BLE001 - a process that is gone counts nothing more
            pass
    return total


def _warm(client, task: SessionTask, cfg) -> list[int]:
    """Every worker has imported and replayed one small session (what a worker's start costs is not the
    fleet's); their process ids."""
    def warm(t, c):
        replay_session(t, c)
        return os.getpid()
    return sorted(client.run(warm, task, cfg).values())


def run_cluster(n: int, root: Path, cfg, out: Path, smallest: SessionTask, per_thread: int) -> dict:
    import distributed
    import psutil
    with distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address="127.0.0.1:0", silence_logs=40) as cluster, \
            distributed.Client(cluster.scheduler_address) as client:
        pids = _warm(client, smallest, cfg)
        workers = [psutil.Process(p) for p in pids]
        others = [c for c in psutil.Process().children(recursive=True) if c.pid not in pids]
        idle = _idle(workers)
        sampler = Sampler(pids)
        sampler.sample()
        sampler.start()
        cpu_w, cpu_o, cpu_me = [_cpu([w]) for w in workers], _cpu(others), time.process_time()
        t0 = time.perf_counter()

        def progress(p):
            sampler.progress = p
        s = run_fleet([root], cfg, out, engine=DaskCluster(cluster.scheduler_address, per_thread=per_thread),
                      overwrite=True, progress=progress)
        wall = time.perf_counter() - t0
        me = time.process_time() - cpu_me
        per = [_cpu([w]) - c for w, c in zip(workers, cpu_w)]
        other = _cpu(others) - cpu_o
        sampler.stop.set()
        sampler.join()
        sampler.sample()
        mem = sampler.figures(s.replayed)
    # what the workers spent replaying: their CPU less what an idle Dask worker spends meanwhile (heartbeats,
    # its profiler, the system monitor: ~2-3% of a core on this machine, more when it is loaded)
    replay = [max(0.0, c - rate * wall) for c, rate in zip(per, idle["workers"])]
    return {"n": n, "summary": s, "wall": wall, "workers_cpu": per, "client_cpu": me, "nanny_cpu": other,
            "mem": mem, "idle": idle, "replay_cpu": replay}


def _idle(workers, seconds: float = 3.0) -> dict:
    """CPU per second of wall of the idle workers and of this process (the client, scheduler and nannies)."""
    w0, me0, t0 = [_cpu([w]) for w in workers], time.process_time(), time.perf_counter()
    time.sleep(seconds)
    dt = time.perf_counter() - t0
    return {"workers": [(_cpu([w]) - c) / dt for w, c in zip(workers, w0)], "client": (time.process_time() - me0) / dt}


def _report(r: dict) -> None:
    s, per = r["summary"], r["workers_cpu"]
    total = sum(per) + r["client_cpu"] + r["nanny_cpu"]
    print(f"  {r['n']} worker(s): {s.replayed:,} sessions, {s.errors} error row(s), wall {r['wall']:.1f} s "
          f"({s.bytes / 1e6 / r['wall']:.1f} MB/s); CPU {total:.1f} s summed = workers {sum(per):.1f} s "
          f"({', '.join(f'{c:.1f}' for c in per)}) + client and scheduler {r['client_cpu']:.1f} s + nannies "
          f"{r['nanny_cpu']:.1f} s; load {_load()}")
    idle = r["idle"]
    print(f"    replaying: {sum(r['replay_cpu']):.1f} s CPU ({', '.join(f'{c:.1f}' for c in r['replay_cpu'])}), the "
          f"workers' CPU less their idle rate ({', '.join(f'{x:.1%}' for x in idle['workers'])} of a core; this "
          f"process idle: {idle['client']:.1%}) over the wall time")
    for k, m in enumerate(r["mem"]):
        print(f"    worker {k + 1} RSS: start {m['start']:.0f} MB, middle {m['middle']:.0f} MB, end {m['end']:.0f} MB, "
              f"peak {m['peak']:.0f} MB (after {m['peak_at']:,} sessions); end = {m['end'] / m['middle']:.2f}x "
              f"the middle  target <= 1.10x  {_ok(m['end'] <= 1.10 * m['middle'])}")
        print("      at 10%, 25%, 50%, 75%, 100% of the sessions: "
              + ", ".join(f"{x:.0f}" for x in m["quarters"] + [m["end"]]) + " MB")


def _estimate(r: dict, cores: int = 2) -> float:
    """The run's wall time on idle cores, from its CPU: the busiest worker's replay (plus its idle rate over that
    time), or the replay's and the client's work (their CPU less their idle rates) over the cores when more."""
    busiest = max(r["replay_cpu"]) / (1 - max(r["idle"]["workers"]))
    client = max(0.0, r["client_cpu"] - r["idle"]["client"] * r["wall"])
    return max(busiest, (sum(r["replay_cpu"]) + client) / cores)


def _compare(runs: dict) -> None:
    one, two = runs[1], runs[2]
    w1, w2 = sum(one["replay_cpu"]), sum(two["replay_cpu"])
    sp = one["wall"] / two["wall"]
    est = _estimate(one) / _estimate(two)
    print(f"  speed-up, 2 workers vs 1 (wall): {two['wall']:.1f} s = {sp:.2f}x faster than 1 worker "
          f"({one['wall']:.1f} s)  target >= 1.7x  {_ok(sp >= 1.7)}  (needs 2 idle cores; load now {_load()})")
    print(f"  speed-up on idle cores, estimated from CPU times: {_estimate(two):.1f} s = {est:.2f}x "
          f"1 worker's {_estimate(one):.1f} s  target >= 1.7x  {_ok(est >= 1.7)}")
    print(f"  work the split adds: replay CPU with 2 workers = {w2 / w1:.2f}x with 1 ({w2:.1f} s vs {w1:.1f} s)  "
          f"target <= 1.1x  {_ok(w2 <= 1.1 * w1)}")
    for r in (one, two):
        work = max(0.0, r["client_cpu"] - r["idle"]["client"] * r["wall"])
        share = work / sum(r["replay_cpu"])
        print(f"  client and scheduler, {r['n']} worker(s): {work:.1f} s CPU beyond their idle rate = {share:.1%} of "
              f"the replay's ({sum(r['replay_cpu']):.1f} s)  target <= 10%  {_ok(share <= 0.10)}  ({r['client_cpu']:.1f} "
              f"s in all, {r['client_cpu'] / r['wall']:.1%} of a core over the run)")


def _reevaluate(path: Path) -> None:
    """The threshold slider over 10,000 sessions (the results repeated)."""
    t = pq.read_table(path)
    reps = max(1, -(-10_000 // t.num_rows))
    parts = []
    for i in range(reps):
        parts.append(t.set_column(0, "path", pa.compute.binary_join_element_wise(t.column("path"), str(i), "#")))
    big = pa.concat_tables(parts).slice(0, 10_000)
    out = path.with_name("big.parquet")
    pq.write_table(big.replace_schema_metadata(t.schema.metadata), out)
    t0 = time.perf_counter()
    data = FleetData.load(out)
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


def _sessions(a) -> tuple[Path, list[Path]]:
    d = _folder(a)
    root = d / "projects"
    if not root.is_dir():
        from fleet_sessions import generate
        print(f"generating {a.sessions:,} sessions ({a.mb:,.0f} MB, at most {a.max_mb:g} MB each) into {d} ...")
        g = generate(d, a.sessions, a.mb, say=None, profile="projects", max_mb=a.max_mb)
        print(f"  {g['sessions']:,} files, {g['bytes'] / 1e6:,.0f} MB, {g['compactions']} real compactions, "
              f"{g['seconds']:.0f} s")
    files = [p for p in root.rglob("*.jsonl") if "subagents" not in p.parts]
    return root, files


def _folder(a) -> Path:
    return Path(a.dir or os.path.join(tempfile.gettempdir(), f"compactscope-fleet-bench-{a.sessions}-{a.mb:g}-{a.max_mb:g}"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", help="where the sessions are (generated there when missing)")
    ap.add_argument("--sessions", type=int, default=10_000)
    ap.add_argument("--mb", type=float, default=1_500, help="their total size")
    ap.add_argument("--max-mb", type=float, default=40, help="the largest session")
    ap.add_argument("--workers", default="1,2", help="the clusters' sizes, in order (1,2: the speed-up)")
    ap.add_argument("--per-thread", type=int, default=24, help="groups of sessions per worker thread")
    a = ap.parse_args(argv)
    root, files = _sessions(a)
    sizes = np.sort([p.stat().st_size for p in files])
    mb = sizes.sum() / 1e6
    print(f"fleet: {len(files):,} session files, {mb:,.0f} MB under {root}: median {np.median(sizes) / 1e3:.0f} KB, "
          f"90% under {sizes[int(len(sizes) * 0.9)] / 1e3:,.0f} KB, {int((sizes > 5e6).sum())} over 5 MB, largest "
          f"{sizes[-1] / 1e6:.1f} MB; cores {os.cpu_count()}, load {_load()}")
    cfg = make_config("claude_code")
    out = _folder(a) / "results"              # (replaced by the next run)
    out.mkdir(exist_ok=True)
    small = min(files, key=lambda p: p.stat().st_size)
    st = small.stat()
    smallest = SessionTask(str(small.resolve()), st.st_size, st.st_mtime_ns)
    runs = {}
    for n in [int(x) for x in a.workers.split(",")]:
        runs[n] = run_cluster(n, root, cfg, out / f"w{n}.parquet", smallest, a.per_thread)
        _report(runs[n])
    if 1 in runs and 2 in runs:
        _compare(runs)
        same = _table(out / "w1.parquet") == _table(out / "w2.parquet")
        print(f"  results table, 2 workers vs 1: {'identical' if same else 'DIFFERENT'}")
    _reevaluate(out / f"w{max(runs)}.parquet")
    print(f"results in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
