"""Benchmark: an HTML report of a 3 MB Claude Code session, side by side with claude-code-log.

Target: Compactscope's report takes at most a fifth of claude-code-log's time for its HTML of the same
session. Two measurements, each a ratio of medians (and the median of the pairwise ratios):

* whole process: ``compactscope report FILE -o X.html`` against ``claude-code-log FILE --no-cache -o Y.html``,
  started in turn (A B A B ...), interpreter start-up and imports included, wall and CPU seconds;
* in process: load + build + render to a file, against ``claude_code_log.converter.convert_jsonl_to_html``
  (no cache, silent), each run in a fresh interpreter timed after its imports (claude-code-log keeps
  caches between conversions in one process).

claude-code-log is not a dependency of Compactscope: install it to compare (``pip install claude-code-log``);
without it this script says so and prints only Compactscope's own figures.

    python bench/bench_report.py [--file SESSION.jsonl] [--runs 5] [--replay]
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CORPUS = ROOT.parent / "shared" / "corpus"
DEFAULT = CORPUS / "entireio-cli" / "b0-2936744f3b-0-full.jsonl"


# a user's install has its bytecode compiled: never time Python compiling our sources on every start
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def claude_code_log_command() -> list[str] | None:
    """claude-code-log's command: beside this interpreter, else on PATH; None when it is not installed."""
    here = Path(sys.executable).parent / "claude-code-log"
    if here.exists():
        return [str(here)]
    found = shutil.which("claude-code-log")
    return [found] if found else None


def timed(cmd: list[str]) -> tuple[float, float, int]:
    """(wall s, cpu s of the child, exit code) of one whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENV)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr[-800:]}")
    return wall, cpu, r.returncode


OURS = """
import sys, time
from compactscope.core.loaders import load
from compactscope.core.pipeline.engine import Engine
from compactscope.core.report import build_report, write_report
from compactscope.core.strategies import choose_strategy, get, infer_params
get("claude_code"); get("s08"); get("hermes")
t0, c0 = time.perf_counter(), time.process_time()
result = load(sys.argv[1])
choice = choose_strategy(result.main)
inferred = infer_params(choice.name, result.main)
rep = build_report(result, Engine(choice.name, inferred.apply({})), replay=sys.argv[3] == "1", choice=choice,
                   inferred=inferred)
write_report(rep, sys.argv[2])
print(time.perf_counter() - t0, time.process_time() - c0)
"""

THEIRS = """
import sys, time
from pathlib import Path
from claude_code_log.converter import convert_jsonl_to_html
t0, c0 = time.perf_counter(), time.process_time()
convert_jsonl_to_html(Path(sys.argv[1]), Path(sys.argv[2]), use_cache=False, silent=True,
                      generate_individual_sessions=False)
print(time.perf_counter() - t0, time.process_time() - c0)
"""


def in_process(code: str, *args: str) -> tuple[float, float]:
    """(wall, cpu) seconds of one conversion in a fresh interpreter, after its imports (each tool keeps
    caches between conversions in one process, so every run gets its own)."""
    r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=ENV)
    if r.returncode != 0:
        raise SystemExit(f"in-process run failed: {r.stderr[-800:]}")
    wall, cpu = r.stdout.strip().splitlines()[-1].split()
    return float(wall), float(cpu)


def line(name: str, xs: list[float]) -> str:
    return f"{name:<34} median {statistics.median(xs):7.3f} s   min {min(xs):7.3f}   max {max(xs):7.3f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--file", type=Path, default=DEFAULT, help="a Claude Code session (default: corpus b0, 3.1 MB)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--replay", action="store_true", help="our report with --replay too (theirs has no replay)")
    args = ap.parse_args()
    if not args.file.is_file():
        print(f"{args.file}: no such file (the corpus is at ../shared/corpus)", file=sys.stderr)
        return 2
    ccl = claude_code_log_command()
    have_module = importlib.util.find_spec("claude_code_log") is not None
    size = args.file.stat().st_size
    print(f"{args.file.name}: {size / 1e6:.1f} MB; {args.runs} runs each, in turn"
          + ("; our report with --replay" if args.replay else ""))
    subprocess.run([sys.executable, "-m", "compileall", "-q", *(str(ROOT / d) for d in ("core", "app",
                                                                                      "compactscope"))],
                   stdout=subprocess.DEVNULL, env=ENV)
    tmp = Path(tempfile.mkdtemp(prefix="bench-report-"))
    try:
        ours_cmd = [sys.executable, "-m", "compactscope", "report", str(args.file), "-o", str(tmp / "ours.html")]
        if args.replay:
            ours_cmd.append("--replay")
        theirs_cmd = ccl + [str(args.file), "--no-cache", "-o", str(tmp / "theirs.html")] if ccl else None
        # one warm-up each (file cache, .pyc)
        timed(ours_cmd)
        if theirs_cmd:
            timed(theirs_cmd)
        ow, oc, tw, tc = [], [], [], []
        for _ in range(args.runs):
            w, c, _rc = timed(ours_cmd)
            ow.append(w)
            oc.append(c)
            if theirs_cmd:
                w, c, _rc = timed(theirs_cmd)
                tw.append(w)
                tc.append(c)
        print("whole process (start-up and imports included):")
        print(line("  compactscope report (wall)", ow))
        print(line("  compactscope report (cpu)", oc))
        print(f"  report size: {(tmp / 'ours.html').stat().st_size:,} bytes")
        if theirs_cmd:
            print(line("  claude-code-log (wall)", tw))
            print(line("  claude-code-log (cpu)", tc))
            print(f"  their size: {(tmp / 'theirs.html').stat().st_size:,} bytes")
            pairs = [a / b for a, b in zip(ow, tw)]
            print(f"  ratio ours/theirs: wall {statistics.median(ow) / statistics.median(tw):.3f} (median of pairs "
                  f"{statistics.median(pairs):.3f}), cpu {statistics.median(oc) / statistics.median(tc):.3f}  "
                  f"(target <= 0.200)")
        else:
            print("  claude-code-log is not installed (pip install claude-code-log): no comparison")
        print("in process (a fresh interpreter per run, timed after its imports):")
        oi, ti = [], []
        for _ in range(args.runs):
            oi.append(in_process(OURS, str(args.file), str(tmp / "ours2.html"), "1" if args.replay else "0"))
            if have_module:
                ti.append(in_process(THEIRS, str(args.file), str(tmp / "theirs2.html")))
        print(line("  compactscope (wall)", [w for w, _ in oi]))
        print(line("  compactscope (cpu)", [c for _, c in oi]))
        if have_module:
            print(line("  claude-code-log (wall)", [w for w, _ in ti]))
            print(line("  claude-code-log (cpu)", [c for _, c in ti]))
            med = statistics.median
            print(f"  ratio ours/theirs: wall {med(w for w, _ in oi) / med(w for w, _ in ti):.3f}, "
                  f"cpu {med(c for _, c in oi) / med(c for _, c in ti):.3f}  (target <= 0.200)")
        else:
            print("  claude_code_log is not importable here: no in-process comparison")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
