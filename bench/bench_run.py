"""CPU of ``compactscope run --json`` on a big Claude Code session against a bare parse of the same file (issue 27).

    python bench/bench_run.py                      # 100,000 messages; s08, claude_code, hermes; best of 3
    python bench/bench_run.py --messages 300 --repeat 1      # the small smoke size
    python bench/bench_run.py --file SESSION.jsonl --strategies s08

What it measures: the session is written by ``bench_memory.write_session`` (the realistic Claude Code JSONL
the memory bench uses: envelopes, streamed assistant turns with tool calls and usage, tool results with their
``toolUseResult``). Then, per strategy, the command ``python -m compactscope run FILE --strategy S --json``
(output to /dev/null, its own cache folder) and the reference ``python bench/ref_parse.py FILE`` each run in a
fresh process, interleaved (reference, command, reference, command, ...) so both see the same load, and the
CPU of each child (user + system, from ``wait4``) is taken, the best of ``--repeat``. The reference is a bare
parse: ``orjson.loads`` of every line, every record kept, each message's size taken (``len(repr(message))``), in
an interpreter with its default settings (see ``bench/ref_parse.py``); the ratio to the same with the cyclic GC
off (``ref_parse.py --no-gc``, a stricter reference: the loader turns the GC off too) is printed beside it.

Then the same command once more in this process, its CPU split into phases (each charged only for the time
not spent in a phase nested in it): load (``load_file``: read, parse, build the messages), infer (the
session-inferred parameters), pipeline (the layers themselves), check (the API-validity checker after every
layer), size (the size meter and the token estimator after every layer), output (the trace as JSON, encoded
and written), other (argument parsing, the engine, the rest). These are printed in seconds and as a ratio to
the reference.

Target (issue 27): the command at most 3x the bare parse at 100k messages. Prints figures; asserts nothing.
"""
from __future__ import annotations

import argparse
import functools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

TARGET = 3.0


def child_cpu(cmd: list[str], env: dict) -> tuple[float, int, str]:
    """(user + system CPU seconds, exit code, the end of stderr) of ``cmd`` in a fresh process."""
    with open(os.devnull, "wb") as null:
        p = subprocess.Popen(cmd, stdout=null, stderr=subprocess.PIPE, cwd=str(ROOT), env=env)
        err = p.stderr.read().decode(errors="replace") if p.stderr else ""
        _, status, ru = os.wait4(p.pid, 0)
    if p.stderr:
        p.stderr.close()
    return ru.ru_utime + ru.ru_stime, os.waitstatus_to_exitcode(status), err.strip()[-300:]


class Phases:
    """Exclusive CPU time per phase: a timed call nested in another is charged to itself only."""

    def __init__(self):
        self.spent: dict[str, float] = {}
        self.stack: list[str] = ["other"]
        self.mark = time.process_time()

    def _charge(self) -> None:
        now = time.process_time()
        top = self.stack[-1]
        self.spent[top] = self.spent.get(top, 0.0) + now - self.mark
        self.mark = now

    def wrap(self, name: str, fn):
        @functools.wraps(fn)
        def timed(*a, **kw):
            self._charge()
            self.stack.append(name)
            try:
                return fn(*a, **kw)
            finally:
                self._charge()
                self.stack.pop()
        timed.__wrapped_phase__ = fn  # type: ignore[attr-defined]
        return timed

    def patch(self, owner, attr: str, name: str, undo: list) -> None:
        fn = getattr(owner, attr)
        undo.append((owner, attr, fn))
        setattr(owner, attr, self.wrap(name, fn))


