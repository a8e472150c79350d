"""Start-up CPU of headless commands against a bare interpreter (issue 27).

    python bench/bench_startup.py                  # best of 7
    python bench/bench_startup.py --repeat 1       # the small smoke size

What it measures: each command runs in a fresh process (``python -m compactscope ...``, its output to
/dev/null, its own cache folder) on a two-message Claude Code session written by ``bench_memory.write_session``
into a folder of its own (so ``info`` finds no partner file beside it): ``info FILE``, ``info FILE --json``,
``run FILE --json``, ``check FILE``, ``strategies``, ``strategies --json`` and ``--help``. The reference is the bare interpreter,
``python -c pass``, measured directly (no script of its own: that is the whole program). Both are run with the
same environment, interleaved (reference, command, reference, command, ...), and the CPU of each child (user +
system, from ``wait4``) is taken, the best of ``--repeat``. Byte-code is cached as an installed package's would be:
``PYTHONDONTWRITEBYTECODE`` is dropped and ``PYTHONPYCACHEPREFIX`` points at a temporary folder that a first,
unmeasured run of every command fills. It also prints how many modules each command has imported at its end
(``-X importtime`` lines) and whether numpy, PySide6, anthropic, tiktoken, pyarrow or dask are among them.

Target (issue 27): every headless command at most 2x the bare interpreter. Prints figures; asserts nothing.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

TARGET = 2.0
HEAVY = ("numpy", "PySide6", "anthropic", "tiktoken", "pyarrow", "dask", "pyqtgraph")


def child_cpu(cmd: list[str], env: dict) -> tuple[float, int]:
    """(user + system CPU seconds, exit code) of ``cmd`` in a fresh process, its output discarded."""
    with open(os.devnull, "wb") as null:
        p = subprocess.Popen(cmd, stdout=null, stderr=null, cwd=str(ROOT), env=env)
        _, status, ru = os.wait4(p.pid, 0)
    return ru.ru_utime + ru.ru_stime, os.waitstatus_to_exitcode(status)


def imported(cmd: list[str], env: dict) -> list[str]:
    """The top-level names of the modules ``cmd`` imports (from ``-X importtime``)."""
    r = subprocess.run([cmd[0], "-X", "importtime", *cmd[1:]], cwd=str(ROOT), env=env, capture_output=True,
                       text=True)
    names = [line.rsplit("|", 1)[-1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")]
    return [n for n in names if n and n != "package"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=7, help="runs of each (the best is kept)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cs-bench-startup-"))
    try:
        return _bench(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _bench(args, tmp: Path) -> int:
    from bench_memory import write_session
    folder = tmp / "session"
    folder.mkdir()
    path = folder / "tiny.jsonl"
    write_session(path, 2)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(XDG_CACHE_HOME=str(tmp / "cache"), PYTHONPYCACHEPREFIX=str(tmp / "pyc"), QT_QPA_PLATFORM="offscreen")
    py = sys.executable
    bare = [py, "-c", "pass"]
    commands = {"info FILE": ["info", str(path)], "info FILE --json": ["info", str(path), "--json"],
                "run FILE --json": ["run", str(path), "--json"], "check FILE": ["check", str(path)],
                "strategies": ["strategies"], "strategies --json": ["strategies", "--json"], "--help": ["--help"]}
    for argv in commands.values():                 # fills the byte-code cache (not measured)
        child_cpu([py, "-m", "compactscope", *argv], env)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"python {sys.version.split()[0]}; load average {load:.1f} on {os.cpu_count()} cores; CPU = user + system "
          f"of each child, best of {args.repeat}; reference: python -c pass")
    worst = 0.0
    for label, argv in commands.items():
        cmd = [py, "-m", "compactscope", *argv]
        refs, runs = [], []
        for _ in range(args.repeat):
            refs.append(child_cpu(bare, env)[0])
            t, code = child_cpu(cmd, env)
            if code != 0:
                print(f"  {label} exited {code}")
            runs.append(t)
        ref, run = min(refs), min(runs)
        ratio = run / ref if ref > 0 else float("inf")
        worst = max(worst, ratio)
        mods = imported(cmd, env)
        heavy = sorted({m.split(".")[0] for m in mods if m.split(".")[0] in HEAVY})
        print(f"start-up {label}: {run * 1000:.0f} ms CPU = {ratio:.1f}x bare interpreter ({ref * 1000:.0f} ms)  "
              f"target <= {TARGET:g}x  {'OK' if ratio <= TARGET else 'NOT MET'}  ({len(mods)} modules imported; "
              f"heavy: {', '.join(heavy) or 'none'})")
    print(f"worst: {worst:.1f}x the bare interpreter  target <= {TARGET:g}x  {'OK' if worst <= TARGET else 'NOT MET'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
