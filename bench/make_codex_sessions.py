"""Make Codex CLI sessions with auto-compaction: the real CLI against a scripted local Responses API.

    python bench/make_codex_sessions.py --out DIR [--sessions 2] [--limits 9000,10000] [--codex PATH]
    python bench/make_codex_sessions.py --out DIR --server-only --requests 3      # the fake alone (no CLI)

Each session: a scratch Python project, ``$CODEX_HOME/config.toml`` naming a provider ``fake`` on 127.0.0.1 (so
Codex compacts locally), ``model_context_window = 200000`` and the session's ``model_auto_compact_token_limit``;
then ``codex exec --json`` with one prompt (and with ``--turns N`` each further turn a ``codex exec resume --last``
with a new prompt, in the same rollout). The fake streams a scripted list of ``exec_command`` calls (the CLI
really runs them in the scratch project), answers a compaction request (its last user message opens with the
compaction prompt) with a handoff summary, and reports ``input_tokens = 1000 + len(JSON(input)) / 4``. Every
request is logged to ``requests.jsonl`` (index, kind, the usage reported, the output, headers, body), as in
``../shared/corpus/codex-cli``; the rollout the CLI wrote is copied beside it.

Without ``--codex``, ``npm install @openai/codex@0.171.0`` runs in a temporary folder. ``--isolate`` runs each
session inside ``unshare -rn`` (a network namespace with loopback only). Bounded: at most ``--max-requests``
requests a session (then the fake ends the turn), ``--timeout`` seconds a session, and the server stops with
the session. Then Compactscope reads each session back and prints, per session, its requests, the compactions
the log shows, the ones the rollout holds, and where the ``codex`` strategy's replay with the session's limit
compacts: figures, no assertion.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

COMPACTION_OPENING = "You are performing a CONTEXT CHECKPOINT COMPACTION"
PROMPTS = ["Explore this repository and describe its layout.",
           "Audit every file in this project and list anything suspicious."]
FOLLOW_UPS = ["Now look at the notes too.", "Check the data file once more."]
SCRIPT = ["ls -la", "cat README.md", "cat src/inventory.py", "wc -l data.csv", "cat docs/notes_0.txt",
          "cat src/report.py", "head -30 data.csv", "cat docs/notes_1.txt", "cat docs/notes_2.txt", "ls -R",
          "grep -n add_item src/inventory.py", "tail -20 data.csv"]


# ------------------------------------------------------------------ the scratch project
def make_project(root: Path, seed: int) -> None:
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho".split()
    (root / "src").mkdir(parents=True, exist_ok=True)
    (root / "docs").mkdir(exist_ok=True)
    (root / "README.md").write_text("# inventory-tool\n\nA tiny inventory tool used as a scratch project.\n\n"
                                    + "\n".join(f"- {words[(seed + k) % len(words)]} {k}" for k in range(400)) + "\n")
    (root / "src" / "inventory.py").write_text('"""Inventory module."""\n\nITEMS = {}\n\n' + "".join(
        f"def add_item_{k}(qty):\n    ITEMS['item_{k}'] = ITEMS.get('item_{k}', 0) + qty\n    return ITEMS\n\n"
        for k in range(40)))
    (root / "src" / "report.py").write_text("from inventory import ITEMS\n\n\ndef total():\n"
                                            "    return sum(ITEMS.values())\n")
    (root / "data.csv").write_text("sku,name,qty,price\n" + "".join(
        f"SKU{k:04d},{words[k % len(words)]} {words[(k * 7 + seed) % len(words)]},{(k * 37) % 200},"
        f"{(k * 13.7) % 100:.2f}\n" for k in range(150)))
    for n in range(3):
        (root / "docs" / f"notes_{n}.txt").write_text("".join(
            f"note {n}.{k}: " + " ".join(words[(k * j + n) % len(words)] for j in range(12)) + "\n"
            for k in range(60)))


# ------------------------------------------------------------------ the scripted Responses API
class Fake:
    """The scripted model of one session, and its request log."""

    def __init__(self, log: Path, script: list[str], max_requests: int, final_input: int = 0):
        self.log, self.script, self.max_requests = log, script, max_requests
        self.final_input = final_input          # a turn's last answer reports at least this input (0: as measured)
        self.index = self.step = 0
        self.lock = threading.Lock()

    def answer(self, path: str, headers: dict, body: dict) -> tuple[list, dict, str]:
        with self.lock:
            items = body.get("input") if isinstance(body.get("input"), list) else []
            last = items[-1] if items else {}
            text = "".join(p.get("text", "") for p in last.get("content") or [] if isinstance(p, dict)) \
                if isinstance(last, dict) else ""
            if last.get("role") == "user" and text.startswith(COMPACTION_OPENING):
                kind, output = "summary", [self._message(f"msg_sum_{self.index:03d}", (
                    "## Handoff summary\n- Goal: answer the user's request about this repository\n"
                    f"- Progress: {self.step} command(s) run so far\n- Next steps: finish the remaining reads"))]
            elif self.step < len(self.script) and self.index < self.max_requests - 1:
                cid = f"call_{self.index:03d}"
                output = [{"type": "function_call", "id": f"fc_{cid}", "call_id": cid, "name": "exec_command",
                           "arguments": json.dumps({"cmd": self.script[self.step], "yield_time_ms": 10000})}]
                kind, self.step = "step", self.step + 1
            else:
                kind, output = "step", [self._message(f"msg_{self.index:03d}", "Done: the repository is a small "
                                                                               "inventory tool.")]
            inp = 1000 + len(json.dumps(items)) // 4
            if kind == "step" and output[0]["type"] == "message":
                inp = max(inp, self.final_input)
            usage = {"input_tokens": inp, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 60,
                     "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": inp + 60}
            rec = {"t": time.time(), "request_index": self.index, "path": path, "kind": kind,
                   "reported_usage": usage, "response_output": output, "headers": headers, "body": body}
            with self.log.open("a", encoding="utf-8") as f:
                f.write(json.dumps(rec) + "\n")
            rid = f"resp_{self.index:04d}"
            self.index += 1
            return output, usage, rid

    @staticmethod
    def _message(mid: str, text: str) -> dict:
        return {"type": "message", "role": "assistant", "id": mid, "status": "completed",
                "content": [{"type": "output_text", "text": text}]}


def _handler(fake: Fake):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):          # quiet
            return

        def do_GET(self):
            body = json.dumps({"object": "list", "data": [], "models": []}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            if not self.path.rstrip("/").endswith("/responses"):
                self.send_response(404)
                self.end_headers()
                return
            output, usage, rid = fake.answer(self.path, dict(self.headers.items()), body)
            events = [{"type": "response.created", "response": {"id": rid}}]
            events += [{"type": "response.output_item.done", "item": item} for item in output]
            events.append({"type": "response.completed", "response": {"id": rid, "usage": usage}})
            data = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
    return Handler


def serve(fake: Fake) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# ------------------------------------------------------------------ one session with the real CLI
def install_codex(where: Path) -> Path:
    subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(where), "@openai/codex@0.171.0"],
                   check=True, capture_output=True, timeout=600)
    return where / "node_modules" / ".bin" / "codex"


def config(port: int, limit: int) -> str:
    return (f'model = "gpt-fake-1"\nmodel_provider = "fake"\nmodel_context_window = 200000\n'
            f"model_auto_compact_token_limit = {limit}\n"
            'approval_policy = "never"\nsandbox_mode = "danger-full-access"\n\n'
            '[model_providers.fake]\nname = "fake"\n'
            f'base_url = "http://127.0.0.1:{port}/v1"\nwire_api = "responses"\nrequires_openai_auth = false\n')


def run_session(codex: Path, out: Path, k: int, limit: int, args) -> Path:
    folder = out / f"codex-{k + 1:02d}"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:
        home, work = Path(tmp) / "codex-home", Path(tmp) / "work"
        home.mkdir()
        make_project(work, k)
        fake = Fake(folder / "requests.jsonl", SCRIPT[:7 + 5 * (k % 2)], args.max_requests,
                    limit + 500 if args.full_turn_end else 0)
        server = serve(fake)
        try:
            (home / "config.toml").write_text(config(server.server_address[1], limit))
            env = {**os.environ, "CODEX_HOME": str(home), "HOME": tmp, "NO_COLOR": "1"}
            cmd = [str(codex), "exec", "--json", "--skip-git-repo-check", "-C", str(work), PROMPTS[k % len(PROMPTS)]]
            subprocess.run(cmd, env=env, capture_output=True, timeout=args.timeout, check=False)
            for turn in range(1, args.turns):        # more user turns: the same session resumed with a new prompt
                with fake.lock:
                    fake.step, fake.script = 0, SCRIPT[turn * 3 % len(SCRIPT):][:4]
                cmd = [str(codex), "exec", "--json", "--skip-git-repo-check", "-C", str(work), "resume", "--last",
                       FOLLOW_UPS[(turn - 1) % len(FOLLOW_UPS)]]
                subprocess.run(cmd, env=env, capture_output=True, timeout=args.timeout, check=False)
        except subprocess.TimeoutExpired:
            print(f"codex-{k + 1:02d}: the CLI did not end within {args.timeout} s")
        finally:
            server.shutdown()
            server.server_close()
        for p in sorted((home / "sessions").rglob("rollout-*.jsonl")):
            shutil.copy(p, folder / p.name)
    return folder


def report(folder: Path, limit: int) -> None:
    """What Compactscope reads back: compactions in the log and the rollout, and where its replay compacts."""
    from compactscope.core.loaders import load
    from compactscope.core.replay import replay
    log = folder / "requests.jsonl"
    reqs = [json.loads(x) for x in log.read_text().splitlines()] if log.is_file() else []
    calls, real = 0, []
    for r in reqs:
        if r["kind"] == "summary":
            real.append(calls)
        else:
            calls += 1
    rollouts = sorted(folder.glob("rollout-*.jsonl"))
    if not rollouts:
        print(f"{folder.name}: {len(reqs)} requests, no rollout written")
        return
    conv = load(rollouts[0]).main
    sim = [c.index for c in replay(conv, "codex", {"model_auto_compact_token_limit": limit,
                                                    "model_context_window": 200_000}).calls if c.compacted]
    print(f"{folder.name}: limit {limit:,}, {len(reqs)} requests ({calls} agent calls), compactions before calls "
          f"{real} in the log, {len(conv.events)} in the rollout, replay compacts before calls {sim}")


def server_only(out: Path, n: int) -> None:
    """The fake alone: ``n`` requests as the CLI would send them, and what it logged and answered."""
    import urllib.request
    out.mkdir(parents=True, exist_ok=True)
    log = out / "requests.jsonl"
    log.unlink(missing_ok=True)
    fake = Fake(log, SCRIPT, 50)
    server = serve(fake)
    try:
        items = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": PROMPTS[0]}]}]
        for k in range(n):
            last = k == n - 1
            body = {"model": "gpt-fake-1", "stream": True, "tools": [] if last else [{"type": "function"}],
                    "input": items + ([{"type": "message", "role": "user", "content": [
                        {"type": "input_text", "text": COMPACTION_OPENING + "."}]}] if last else [])}
            req = urllib.request.Request(f"http://127.0.0.1:{server.server_address[1]}/v1/responses",
                                         json.dumps(body).encode(), {"content-type": "application/json"})
            with urllib.request.urlopen(req, timeout=10) as resp:
                events = [json.loads(x[6:]) for x in resp.read().decode().splitlines() if x.startswith("data: ")]
            item = events[1]["item"]
            items.append(item)
            if item["type"] == "function_call":
                items.append({"type": "function_call_output", "call_id": item["call_id"], "output": "x" * 400})
    finally:
        server.shutdown()
        server.server_close()
    recs = [json.loads(x) for x in log.read_text().splitlines()]
    kinds = [r["kind"] for r in recs]
    print(f"fake Responses API: {len(kinds)} requests logged ({kinds.count('step')} steps, {kinds.count('summary')} "
          f"compaction request), last reported input {recs[-1]['reported_usage']['input_tokens']:,} tokens")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--sessions", type=int, default=2)
    ap.add_argument("--limits", default="9000,10000", help="model_auto_compact_token_limit per session, cycled")
    ap.add_argument("--codex", type=Path, help="the codex binary (default: npm install @openai/codex@0.171.0)")
    ap.add_argument("--timeout", type=float, default=180)
    ap.add_argument("--max-requests", type=int, default=40)
    ap.add_argument("--full-turn-end", action="store_true", help="each turn's last answer reports 500 tokens over "
                                                                  "the limit (the next turn then compacts first)")
    ap.add_argument("--turns", type=int, default=1, help="user turns a session (each after the first: codex exec "
                                                          "resume --last with a new prompt)")
    ap.add_argument("--isolate", action="store_true", help="run inside unshare -rn (loopback only)")
    ap.add_argument("--server-only", action="store_true", help="exercise the fake server alone, no CLI")
    ap.add_argument("--requests", type=int, default=3)
    args = ap.parse_args()
    if args.server_only:
        server_only(args.out, args.requests)
        return 0
    if args.isolate and not os.environ.get("MAKE_CODEX_ISOLATED"):
        with tempfile.TemporaryDirectory() as tmp:       # the CLI is installed first: the namespace has no network
            codex = args.codex or install_codex(Path(tmp) / "npm")
            inner = [sys.executable, *sys.argv, "--codex", str(codex)]
            script = "ip link set lo up && exec " + " ".join(shlex.quote(a) for a in inner)
            return subprocess.run(["unshare", "-rn", "sh", "-c", script],
                                  env={**os.environ, "MAKE_CODEX_ISOLATED": "1"}, check=False).returncode
    limits = [int(x) for x in args.limits.split(",") if x.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        codex = args.codex or install_codex(Path(tmp) / "npm")
        for k in range(args.sessions):
            t0 = time.perf_counter()
            folder = run_session(codex, args.out, k, limits[k % len(limits)], args)
            print(f"{folder.name}: made in {time.perf_counter() - t0:.1f} s")
            report(folder, limits[k % len(limits)])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
