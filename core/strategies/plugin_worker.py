"""A plugin function run in its own process, with a time limit and a memory bound.

A plugin is somebody else's code: it may sleep forever, wait on an event that never fires, allocate
until the machine swaps or return a million messages. ``PluginWorker.call`` runs one call of a
plain-function layer in a child Python process (one per plugin module, kept for the next call):

- the child's address space is bounded (``RLIMIT_AS``: ``memory_limit_mb()``, default 4096 MB,
  ``COMPACTSCOPE_PLUGIN_MEMORY``), so a memory bomb is a ``MemoryError`` in the child, not the machine's;
- the parent waits at most ``time_limit()`` seconds (default 60, ``COMPACTSCOPE_PLUGIN_TIMEOUT``; the
  time the engine's summarizer takes for the plugin is not counted), then kills the child: the call is
  the layer's error, naming the plugin;
- a cancel is passed on (an async plugin's task is cancelled), and a plugin that does not stop within
  the grace is killed;
- the plugin's ``print`` goes to stderr (stdout carries the command's output), its ``input()`` reads
  nothing, and Ctrl+C is the parent's to handle.

The child is started with ``subprocess`` (not ``multiprocessing``): it needs no picklable ``__main__``
and a daemonic fleet worker may start it too. Frames on its stdin/stdout are length-prefixed pickles.
A function the child cannot import (a lambda, a closure, something defined in ``__main__``) runs in
the caller's process as before, with the time limit but no memory bound (``plugin.call_plugin``).
"""
from __future__ import annotations

import math
import os
import pickle
import struct
import subprocess
import sys
import threading
import time
from typing import IO, Any, BinaryIO, Callable

DEFAULT_TIME_LIMIT = 60.0
DEFAULT_MEMORY_MB = 4096
STARTUP = 60.0                  # seconds a plugin process may take to start (import Python and the plugin)
TIMEOUT_ENV = "COMPACTSCOPE_PLUGIN_TIMEOUT"
MEMORY_ENV = "COMPACTSCOPE_PLUGIN_MEMORY"
ISOLATION_ENV = "COMPACTSCOPE_PLUGIN_ISOLATION"      # "process" (default) or "thread"
_HEAD = struct.Struct("!Q")

# file plugins are imported under a generated module name (plugin._module_name): the child imports the
# same file under the same name before it unpickles a function of it
FILE_MODULES: dict[str, str] = {}


def _positive(env: str, default: float) -> float:
    try:
        v = float(os.environ.get(env, "") or default)
    except ValueError:
        return default
    return v if math.isfinite(v) and v > 0 else default


def time_limit() -> float:
    """Seconds one plugin call may take (``--plugin-timeout``, ``COMPACTSCOPE_PLUGIN_TIMEOUT``; default 60)."""
    return _positive(TIMEOUT_ENV, DEFAULT_TIME_LIMIT)


def memory_limit_mb() -> int:
    """The address space a plugin's process may take, in MB (``--plugin-memory``, ``COMPACTSCOPE_PLUGIN_MEMORY``;
    default 4096)."""
    return int(_positive(MEMORY_ENV, DEFAULT_MEMORY_MB))


def isolated() -> bool:
    return os.environ.get(ISOLATION_ENV, "process").strip().lower() != "thread"


def check_limits(timeout: Any = None, memory: Any = None) -> None:
    """ValueError for a time or memory limit that is not a positive number (a CLI option's value)."""
    for name, v in (("--plugin-timeout", timeout), ("--plugin-memory", memory)):
        if v is None:
            continue
        try:
            f = float(v)
        except (TypeError, ValueError):
            raise ValueError(f"{name} takes a positive number, not {v!r}") from None
        if not math.isfinite(f) or f <= 0:
            raise ValueError(f"{name} takes a positive number, not {v!r}")
        if name == "--plugin-memory" and f < 64:
            raise ValueError(f"{name} is in MB and at least 64 (Python itself needs that much), not {v!r}")


