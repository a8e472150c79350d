"""A fleet run: discover the sessions, skip those already in the results, replay the rest on an
engine, and stream the rows into the results file.

Resumable: a session whose path is in ``out`` with the same size and mtime is not replayed again
(its row is carried over); rows of sessions outside this run's paths are kept too, so one results
file can grow folder by folder. A run that is stopped (Ctrl+C, ``cancel``) still writes every
finished session, so the next run goes on from there.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable

from ..runtime.record import field, record
from .config import FleetConfig, FleetError
from .discover import Discovery, discover
from .worker import SessionTask


@record
class Progress:
    done: int = 0                 # files finished in this run
    total: int = 0                # files to replay in this run
    bytes_done: int = 0
    bytes_total: int = 0
    errors: int = 0
    skipped: int = 0              # unchanged files carried over from the results file
    elapsed: float = 0.0
    last: str = ""                # the last session finished

    @property
    def eta(self) -> float | None:
        """Seconds left, from the bytes replayed so far (sessions vary too much in size to count them)."""
        if self.bytes_done <= 0 or self.elapsed <= 0:
            return None
        rate = self.bytes_done / self.elapsed
        return max(0.0, (self.bytes_total - self.bytes_done) / rate)

    def line(self) -> str:
        eta = self.eta
        mb = f"{self.bytes_done / 1e6:,.0f}/{self.bytes_total / 1e6:,.0f} MB"
        return (f"{self.done:,}/{self.total:,} files, {mb}, {self.errors:,} error(s), "
                f"{duration(self.elapsed)} elapsed" + (f", about {duration(eta)} left" if eta is not None else "")
                + (f" ({self.skipped:,} unchanged, kept from before)" if self.skipped else ""))


def duration(s: float) -> str:
    """Seconds in words: '42 s', '3 min 05 s', '1 h 02 min'."""
    s = int(round(s))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


@record
class FleetSummary:
    out: str
    engine: str
    discovered: int
    replayed: int
    skipped: int
    errors: int
    rows: int
    seconds: float
    bytes: int
    stopped: bool = False
    orphan_agents: list = field(default_factory=list)
    missing: list = field(default_factory=list)
    error_examples: list = field(default_factory=list)
    worker_peak_mb: float | None = None     # the largest peak resident memory a worker reported
    duplicates: int = 0                      # rows marked duplicate_of another row (the same session found twice)


def _previous(out: Path, cfg: FleetConfig):
    """(path -> (size, mtime_ns, error)) of an existing results file made with the same configuration."""
    import pyarrow.parquet as pq
    from .store import read_config
    if not out.exists():
        return None
    from .config import FORMAT_VERSION
    from .store import read_meta
    made = (read_meta(out).get("config") or {}).get("format_version")
    if made != FORMAT_VERSION:
        raise FleetError(f"{out} was written by another version of compactscope fleet (results format {made}, "
                         f"this one writes {FORMAT_VERSION}): pass --overwrite, or write to another --out")
    old = read_config(out)
    if old.to_json() != cfg.to_json():
        raise FleetError(f"{out} was made with another configuration (strategy {old.strategy}, --set {old.params}, "
                         f"{len(old.compare)} --compare run(s)): write to another --out, or pass --overwrite")
    t = pq.read_table(str(out), columns=["path", "size", "mtime_ns", "error"])
    prev: dict = {}
    for p, s, m, e in zip(*(t.column(n).to_pylist() for n in ("path", "size", "mtime_ns", "error"))):
        row = prev.get(p)           # a file of several sessions has a row each: any error retries the file
        prev[p] = (s, m, e or (row[2] if row else None))
    return prev


def plan(found: Discovery, previous: dict | None, retry_errors: bool = False) -> tuple[list[SessionTask], set]:
    """(tasks to replay, biggest first; paths whose previous rows are kept)."""
    previous = previous or {}
    tasks, keep = [], set(previous)
    for s in found.sessions:
        old = previous.get(s.path)
        if old is not None and old[0] == s.size and old[1] == s.mtime_ns and not (retry_errors and old[2]):
            continue
        keep.discard(s.path)
        tasks.append(SessionTask(s.path, s.size, s.mtime_ns, tuple(s.subagent_files)))
    # the biggest first: a long session started last would leave the other workers idle at the end
    tasks.sort(key=lambda t: (-t.size, t.path))
    return tasks, keep


def run_fleet(paths, cfg: FleetConfig, out: str | Path, *, engine=None, overwrite: bool = False,
              retry_errors: bool = False, progress: Callable[[Progress], None] | None = None,
              cancel: threading.Event | None = None, batch: int = 64) -> FleetSummary:
    from .engines import make_engine
    from .store import ResultsWriter
    out = Path(out)
    if out.is_dir():
        raise FleetError(f"--out {out} is a folder: name a .parquet file")
    cancel = cancel or threading.Event()
    engine = engine or make_engine()
    found = discover(paths)
    previous = None if overwrite else _previous(out, cfg)
    tasks, keep = plan(found, previous, retry_errors)
    p = Progress(total=len(tasks), bytes_total=sum(t.size for t in tasks), skipped=len(found.sessions) - len(tasks))
    writer = ResultsWriter(out, cfg, batch=batch)
    t0 = time.perf_counter()
    errors: list = []
    stopped, peak = False, None
    try:
        if previous:
            writer.copy_from(out, keep)
        last_report = 0.0
        if progress is not None and tasks:
            progress(p)                   # at once: how much there is to do
        for task, rows in engine.run(tasks, cfg, cancel):
            for row in rows if isinstance(rows, list) else [rows]:
                writer.add(row)
                if row.get("worker_peak_mb"):
                    peak = max(peak or 0.0, float(row["worker_peak_mb"]))
                if row.get("error"):
                    p.errors += 1
                    if len(errors) < 5:
                        errors.append(row["error"])
            p.done += 1
            p.bytes_done += task.size
            p.last = task.path
            p.elapsed = time.perf_counter() - t0
            if progress is not None and (p.done == 1 or p.elapsed - last_report >= 0.5 or p.done == p.total):
                last_report = p.elapsed
                progress(p)
        stopped = cancel.is_set() and p.done < p.total
    except KeyboardInterrupt:
        stopped = True
        cancel.set()
    except BaseException:
        writer.abort()
        raise
    writer.close()
    return FleetSummary(str(out), getattr(engine, "name", type(engine).__name__), len(found.sessions), p.done,
                        p.skipped, p.errors, writer.written, time.perf_counter() - t0, p.bytes_done, stopped,
                        found.orphan_agents, found.missing, errors, peak, getattr(writer, "duplicates", 0))
