"""Where the sessions are replayed: this process, a local process pool, or a Dask cluster.

Each engine takes the tasks (one per file) and yields ``(task, rows)`` as files finish (a row per session
the file holds), keeping only a bounded
number of sessions in flight (so the parent's memory does not grow with the fleet, and a stopped
run has little unfinished work). ``replay_session`` never raises; what can still fail is the
worker itself (killed by the system for memory, a crash in a C extension) or a replay that never
ends: that session becomes a row with the error, and the others are replayed on fresh workers.
"""
from __future__ import annotations

import os
import threading
from collections import deque
from typing import Any, Iterable, Iterator

from .config import FleetConfig, FleetError
from .worker import SessionTask, ready, replay_batch, replay_session


def _died_row(task: SessionTask, why: str) -> list[dict]:
    """The file's one row when its worker could not give its rows (it died, hung, or failed)."""
    return [{"path": task.path, "size": task.size, "mtime_ns": task.mtime_ns, "conversation": 0,
             "project": os.path.basename(os.path.dirname(task.path)), "subagents": len(task.subagent_files),
             "error": f"{task.path}: {why}"}]


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


class InProcess:
    """Replay in this process, one session after the other (``--workers 0``; tests and debugging)."""
    name = "in-process"

    def run(self, tasks: Iterable[SessionTask], cfg: FleetConfig, cancel: threading.Event) -> Iterator:
        for t in tasks:
            if cancel.is_set():
                return
            yield t, replay_session(t, cfg)


class LocalPool:
    """A pool of worker processes on this machine (default: one per core).

    A worker that dies (killed for memory, a crash in a C extension) breaks the pool; a session that
    runs longer than ``timeout`` seconds gets the pool's processes killed. Either way the sessions that
    were in flight are then replayed one at a time on a fresh pool, so the one to blame is known: it
    becomes a row with the error, and the others are replayed as usual."""

    def __init__(self, workers: int | None = None, tasks_per_child: int = 100, timeout: float | None = None):
        self.workers = workers or default_workers()
        self.tasks_per_child = tasks_per_child
        self.timeout = timeout or None
        self.name = f"local pool of {self.workers} process{'es' if self.workers != 1 else ''}"

    def _pool(self, workers: int | None = None):
        import multiprocessing as mp
        import sys
        from concurrent.futures import ProcessPoolExecutor
        kw: dict[str, Any] = {"max_workers": workers or self.workers, "mp_context": mp.get_context("spawn")}
        if sys.version_info >= (3, 11):
            kw["max_tasks_per_child"] = self.tasks_per_child     # bounds what a worker can accumulate
        return ProcessPoolExecutor(**kw)

    @staticmethod
    def _kill(pool) -> None:
        for p in list((getattr(pool, "_processes", None) or {}).values()):
            try:
                p.kill()
            except (OSError, AttributeError):
                pass
        pool.shutdown(wait=False, cancel_futures=True)

    def _started_pool(self, workers: int | None = None):
        """A pool whose workers have started and imported the replay (so a session's time is its own).
        FleetError when a worker cannot start at all (e.g. the program was read from standard input:
        spawned workers cannot import it)."""
        n = workers or self.workers
        pool = self._pool(n)
        try:
            for f in [pool.submit(ready) for _ in range(n)]:
                f.result(timeout=300)
        except Exception as e:
            self._kill(pool)
            raise FleetError(f"the worker processes cannot start ({type(e).__name__}: {e}); run from a script "
                             "file or the compactscope command, or replay in this process (--workers 0)") from None
        return pool

    def run(self, tasks: Iterable[SessionTask], cfg: FleetConfig, cancel: threading.Event) -> Iterator:
        import time
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool
        queue = deque(tasks)
        suspects: deque = deque()        # in flight when the pool broke or hung: replayed one at a time
        pool = self._started_pool()
        running: dict = {}               # future -> task
        started: dict = {}               # future -> when it was first seen running
        solo = False                     # the one session running is a suspect, alone on a one-worker pool
        try:
            while queue or suspects or running:
                if not running and suspects and not solo:
                    self._kill(pool)
                    pool, solo = self._started_pool(1), True
                if solo and not running and not suspects:
                    self._kill(pool)
                    pool, solo = self._started_pool(), False
                while not cancel.is_set() and len(running) < (1 if solo else 2 * self.workers) and \
                        (suspects if solo else queue):
                    t = suspects.popleft() if solo else queue.popleft()
                    running[pool.submit(replay_session, t, cfg)] = t
                if not running:
                    return
                done, _ = wait(list(running), timeout=0.5, return_when=FIRST_COMPLETED)
                now = time.monotonic()
                broken = hung = False
                for fut in done:
                    t = running.pop(fut)
                    started.pop(fut, None)
                    try:
                        row = fut.result()
                    except BrokenProcessPool:
                        broken = True
                        if solo:
                            yield t, _died_row(t, "the worker process died while replaying it (out of memory, "
                                                  "or a crash), also when replayed on its own")
                        else:
                            suspects.append(t)
                        continue
                    except Exception as e:  # pickling and the like: still one row, not the end
                        row = _died_row(t, f"the worker failed: {type(e).__name__}: {e}")
                    yield t, row
                if self.timeout:
                    for fut in running:
                        if fut.running():
                            started.setdefault(fut, now)
                    late = [f for f, t0 in started.items() if f in running and now - t0 > self.timeout]
                    if late:
                        hung = True
                        if solo:
                            for f in late:
                                t = running.pop(f)
                                yield t, _died_row(t, f"the replay took longer than {self.timeout:g} s (--timeout); "
                                                      "it was stopped")
                if broken or hung:
                    suspects.extend(running.values())
                    running.clear()
                    started.clear()
                    self._kill(pool)
                    pool = self._started_pool(1 if solo else None)
                if cancel.is_set() and not running:
                    return
        finally:
            if cancel.is_set():
                self._kill(pool)
            else:
                pool.shutdown(wait=True, cancel_futures=True)