# ------------------------------------------------------------------ framing
def _send(f: IO[bytes] | BinaryIO, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    f.write(_HEAD.pack(len(data)) + data)
    f.flush()


def _recv(f: BinaryIO) -> Any:
    head = f.read(_HEAD.size)
    if len(head) < _HEAD.size:
        raise EOFError("the plugin process ended")
    n = _HEAD.unpack(head)[0]
    data = f.read(n)
    if len(data) < n:
        raise EOFError("the plugin process ended mid-answer")
    return pickle.loads(data)


# ------------------------------------------------------------------ outcomes (parent side)
class PluginTimeout(Exception):
    """The plugin did not return within the time limit; its process was ended."""


class PluginMemory(Exception):
    """The plugin ran out of the memory bound."""


class PluginRaised(Exception):
    """The plugin raised: (type name, message, where)."""

    def __init__(self, name: str, message: str, where: str):
        super().__init__(f"{name}: {message}")
        self.name, self.message, self.where = name, message, where


class PluginCancelled(Exception):
    pass


class PluginInterrupted(KeyboardInterrupt):
    """The plugin raised KeyboardInterrupt: the command stops as Ctrl+C would stop it, saying so."""


class NotIsolable(Exception):
    """The child cannot run this function (it cannot import it): run it in the caller's process."""


class WorkerGone(Exception):
    """The child ended without answering (killed from outside, a crash in C code)."""


def _child_env() -> dict:
    env = dict(os.environ)
    paths = [p for p in sys.path if p]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.pop("PYTHONSTARTUP", None)
    return env


class _Clock:
    """The time one call has taken: the child's start-up and the summarizer's time are not the plugin's."""

    def __init__(self, limit: float, grace: float):
        self.limit, self.grace = limit, grace
        self.spent = 0.0
        self.started = False            # the child has begun the call
        self.cancelled_at: float | None = None

    def over(self, now: float, t0: float) -> Exception | None:
        if self.started and self.cancelled_at is not None and now - max(self.cancelled_at, t0) > self.grace:
            return PluginCancelled(f"did not stop within {self.grace:g} s of the cancel; its process was ended")
        if self.spent + (now - t0) > (self.limit if self.started else self.limit + STARTUP):
            return PluginTimeout(f"did not return within {self.limit:g} s (the plugin time limit: "
                                 f"--plugin-timeout or {TIMEOUT_ENV}); its process was ended")
        return None


class PluginWorker:
    """One child process for one plugin module; ``call`` is serialised (one call at a time)."""

    def __init__(self, key: str):
        self.key = key
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._calls = 0

    def _start(self) -> subprocess.Popen:
        mb = memory_limit_mb()
        proc = subprocess.Popen([sys.executable, "-c", "from compactscope.core.strategies.plugin_worker import "
                                 "child_main; child_main()", str(mb)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=_child_env(),
                                start_new_session=False)
        self._proc = proc
        return proc

    def kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            proc.kill()
        except OSError:
            pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        for f in (proc.stdin, proc.stdout):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass

    def call(self, fn_ref: bytes, module: tuple | None, messages: list, kwargs: dict, summarize: Callable | None,
             cancel: threading.Event | None, grace: float) -> tuple[list, bool]:
        """(the result as (tag, payload) items, whether the plugin changed what it was handed in place).
        Raises one of the outcomes above."""
        with self._lock:
            proc = self._proc if self._proc is not None and self._proc.poll() is None else self._start()
            assert proc.stdin is not None and proc.stdout is not None
            try:
                self._calls += 1
                _send(proc.stdin, ("call", self._calls, fn_ref, module, messages, kwargs, summarize is not None))
            except OSError:
                self.kill()
                raise WorkerGone("the plugin process could not be started or ended at once") from None
            except BaseException:
                self.kill()          # half a frame was written (Ctrl+C, a message that cannot be pickled)
                raise
            try:
                return self._wait(proc, summarize, cancel, grace)
            except (KeyboardInterrupt, SystemExit):
                self.kill()          # Ctrl+C while the plugin runs: its process goes with the command
                raise

    def _wait(self, proc: subprocess.Popen, summarize: Callable | None, cancel: threading.Event | None,
              grace: float) -> tuple[list, bool]:
        clock = _Clock(time_limit(), grace)
        while True:
            msg = self._next(proc, cancel, clock)
            if msg[0] == "started":
                clock.spent, clock.started = 0.0, True
                continue
            if msg[0] != "summarize":
                return self._outcome(msg)
            try:
                text = summarize(*msg[1]) if summarize is not None else ""
                reply: tuple = ("summary", True, text)
            except Exception as e:  # noqa: BLE001 - handed to the plugin as a SummaryError
                reply = ("summary", False, str(e))
            try:
                _send(proc.stdin, reply)         # type: ignore[arg-type]
            except OSError:
                self.kill()
                raise WorkerGone("its process ended while its summary was written") from None

    def _next(self, proc: subprocess.Popen, cancel: threading.Event | None, clock: "_Clock") -> tuple:
        """The child's next frame, waiting within the time limit and passing a cancel on."""
        box: dict = {}
        got = threading.Event()

        def read() -> None:
            try:
                box["msg"] = _recv(proc.stdout)     # type: ignore[arg-type]
            except BaseException as e:  # noqa: BLE001 - said to the waiting thread
                box["gone"] = e
            got.set()
        threading.Thread(target=read, name="compactscope plugin reader", daemon=True).start()
        t0 = time.monotonic()
        while not got.wait(0.05):
            now = time.monotonic()
            if cancel is not None and cancel.is_set() and clock.cancelled_at is None:
                clock.cancelled_at = now
                try:
                    _send(proc.stdin, ("cancel", self._calls))     # type: ignore[arg-type]
                except OSError:
                    pass
            why = clock.over(now, t0)
            if why is not None:
                self.kill()
                raise why
        clock.spent += time.monotonic() - t0
        if "gone" in box:
            try:              # its pipe closed as it exited: its exit status comes a moment later
                code = proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                code = None
            self.kill()
            raise WorkerGone(f"its process ended without an answer (exit status {code})")
        return box["msg"]

    def _outcome(self, msg: tuple) -> tuple[list, bool]:
        kind = msg[0]
        if kind == "result":
            return msg[1], msg[2]
        if kind == "raised":
            raise PluginRaised(msg[1], msg[2], msg[3])
        if kind == "memory":
            raise PluginMemory(f"ran out of memory{msg[1]}: it needs more than the plugin memory bound of "
                               f"{memory_limit_mb():,} MB (--plugin-memory or {MEMORY_ENV})")
        if kind == "cancelled":
            raise PluginCancelled("was cancelled")
        if kind == "interrupt":
            raise PluginInterrupted(f"raised KeyboardInterrupt{msg[1]}")
        if kind == "summary_error":
            from ..summarizers import SummaryError
            raise SummaryError(msg[1])
        raise NotIsolable(str(msg[1]) if len(msg) > 1 else "the plugin process cannot run it")


_workers: dict[str, PluginWorker] = {}
_workers_lock = threading.Lock()


def worker_for(key: str) -> PluginWorker:
    with _workers_lock:
        if not _workers:
            import atexit
            atexit.register(stop_all)
        w = _workers.get(key)
        if w is None:
            w = _workers[key] = PluginWorker(key)
        return w


def stop_all() -> None:
    with _workers_lock:
        ws = list(_workers.values())
        _workers.clear()
    for w in ws:
        w.kill()


# ------------------------------------------------------------------ the child
def _bound_memory(mb: int) -> None:
    try:
        import resource
        limit = mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError):      # no such limit here (Windows): the time limit still holds
        pass


def _import_plugin_file(name: str, path: str, loaded: dict) -> None:
    import importlib.util
    try:
        mtime = os.stat(path).st_mtime_ns
    except OSError:
        mtime = None
    if loaded.get(name) == mtime and name in sys.modules:
        return
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} cannot be imported")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    folder = os.path.dirname(path)
    added = folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(mod)
    finally:
        if added and folder in sys.path:
            sys.path.remove(folder)
    loaded[name] = mtime


