"""Peak memory of ``compactscope run --json`` and ``replay --json`` on a big Claude Code session, per strategy.

    python bench/bench_memory.py [--messages 100000] [--strategies s08,claude_code,hermes] [--replay]
    python bench/bench_memory.py --messages 2000      # the small smoke size

Writes a Claude Code session (JSONL, one record per message as Claude Code writes them: the envelope
with uuids, cwd, version, timestamps; assistant turns with text and tool calls, usage; tool results
with their ``toolUseResult``) of N messages, then runs each command in a fresh process with its JSON
output going to /dev/null, and prints the process's peak RSS (the kernel's accounting of the finished
child), that peak less the same command's peak on a two-message file (the interpreter and imports),
both against the file size, and the time. With ``--tracemalloc`` it also runs load + pipeline + JSON
in this process under tracemalloc (Python allocations only). Target (issue 12): the peak within 3x
the file at 100k messages. Prints figures; asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def write_session(path: Path, n: int, seed: int = 7) -> int:
    """A Claude Code session of ``n`` messages; returns the file size."""
    import random
    rng = random.Random(seed)
    session = str(uuid.UUID(int=rng.getrandbits(128)))
    t0 = 1_767_000_000.0
    parent = None
    env = {"isSidechain": False, "userType": "external", "cwd": "/home/dev/work/payments",
           "sessionId": session, "version": "2.1.14", "gitBranch": "feature/retry-logic"}

    def stamp(k: int) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t0 + 20 * k)) + f".{k % 1000:03d}Z"

    with path.open("w", encoding="utf-8") as f:
        def rec(k: int, kind: str, message: dict, **extra) -> None:
            nonlocal parent
            u = str(uuid.UUID(int=rng.getrandbits(128)))
            f.write(json.dumps({"parentUuid": parent, **env, "type": kind, "message": message, "uuid": u,
                                "timestamp": stamp(k), **extra}) + "\n")
            parent = u

        rec(0, "user", {"role": "user", "content": "Refactor the retry logic of the payments client and keep "
                                                    "the tests green."})
        k, turn = 1, 0
        while k < n:
            turn += 1
            tid = f"toolu_{turn:08d}"
            if turn % 40 == 0 and k + 2 <= n:
                rec(k, "assistant", {"model": "claude-opus-4-5", "id": f"msg_{turn:08d}", "type": "message",
                                     "role": "assistant", "content": [{"type": "text", "text": f"Step {turn} "
                                                                       "is done; the tests pass. " * 6}],
                                     "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 90,
                                                                          "cache_read_input_tokens": 40_000}},
                    requestId=f"req_{turn:08d}")
                rec(k + 1, "user", {"role": "user", "content": f"Good. Now part {turn // 40 + 1}."})
                k += 2
                continue
            read = turn % 3 != 0
            inp = {"file_path": f"/home/dev/work/payments/src/pay/mod_{turn % 97}.py"} if read else \
                {"command": f"pytest -q tests/test_retry.py -k case_{turn}", "description": "Run the retry tests"}
            rec(k, "assistant", {"model": "claude-opus-4-5", "id": f"msg_{turn:08d}", "type": "message",
                                 "role": "assistant",
                                 "content": [{"type": "text", "text": f"Let me check {'the module' if read else 'the tests'}"
                                                                      f" for step {turn}."},
                                             {"type": "tool_use", "id": tid, "name": "Read" if read else "Bash",
                                              "input": inp}],
                                 "stop_reason": "tool_use",
                                 "usage": {"input_tokens": 10, "cache_creation_input_tokens": 300,
                                           "cache_read_input_tokens": 40_000 + 30 * turn, "output_tokens": 60}},
                requestId=f"req_{turn:08d}")
            if k + 1 >= n:
                break
            lines = 5 + (turn * 7) % 60
            body = "\n".join(f"{j:>4}  def handler_{turn}_{j}(x): return retry(x, attempts={j})"
                             for j in range(lines))
            extra = {"toolUseResult": {"type": "text", "file": {"filePath": inp["file_path"], "numLines": lines,
                                                               "startLine": 1, "totalLines": lines}}} if read else \
                {"toolUseResult": {"stdout": body[:200], "stderr": "", "interrupted": False}}
            rec(k + 1, "user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid,
                                                             "content": body}]}, **extra)
            k += 2
    return path.stat().st_size


def peak_of(cmd: list[str]) -> tuple[int, float, int]:
    """(peak RSS in bytes, seconds, exit code) of ``cmd`` in a fresh process, its output discarded."""
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as null:
        p = subprocess.Popen(cmd, stdout=null, stderr=subprocess.PIPE, cwd=str(ROOT))
        _, status, ru = os.wait4(p.pid, 0)
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code not in (0,):
        print(f"    ({' '.join(cmd[3:])} exited {code}: {err.strip()[-300:]})")
    return ru.ru_maxrss * 1024, time.perf_counter() - t0, code


def traced(path: Path, strategy: str) -> tuple[int, int]:
    """(tracemalloc peak, after load) of load + pipeline + streamed JSON in this process."""
    import tracemalloc
    from compactscope.core.files.jsonout import write_json
    from compactscope.core.loaders import load
    from compactscope.core.pipeline.engine import Engine
    from compactscope.core.files.workspace import Workspace
    tracemalloc.start()
    conv = load(path).main
    loaded = tracemalloc.get_traced_memory()[0]
    with tempfile.TemporaryDirectory() as tmp:
        t = Engine(strategy, workspace=Workspace(tmp)).run(conv.messages, conversation=conv)
        with open(os.devnull, "w") as null:
            write_json(t.to_json(), null.write)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak, loaded


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--strategies", default="s08,claude_code,hermes")
    ap.add_argument("--replay", action="store_true", help="replay --json too (one process per strategy)")
    ap.add_argument("--tracemalloc", action="store_true", help="also trace Python allocations in this process")
    ap.add_argument("--keep", metavar="FILE", help="write the session here and keep it")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cs-bench-mem-"))
    path = Path(args.keep) if args.keep else tmp / "session.jsonl"
    size = write_session(path, args.messages)
    tiny = tmp / "tiny.jsonl"
    write_session(tiny, 2)
    env_cache = {**os.environ, "XDG_CACHE_HOME": str(tmp / "cache")}
    os.environ.update(env_cache)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"session: {args.messages:,} messages, {size / 1e6:.1f} MB (Claude Code JSONL); load average {load:.1f} "
          f"on {os.cpu_count()} cores")
    py = [sys.executable, "-m", "compactscope"]
    base, _, _ = peak_of(py + ["run", str(tiny), "--json"])
    print(f"baseline (run --json on a 2-message file): peak RSS {base / 1e6:.0f} MB")
    for s in args.strategies.split(","):
        cmds = [("run --json", ["run", str(path), "--strategy", s, "--json"])]
        if args.replay:
            cmds.append(("replay --json", ["replay", str(path), "--strategy", s, "--json"]))
        for label, cmd in cmds:
            peak, secs, code = peak_of(py + cmd)
            print(f"  {s:<12} {label:<14} peak RSS {peak / 1e6:6.0f} MB = {peak / size:4.2f}x the file "
                  f"(less the baseline: {(peak - base) / size:4.2f}x); {secs:5.1f} s"
                  + ("" if peak <= 3 * size else "   [over 3x]"))
        if args.tracemalloc:
            tpeak, loaded = traced(path, s)
            print(f"  {s:<12} tracemalloc    peak {tpeak / 1e6:6.0f} MB = {tpeak / size:4.2f}x the file "
                  f"(the loaded conversation alone {loaded / 1e6:.0f} MB = {loaded / size:.2f}x)")
    if not args.keep:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
