"""Make Gemini CLI sessions with chat compressions: the real CLI (npm ``@google/gemini-cli``, 0.61.0 by default)
against a scripted local fake of the Gemini API on 127.0.0.1, in a scratch project where its tool calls really run.

Each session is a folder with the CLI's ``session-*.jsonl`` and ``requests.jsonl`` (every request the fake
received: ``request_index``, ``kind`` = step / summary / summary_verify / other, ``reported_usage``, ``response``,
``body``), the shape of ``../shared/corpus/gemini-cli``. The fake reports ``promptTokenCount = 11,000 +
len(JSON(contents)) / 4``; ``model.compressionThreshold`` in the scratch ``$HOME/.gemini/settings.json`` is set
per session, so a few tool calls reach it. One CLI process runs per prompt (``--resume latest`` after the
first), as a user of ``-p`` does. Everything is bounded: a process is killed after ``--timeout`` seconds, the
fake answers at most ``--max-requests``, and it stops with the script.

Then each session is loaded with Compactscope and replayed with gemini_cli: the figures printed are the
compressions the request log shows, the ones the file holds, and the calls where the replay compressed.

    python bench/make_gemini_sessions.py --out /tmp/gemini-sessions --sessions 2
    python bench/make_gemini_sessions.py --fake-only        # the fake server alone, answered by itself
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT.parent))

VERSION = "0.61.0"
OVERHEAD = 11_000
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau".split()

# the scripted model: per prompt, the tool calls it makes (name, args), then its answer
SCENARIOS = [
    [("List the files and read the README.", [("run_shell_command", {"command": "ls -la"}),
                                              ("read_file", {"file_path": "README.md"})],
      "inventory-tool: README with 12 sections."),
     ("Now read src/inventory.py and tell me what it does.",
      [("read_file", {"file_path": "src/inventory.py"}),
       ("run_shell_command", {"command": "grep -c 'def ' src/inventory.py"})],
      "inventory.py defines 40 add_item functions.")],
    [("Read README.md and data.csv.", [("read_file", {"file_path": "README.md"}),
                                       ("read_file", {"file_path": "data.csv"})],
      "README has 12 sections; data.csv 150 rows."),
     ("Read all docs/notes files.", [("read_file", {"file_path": f"docs/notes_{k}.txt"}) for k in range(4)],
      "The notes are word lists."),
     ("Which file is the largest?", [("run_shell_command", {"command": "wc -c README.md data.csv"}),
                                     ("run_shell_command", {"command": "ls -S"})],
      "README.md is the largest file.")],
    # a compression loop: the second turn alone stays over the threshold, so every request compresses again
    [("Read the README.", [("read_file", {"file_path": "README.md"})], "README read."),
     ("Read every notes file, data.csv and src/inventory.py.",
      [("read_file", {"file_path": f"docs/notes_{k}.txt"}) for k in range(4)] +
      [("read_file", {"file_path": "data.csv"}), ("read_file", {"file_path": "src/inventory.py"})],
      "All read.")],
]
THRESHOLDS = [0.0135, 0.015, 0.0125]
SNAPSHOT = ("<state_snapshot>\n<overall_goal>understand the project</overall_goal>\n<key_knowledge>\n- the files "
            "were read\n</key_knowledge>\n<current_plan>\n1. answer the question\n</current_plan>\n</state_snapshot>")


def make_workspace(root: Path, seed: int) -> None:
    """A small generated Python project for the tools to read."""
    def words(n, k):
        return " ".join(WORDS[(i * 7 + k * 3 + seed) % len(WORDS)] for i in range(n))
    (root / "docs").mkdir(parents=True, exist_ok=True)
    (root / "src").mkdir(exist_ok=True)
    (root / "README.md").write_text("# inventory-tool\n\nA tiny inventory tool used as a scratch project.\n\n" +
                                    "".join(f"## Section {k}\n\n{words(90, k)}\n\n" for k in range(12)))
    (root / "data.csv").write_text("sku,name,qty,price\n" + "".join(
        f"SKU{k:04d},{words(2, k)},{k % 40},{(k * 37) % 100}.{k % 100:02d}\n" for k in range(150)))
    for k in range(4):
        (root / "docs" / f"notes_{k}.txt").write_text("".join(f"note {k}.{j}: {words(12, j + k)}\n"
                                                              for j in range(30)))
    (root / "src" / "inventory.py").write_text('"""Inventory module."""\n\nITEMS = {}\n' + "".join(
        f"\ndef add_item_{k}(qty):\n    \"\"\"{words(20, k)}\"\"\"\n    ITEMS['item_{k}'] = "
        f"ITEMS.get('item_{k}', 0) + qty\n    return ITEMS['item_{k}']\n" for k in range(40)))


class Fake:
    """The scripted model: step requests pop the next action; the two compression requests get a snapshot."""

    def __init__(self, actions: list, log: Path, max_requests: int):
        self.actions, self.log, self.max = list(actions), log, max_requests
        self.n = 0
        self.lock = threading.Lock()

    def answer(self, path: str, body: dict) -> tuple[dict, str]:
        contents = body.get("contents") or []
        last = " ".join(p.get("text", "") for p in (contents[-1].get("parts") if contents else []) or [])
        if ":generateContent" in path and not body.get("tools"):
            kind = "summary_verify" if "Critically evaluate" in last else \
                "summary" if "state_snapshot" in last else "other"
            parts = [{"text": SNAPSHOT if kind != "other" else "{}"}]
        else:
            kind = "step"
            act = self.actions.pop(0) if self.actions else ("text", "done")
            parts = [{"functionCall": {"name": act[1], "args": act[2]}}] if act[0] == "call" else [{"text": act[1]}]
        usage = {"promptTokenCount": OVERHEAD + len(json.dumps(contents)) // 4, "candidatesTokenCount": 50}
        usage["totalTokenCount"] = usage["promptTokenCount"] + 50
        return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": usage, "modelVersion": "gemini-2.5-pro"}, kind

    def handle(self, path: str, body: dict) -> dict | None:
        with self.lock:
            if self.n >= self.max:
                return None
            resp, kind = self.answer(path, body)
            row = {"t": time.time(), "request_index": self.n, "path": path, "kind": kind,
                   "reported_usage": resp["usageMetadata"], "response": resp, "body": body}
            with self.log.open("a") as f:
                f.write(json.dumps(row) + "\n")
            self.n += 1
            return resp


def serve(fake: Fake) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            n = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(n) or b"{}")
            except ValueError:
                body = {}
            resp = fake.handle(self.path, body if isinstance(body, dict) else {})
            if resp is None:
                self.send_error(429, "the fake's request budget is spent")
                return
            sse = "alt=sse" in self.path
            data = (f"data: {json.dumps(resp)}\n\n" if sse else json.dumps(resp)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream" if sse else "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *a):
            pass
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def install_cli(cache: Path, version: str) -> Path:
    """``npm install @google/gemini-cli@VERSION`` in ``cache`` (once); the path of its gemini.js."""
    js = cache / "node_modules" / "@google" / "gemini-cli" / "bundle" / "gemini.js"
    if not js.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--omit=optional", "--prefix", str(cache),
                        f"@google/gemini-cli@{version}"], check=True, timeout=600, stdout=subprocess.DEVNULL)
    return js


def _actions(scenario) -> list:
    out = []
    for _, calls, answer in scenario:
        out += [("call", name, args) for name, args in calls] + [("text", answer)]
    return out


def make_session(js: Path, out: Path, k: int, threshold: float, timeout: float, max_requests: int) -> Path:
    scenario = SCENARIOS[k % len(SCENARIOS)]
    folder = out / f"gemini-{k + 1:02d}"
    folder.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="gemini-run-"))
    home, work = scratch / "home", scratch / "work"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(
        {"security": {"auth": {"selectedType": "gemini-api-key"}}, "model": {"compressionThreshold": threshold}}))
    make_workspace(work, k)
    log = folder / "requests.jsonl"
    log.unlink(missing_ok=True)
    fake = Fake(_actions(scenario), log, max_requests)
    srv = serve(fake)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "GEMINI_API_KEY": "fake",
           "GOOGLE_GEMINI_BASE_URL": f"http://127.0.0.1:{srv.server_address[1]}", "NO_COLOR": "1",
           "GEMINI_CLI_TRUST_WORKSPACE": "true"}       # the scratch project is trusted (headless runs)
    try:
        for turn, (prompt, _, _) in enumerate(scenario):
            cmd = ["node", str(js), "-m", "gemini-2.5-pro", "--yolo", "--output-format", "stream-json", "-p", prompt]
            if turn:
                cmd += ["--resume", "latest"]
            subprocess.run(cmd, cwd=work, env=env, timeout=timeout, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    finally:
        srv.shutdown()
        srv.server_close()
    for f in (home / ".gemini" / "tmp").glob("*/chats/session-*.jsonl"):
        shutil.copy(f, folder / f.name)
    shutil.rmtree(scratch, ignore_errors=True)
    return folder


def check(folder: Path, threshold: float) -> dict:
    """What Compactscope makes of a session: compressions in the request log, in the file, and replayed."""
    from compactscope.core.loaders import load
    from compactscope.core.replay import replay
    rows = [json.loads(x) for x in (folder / "requests.jsonl").read_text().splitlines() if x.strip()]
    real, call, pending = [], 0, False
    for r in rows:
        if r["kind"] == "summary":
            pending = True
        elif r["kind"] == "step":
            if pending:
                real.append(call)
            pending, call = False, call + 1
    files = sorted(folder.glob("session-*.jsonl"), key=lambda f: -f.stat().st_size)    # a resume may start a stub
    if not files:
        return {"requests": len(rows), "real": real, "file": None, "replayed": None}
    conv = load(files[0]).main
    res = replay(conv, "gemini_cli", {"compression_threshold": threshold}, keep_traces=True)
    loops = [c.index for c, t in zip(res.calls, res.traces or [], strict=False)
             if any(s.vars.get("compression_loop") for s in t.steps)]
    return {"requests": len(rows), "real": real, "file": len(conv.events),
            "replayed": [c.index for c in res.calls if c.compacted], "loops": loops}


def fake_only(max_requests: int) -> int:
    """The fake server answering a scripted step, a summary and its verification over loopback."""
    import urllib.request
    with tempfile.TemporaryDirectory() as tmp:
        fake = Fake(_actions(SCENARIOS[0]), Path(tmp) / "requests.jsonl", max_requests)
        srv = serve(fake)
        base = f"http://127.0.0.1:{srv.server_address[1]}/v1beta/models/gemini-2.5-pro"
        t0 = time.perf_counter()
        kinds = []
        try:
            for path, last in ((":streamGenerateContent?alt=sse", "hi"), (":generateContent", "a <state_snapshot>"),
                               (":generateContent", "Critically evaluate it")):
                body = {"contents": [{"role": "user", "parts": [{"text": last}]}]}
                if "stream" in path:
                    body["tools"] = [{"functionDeclarations": []}]
                req = urllib.request.Request(base + path, json.dumps(body).encode(),
                                             {"Content-Type": "application/json"})
                with urllib.request.urlopen(req, timeout=10) as r:
                    r.read()
            kinds = [json.loads(x)["kind"] for x in fake.log.read_text().splitlines()]
        finally:
            srv.shutdown()
            srv.server_close()
        print(f"fake Gemini API: {len(kinds)} requests answered ({', '.join(kinds)}) in "
              f"{(time.perf_counter() - t0) * 1000:.1f} ms")
        return 0 if kinds == ["step", "summary", "summary_verify"] else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=None, help="where the session folders go (default: a new temporary folder)")
    ap.add_argument("--sessions", type=int, default=3)
    ap.add_argument("--version", default=VERSION, help="the @google/gemini-cli version to install")
    ap.add_argument("--cli", default=None, help="a gemini.js to run instead of installing one")
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "compactscope-gemini-cli"),
                    help="where npm installs the CLI (kept between runs)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds one CLI process may run")
    ap.add_argument("--max-requests", type=int, default=60, help="requests the fake answers per session")
    ap.add_argument("--fake-only", action="store_true", help="run the fake server alone (no CLI, no npm)")
    a = ap.parse_args(argv)
    if a.fake_only:
        return fake_only(a.max_requests)
    js = Path(a.cli) if a.cli else install_cli(Path(a.cache), a.version)
    out = Path(a.out) if a.out else Path(tempfile.mkdtemp(prefix="gemini-sessions-"))
    bad = 0
    for k in range(a.sessions):
        thr = THRESHOLDS[k % len(THRESHOLDS)]
        t0 = time.perf_counter()
        folder = make_session(js, out, k, thr, a.timeout, a.max_requests)
        c = check(folder, thr)
        ok = c["file"] == len(c["real"]) and c["replayed"] == c["real"]
        bad += not ok
        print(f"{folder}: {c['requests']} requests, compressions after calls {c['real']} (request log), "
              f"{c['file']} in the session file, replay compresses at {c['replayed']} (a loop flagged at "
              f"{c.get('loops') or 'none'}); threshold {thr}; "
              f"{time.perf_counter() - t0:.1f} s" + ("" if ok else "  MISMATCH"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