def _where(e: BaseException, fn: Any) -> str:
    import traceback
    code = getattr(fn, "__code__", None)
    fname = code.co_filename if code is not None else None
    frames = traceback.extract_tb(e.__traceback__)
    mine = [f for f in frames if fname and f.filename == fname] or frames[-1:]
    return f" (line {mine[-1].lineno} of {os.path.basename(mine[-1].filename)})" if mine else ""


class _Child:
    def __init__(self, out: BinaryIO, inbox: Any, summaries: Any):
        self.out = out
        self.inbox, self.summaries = inbox, summaries
        self.cancelled: set = set()             # the calls the parent cancelled (perhaps before they began)
        self.current: Any = None
        self.loop: Any = None
        self.task: Any = None
        self.loaded: dict = {}

    def summarize(self, what: Any, instructions: str = "", max_tokens: int = 2000) -> str:
        if not isinstance(what, str):
            what = list(what)
        _send(self.out, ("summarize", (what, instructions, max_tokens)))
        ok, text = self.summaries.get()
        if not ok:
            from ..summarizers import SummaryError
            raise SummaryError(text)
        return text

    def run(self, fn: Any, messages: list, kwargs: dict) -> Any:
        import asyncio
        import inspect
        res = fn(messages, **kwargs)
        if inspect.isawaitable(res):
            loop = asyncio.new_event_loop()

            async def _run(aw: Any = res) -> Any:
                return await aw
            try:
                task = loop.create_task(_run())
                self.loop, self.task = loop, task        # then the cancelled check: a cancel is never missed
                if self.current in self.cancelled:
                    task.cancel()
                res = loop.run_until_complete(task)
            finally:
                self.loop = self.task = None
                loop.close()
        return res

    def on_cancel(self, call: Any) -> None:
        self.cancelled.add(call)
        loop, task = self.loop, self.task
        if call == self.current and loop is not None and task is not None:
            try:
                loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:
                pass

    def handle(self, req: tuple) -> tuple:
        import asyncio
        _, call, fn_ref, module, messages, kwargs, wants_summarize = req
        self.current = call
        if call in self.cancelled:
            return ("cancelled",)
        _send(self.out, ("started",))           # the plugin's time starts now (not the process's start-up)
        try:
            if module is not None:
                _import_plugin_file(module[0], module[1], self.loaded)
            fn = pickle.loads(fn_ref)
        except BaseException as e:  # noqa: BLE001 - the caller runs it in its own process instead
            return ("not_isolable", f"{type(e).__name__}: {e}")
        if wants_summarize:
            kwargs = {**kwargs, "summarize": self.summarize}
        refs = list(messages)
        before = [pickle.dumps(m, protocol=pickle.HIGHEST_PROTOCOL) for m in messages]
        try:
            res = self.run(fn, messages, kwargs)
        except asyncio.CancelledError:
            return ("cancelled",)
        except MemoryError as e:
            return ("memory", _where(e, fn))
        except KeyboardInterrupt as e:
            return ("interrupt", _where(e, fn))
        except BaseException as e:  # noqa: BLE001 - a plugin's failure, said in words
            from ..summarizers import SummaryError
            if isinstance(e, SummaryError):
                return ("summary_error", str(e))
            return ("raised", type(e).__name__, str(e), _where(e, fn))
        try:
            return ("result", *_encode(res, refs, before, messages))
        except MemoryError as e:
            return ("memory", _where(e, fn))