def phases_of(path: Path, strategy: str) -> dict[str, float]:
    """The command run in this process, its CPU split into phases (see the docstring)."""
    import gc
    from compactscope.app import cli
    from compactscope.core import strategies
    from compactscope.core.pipeline import engine, size, trace
    ph = Phases()
    undo: list = []
    ph.patch(cli, "load_file", "load", undo)
    ph.patch(strategies, "infer_params", "infer", undo)
    ph.patch(engine.Engine, "run", "pipeline", undo)
    ph.patch(engine, "check", "check", undo)
    ph.patch(engine, "load_fix_findings", "check", undo)
    ph.patch(size.SizeMeter, "size", "size", undo)
    ph.patch(size.SizeMeter, "derive", "size", undo)
    ph.patch(trace.Trace, "to_json", "output", undo)
    ph.patch(cli, "_print_json", "output", undo)
    patched_tokens: list = []
    real_post_init = engine.Engine.__post_init__

    def post_init(self):                     # the strategy's token estimator, whatever its class
        real_post_init(self)
        cls = type(self.tokens)
        if cls not in patched_tokens:
            patched_tokens.append(cls)
            ph.patch(cls, "tokens", "size", undo)
    undo.append((engine.Engine, "__post_init__", real_post_init))
    engine.Engine.__post_init__ = post_init  # type: ignore[method-assign]
    real_stdout, real_stderr = sys.stdout, sys.stderr
    gc.collect()
    try:
        with open(os.devnull, "w") as null:
            sys.stdout = sys.stderr = null
            ph.mark = time.process_time()
            cli.main(["run", str(path), "--strategy", strategy, "--json"])
            ph._charge()
    finally:
        sys.stdout, sys.stderr = real_stdout, real_stderr
        for owner, attr, fn in reversed(undo):
            setattr(owner, attr, fn)
        gc.unfreeze()
        gc.collect()
    return ph.spent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--file", help="this Claude Code session instead of a generated one")
    ap.add_argument("--strategies", default="s08,claude_code,hermes")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each (the best is kept)")
    ap.add_argument("--no-phases", action="store_true", help="skip the in-process run split into phases")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cs-bench-run-"))
    try:
        return _bench(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _bench(args, tmp: Path) -> int:
    from bench_memory import write_session
    if args.file:
        path = Path(args.file)
    else:
        path = tmp / "session.jsonl"
        write_session(path, args.messages)
    size = path.stat().st_size
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp / "cache")}
    os.environ["XDG_CACHE_HOME"] = env["XDG_CACHE_HOME"]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    n = args.messages if not args.file else sum(1 for _ in path.open("rb"))
    print(f"session: {n:,} {'lines' if args.file else 'messages'}, {size / 1e6:.1f} MB; load average {load:.1f} "
          f"on {os.cpu_count()} cores; CPU = user + system of each child, best of {args.repeat}")
    py = sys.executable
    ref_cmd = [py, str(ROOT / "bench" / "ref_parse.py"), str(path)]
    worst = 0.0
    for s in args.strategies.split(","):
        cmd = [py, "-m", "compactscope", "run", str(path), "--strategy", s, "--json"]
        refs, runs, strict = [], [], []
        for _ in range(args.repeat):
            refs.append(child_cpu(ref_cmd, env)[0])
            strict.append(child_cpu(ref_cmd + ["--no-gc"], env)[0])
            t, code, err = child_cpu(cmd, env)
            if code != 0:
                print(f"  run --json --strategy {s} exited {code}: {err}")
            runs.append(t)
        ref, run, ref_strict = min(refs), min(runs), min(strict)
        ratio = run / ref
        worst = max(worst, ratio)
        print(f"run --json {s} {n // 1000}k: {run:.2f} s CPU = {ratio:.1f}x bare parse ({ref:.2f} s)  "
              f"target <= {TARGET:g}x  {'OK' if ratio <= TARGET else 'NOT MET'}  "
              f"({run / ref_strict:.1f}x the bare parse with the GC off, {ref_strict:.2f} s)")
        if not args.no_phases:
            spent = phases_of(path, s)
            total = sum(spent.values())
            parts = "  ".join(f"{k} {spent.get(k, 0.0):.2f} s ({spent.get(k, 0.0) / ref:.2f}x)"
                              for k in ("load", "infer", "pipeline", "check", "size", "output", "other"))
            print(f"    phases (in process, {total:.2f} s CPU): {parts}")
    print(f"worst: {worst:.1f}x the bare parse  target <= {TARGET:g}x  {'OK' if worst <= TARGET else 'NOT MET'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