def batches(tasks: list[SessionTask], parts: int, per_session: int = 100_000,
            most: int = 500) -> list[list[SessionTask]]:
    """``tasks`` (biggest first) in consecutive groups of about the same work, about ``parts`` of them: a
    session weighs its size plus ``per_session`` bytes (what loading and replaying any session costs beside
    its bytes), a group holds at most ``most`` sessions. A session heavier than a group is a group of its own,
    so the biggest sessions still start first and alone, and the small ones at the end travel by hundreds."""
    weight = [t.size + per_session for t in tasks]
    target = sum(weight) / max(1, parts)
    out: list[list[SessionTask]] = []
    cur: list[SessionTask] = []
    acc = 0
    for t, w in zip(tasks, weight):
        if cur and (acc + w > target or len(cur) >= most):
            out.append(cur)
            cur, acc = [], 0
        cur.append(t)
        acc += w
    if cur:
        out.append(cur)
    return out


class DaskCluster:
    """A running ``dask.distributed`` scheduler (``tcp://HOST:PORT``): the same function on its workers.
    The workers must see the session files at the same paths (a shared file system) and have
    compactscope installed.

    The sessions travel in groups (``batches``: about ``per_thread`` groups per worker thread, the biggest
    sessions alone and first, the small ones by hundreds), so 10,000 small sessions cost a few hundred
    scheduler round trips; at most ``2 x threads`` groups are in flight, and each group's rows are taken and
    its result released as soon as it is done. A group that fails (its worker died, and Dask gave up on
    it) is replayed again one session per task, so only the session to blame gets the error."""

    def __init__(self, address: str, in_flight: int | None = None, per_thread: int = 24):
        self.address = address
        self.in_flight = in_flight
        self.per_thread = per_thread
        self.name = f"Dask cluster at {address}"

    def _client(self):
        try:
            from distributed import Client
        except ImportError:
            raise FleetError("--scheduler needs dask.distributed: pip install 'compactscope[fleet]'") from None
        try:
            return Client(self.address, timeout="20s")
        except Exception as e:
            raise FleetError(f"cannot reach the Dask scheduler at {self.address}: {type(e).__name__}: {e}") from None

    def run(self, tasks: Iterable[SessionTask], cfg: FleetConfig, cancel: threading.Event) -> Iterator:
        from distributed import wait
        client = self._client()
        try:
            threads = sum((client.nthreads() or {}).values()) or 1
            window = self.in_flight or 2 * threads
            queue = deque(batches(list(tasks), threads * self.per_thread))
            suspects: deque = deque()       # the sessions of a group that failed: replayed alone, one at a time
            running: dict = {}              # future -> its group

            def submit():
                while not cancel.is_set():
                    if suspects:
                        if running:
                            return
                        group = [suspects.popleft()]
                    elif queue and len(running) < window:
                        group = queue.popleft()
                    else:
                        return
                    running[client.submit(replay_batch, group, cfg, pure=False)] = group
            submit()
            while running:
                fut = next((f for f in running if f.done()), None)
                if fut is None:
                    try:
                        wait(list(running), timeout=1, return_when="FIRST_COMPLETED")
                    except TimeoutError:
                        pass
                    continue
                group = running.pop(fut)
                try:
                    rows = fut.result()
                except Exception as e:  # KilledWorker and the like: one row, not the end
                    if len(group) > 1:              # find the one to blame: each of them on its own
                        suspects.extend(group)
                        rows = None
                    else:
                        rows = [_died_row(group[0], f"the Dask worker failed: {type(e).__name__}: {e}")]
                fut.release()
                del fut
                if rows is not None:
                    yield from zip(group, rows)
                if cancel.is_set():
                    break
                submit()
        finally:
            client.close()


def make_engine(workers: int | None = None, scheduler: str | None = None, timeout: float | None = None):
    if scheduler:
        return DaskCluster(scheduler)
    if workers == 0:
        return InProcess()
    if workers is not None and workers < 0:
        raise FleetError(f"--workers must be 0 (this process) or more, not {workers}")
    if timeout is not None and timeout < 0:
        raise FleetError(f"--timeout must be 0 (none) or more seconds, not {timeout}")
    return LocalPool(workers, timeout=timeout)