def _encode(res: Any, refs: list, before: list, handed: list) -> tuple[Any, bool]:
    """The result with each message handed back unchanged as ("ref", i), one changed in place as
    ("changed", i, message), a new one as ("new", message); and whether anything handed was changed in
    place. Anything that is not a list goes back as it is (the parent says what is wrong with it)."""
    changed = [pickle.dumps(m, protocol=pickle.HIGHEST_PROTOCOL) != b for m, b in zip(refs, before, strict=False)]
    mutated = any(changed) or len(handed) != len(refs) or any(x is not y for x, y in zip(handed, refs, strict=False))
    if not isinstance(res, (list, tuple)):
        return ("value", res), mutated
    index = {id(m): i for i, m in enumerate(refs)}
    items: list = []
    for m in res:
        i = index.get(id(m))
        if i is None:
            items.append(("new", m))
        elif changed[i]:
            items.append(("changed", i, m))
        else:
            items.append(("ref", i))
    return ("items", items), mutated


def child_main() -> None:
    """The plugin process: read calls from stdin, answer on stdout (the plugin's own prints go to stderr)."""
    import queue
    import signal
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)        # Ctrl+C is the parent's to handle
    except (ValueError, OSError):
        pass
    _bound_memory(int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else DEFAULT_MEMORY_MB)
    proto_in = os.fdopen(os.dup(0), "rb")
    proto_out = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)                                          # a plugin's print() must not break the frames
    sys.stdout = sys.stderr
    inbox: queue.Queue = queue.Queue()
    summaries: queue.Queue = queue.Queue()
    child = _Child(proto_out, inbox, summaries)

    def reader() -> None:
        while True:
            try:
                msg = _recv(proto_in)
            except BaseException:  # noqa: BLE001 - the parent went away: stop, even mid-plugin
                os._exit(0)
            if msg[0] == "cancel":
                child.on_cancel(msg[1])
            elif msg[0] == "summary":
                summaries.put((msg[1], msg[2]))
            else:
                inbox.put(msg)
    threading.Thread(target=reader, daemon=True).start()
    while True:
        req = inbox.get()
        try:
            answer = child.handle(req)
        except MemoryError:
            answer = ("memory", "")
        try:
            _send(proto_out, answer)
        except MemoryError:
            _send(proto_out, ("memory", " (its result is too large to hand back)"))
        except (pickle.PicklingError, TypeError, AttributeError) as e:
            _send(proto_out, ("raised", "TypeError", f"its result cannot be handed back ({e})", ""))
        except OSError:
            os._exit(0)
