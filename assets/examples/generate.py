"""Make the bundled example conversations (deterministic: run it again, get the same files).

    python assets/examples/generate.py [--out DIR]      (default: beside this script)

* ``long_session.json``: a coding session of 60+ messages with parallel tool calls whose last
  batch of tool results is over 200,000 characters: with the s08 defaults every layer fires
  (budget persists, snip cuts the middle, micro replaces old results, and the size is still over
  50,000 characters so the summary runs).
* ``boundary_case.json``: 56 small messages where both snip guards move the cut
  (head_end 3 -> 4, tail_start 9 -> 8); nothing else fires.
* ``short_session.json``: a short session where no layer fires.
* ``seed000_snip.json``: seed 000's worked example, message for message (12 messages, tool_use at 2 and 6,
  tool_result at 3 and 7): with ``max_messages=8`` head_end 3 -> 4, tail_start 7 -> 6, 2 snipped.
* ``readme_parallel.json``: three parallel calls whose results sit in three user messages (as some logs store
  them): with ``max_messages=6`` the head guard pushes head_end past tail_start and the README snip
  duplicates a message.
* ``layer_order.json``: a latest batch of four results, the first 36,000 chars: with ``max_bytes=30000`` budget
  persists it before micro replaces it; with micro first it is lost.
* ``cc_autocompact.json``: a Claude Code-style session that reads files with ``Read``: with ``window=40000``
  auto-compact fires and restores the recently read files.
* ``cc_real_compaction.jsonl``: a Claude Code session file (JSONL, version 2.1.14) with usage on every call and
  one real automatic compaction (``compact_boundary``, preTokens past 155,000): made here, like the corpus's.

Each ``.json`` file is a JSON list of Anthropic Messages API messages. The lessons (``assets/lessons/``) use them.
"""
from __future__ import annotations

import json
import random
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

_WORDS = ("request retry backoff timeout session client config response status header payload cache "
          "token buffer stream socket handler logger parser queue worker limit error value index").split()


class Maker:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.n = 0
        self.messages: list[dict] = []

    def tid(self) -> str:
        self.n += 1
        return f"toolu_{self.n:02d}{self.rng.getrandbits(40):010x}"

    def code(self, chars: int, name: str = "module") -> str:
        """Plausible Python source of about ``chars`` characters."""
        out, k = [f'"""{name}: generated example source."""', "import time", ""], 0
        while sum(len(x) + 1 for x in out) < chars:
            k += 1
            a, b = self.rng.sample(_WORDS, 2)
            out += [f"def {a}_{b}_{k}(value, limit={self.rng.randint(1, 99)}):",
                    f"    # {a} the {b} unless the limit is reached",
                    "    if value > limit:",
                    f"        raise ValueError('{a} {b} over limit')",
                    f"    return value * {self.rng.randint(2, 9)}", ""]
        return "\n".join(out)[:chars]

    def user(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})

    def say(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": [{"type": "text", "text": text}]})

    def calls(self, text: str | None, calls: list[tuple[str, dict, str]], errors: tuple = ()) -> None:
        """One assistant message with parallel tool_use blocks, then one user message with their results."""
        blocks, results = [], []
        if text:
            blocks.append({"type": "text", "text": text})
        for i, (name, inp, result) in enumerate(calls):
            t = self.tid()
            blocks.append({"type": "tool_use", "id": t, "name": name, "input": inp})
            r = {"type": "tool_result", "tool_use_id": t, "content": result}
            if i in errors:
                r["is_error"] = True
            results.append(r)
        self.messages.append({"role": "assistant", "content": blocks})
        self.messages.append({"role": "user", "content": results})


def long_session() -> list[dict]:
    m = Maker(8)
    m.user("Our HTTP client gives up on the first timeout. Add retry with exponential backoff to "
           "src/http/client.py, keep the public API unchanged, and make the test suite pass.")
    m.calls("I'll look at the layout first.", [
        ("glob", {"pattern": "src/http/*.py"}, "src/http/__init__.py\nsrc/http/client.py\nsrc/http/errors.py"),
        ("bash", {"command": "git log --oneline -5"}, "a1b2c3d fix header casing\n9f8e7d6 add session pool"),
    ])
    files = ["src/http/client.py", "src/http/errors.py", "src/http/__init__.py", "tests/test_client.py",
             "src/http/pool.py", "src/http/config.py", "docs/http.md", "src/http/stream.py"]
    for i, f in enumerate(files):
        m.calls(f"Reading {f}.", [("read_file", {"path": f}, m.code(1800 + 150 * i, f))])
    m.say("The client calls `_send` once; errors come from `errors.py`. I'll add a `RetryPolicy`.")
    m.user("Sounds good. Keep the default at 3 attempts.")
    for i in range(6):
        f = files[i % 3]
        m.calls(None, [("edit_file", {"path": f, "old_text": f"limit={i}", "new_text": f"limit={i + 1}"},
                        f"Edited {f}: 1 replacement")])
        m.calls("Running the tests.", [
            ("bash", {"command": "python -m pytest tests/test_client.py -q"},
             ("F" * (3 - i % 3) + "." * (9 + i)) + f"\n{3 - i % 3} failed, {9 + i} passed" if i < 5
             else "............\n12 passed"),
        ], errors=(0,) if i < 5 else ())
    m.calls("Two more files are involved; reading them together.", [
        ("read_file", {"path": "src/http/pool.py"}, m.code(2400, "pool")),
        ("read_file", {"path": "src/http/stream.py"}, m.code(2600, "stream")),
        ("bash", {"command": "grep -rn retry src/"}, "src/http/client.py:12: # TODO retry"),
    ])
    for i in range(4):
        m.calls(None, [("bash", {"command": f"python -m pytest -q -k retry_{i}"}, f"{i + 1} passed")])
    m.say("Retry works for timeouts. Now checking the integration logs the user mentioned.")
    m.user("Also check the full integration log and the vendored client for anything that still bypasses retry.")
    m.calls("Reading the logs and the vendored client in parallel.", [
        ("bash", {"command": "cat logs/integration.log"},
         "\n".join(f"2026-11-{1 + k % 28:02d} 12:{k % 60:02d}:00 INFO request {k} status={200 if k % 7 else 503} "
                   f"retry={k % 3} elapsed={k % 900}ms" for k in range(2600))),
        ("read_file", {"path": "vendor/legacy_client.py"}, m.code(90_000, "legacy_client")),
        ("read_file", {"path": "src/http/client.py"}, m.code(26_000, "client")),
    ])
    return m.messages


def boundary_case() -> list[dict]:
    m = Maker(3)
    m.user("List the project files and tell me which ones are tests.")
    m.say("Let me check.")
    m.calls(None, [("glob", {"pattern": "**/*.py"}, "app.py\ntests/test_app.py")])   # messages 2, 3
    # fill so that len == 56: tail_start = 56 - 47 = 9 lands on a tool_result (message 9)
    m.say("One test file so far.")                                                  # 4
    m.user("Run it.")                                                               # 5
    m.say("Running.")                                                               # 6
    m.user("Go on.")                                                                # 7
    m.calls(None, [("bash", {"command": "pytest -q"}, "3 passed")])                 # 8, 9
    k = 0
    while len(m.messages) < 56:
        k += 1
        if len(m.messages) % 2 == 0:
            m.user(f"Next check {k}: is module {k} covered?")
        else:
            m.say(f"Module {k} is covered by test_app.py.")
    return m.messages


def short_session() -> list[dict]:
    m = Maker(1)
    m.user("What does src/app.py do?")
    m.calls("Let me read it.", [("read_file", {"path": "src/app.py"}, m.code(900, "app"))])
    m.say("It defines a small CLI with a retry helper.")
    m.user("Is there a test for it?")
    m.calls(None, [("glob", {"pattern": "tests/*.py"}, "tests/test_app.py")])
    m.say("Yes: tests/test_app.py.")
    return m.messages


def seed000_snip() -> list[dict]:
    """Seed 000, 6.7: 0 user text, 1 assistant text, 2 assistant tool_use, 3 user tool_result, 4 user text,
    5 assistant text, 6 assistant tool_use, 7 user tool_result, 8..11 text. Ids name their message."""
    def text(role, k, zh, en):
        return {"role": role, "content": f"msg{k} \u00b7 {zh} ({en})"}

    def use(k, name, inp, note):
        return {"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{k:02d}", "name": name,
                                                  "input": inp}], "_note": note}

    def result(k, out):
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{k:02d}",
                                             "content": out}]}
    msgs = [text("user", 0, "请读取 README.md", "please read README.md"),
            text("assistant", 1, "好的，我先读取文件", "sure, reading it first"),
            use(2, "read_file", {"path": "README.md"}, ""),
            result(2, "# demo\nA tiny agent that compacts its context before every model call."),
            text("user", 4, "再看看 tests 目录", "now look at the tests folder"),
            text("assistant", 5, "我来列出测试文件", "listing the test files"),
            use(6, "bash", {"command": "ls tests"}, ""),
            result(6, "test_compact.py\ntest_loop.py"),
            text("user", 8, "哪个测试最慢？", "which test is slowest?"),
            text("assistant", 9, "test_loop.py，大约 2 秒", "test_loop.py, about 2 s"),
            text("user", 10, "谢谢，就这些", "thanks, that is all"),
            text("assistant", 11, "不客气", "you are welcome")]
    for m in msgs:
        m.pop("_note", None)
    return msgs


def readme_parallel() -> list[dict]:
    """Three parallel calls, each result in its own user message (8 messages)."""
    m = Maker(14)
    m.user("Run lint, the type check and the tests in parallel.")
    m.say("Starting all three.")
    ids = [m.tid() for _ in range(3)]
    m.messages.append({"role": "assistant", "content": [
        {"type": "tool_use", "id": t, "name": "bash", "input": {"command": c}}
        for t, c in zip(ids, ("ruff check .", "mypy src", "pytest -q"))]})
    for t, out in zip(ids, ("All checks passed!", "Success: no issues found in 12 source files", "24 passed")):
        m.messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": t, "content": out}]})
    m.say("All three passed.")
    m.user("Great, commit it.")
    return m.messages


def layer_order() -> list[dict]:
    """Seen results earlier; then a batch of four the model has not seen, the first one 36,000 chars."""
    m = Maker(21)
    m.user("The nightly job failed. Find out why and fix it.")
    for f in ("jobs/nightly.py", "jobs/config.py", "jobs/notify.py"):
        m.calls(f"Reading {f}.", [("read_file", {"path": f}, m.code(1400, f))])
    m.say("The job itself looks fine. I'll pull the logs and the job's state together.")
    m.user("Yes, get everything in one go.")
    log = "\n".join(f"2026-03-{1 + k % 28:02d} 02:{k % 60:02d}:00 nightly step={k % 17} "
                    f"{'ERROR disk quota exceeded' if k % 97 == 0 else 'ok'}" for k in range(860))[:36_000]
    m.calls("Fetching the log, the job state, the disk usage and the cron entry in parallel.", [
        ("bash", {"command": "cat /var/log/nightly.log"}, log),
        ("bash", {"command": "nightly status"}, "last run: failed (exit 3) at step 12"),
        ("bash", {"command": "df -h /data"}, "/dev/sdb1  500G  500G  0 100% /data"),
        ("bash", {"command": "crontab -l"}, "0 2 * * * /opt/jobs/nightly.py --all"),
    ])
    return m.messages


def cc_autocompact() -> list[dict]:
    """A session that reads files with Claude Code's Read tool (input file_path), then edits and tests."""
    m = Maker(31)
    m.user("Add pagination to the /users endpoint; keep the response shape backwards compatible.")
    files = ["api/users.py", "api/schemas.py", "db/queries.py", "tests/test_users.py", "api/app.py",
             "docs/api.md", "api/pagination.py"]
    for i, f in enumerate(files):
        m.calls(f"Reading {f}.", [("Read", {"file_path": f"/repo/{f}"}, m.code(5200 + 700 * i, f))])
    m.say("users.py builds the whole list. I'll add limit/offset with defaults that keep today's behaviour.")
    for i in range(3):
        m.calls(None, [("Edit", {"file_path": "/repo/api/users.py", "old_string": f"limit={i}",
                                 "new_string": f"limit={i + 1}"}, "The file /repo/api/users.py has been updated.")])
        m.calls("Running the tests.", [("Bash", {"command": "pytest -q tests/test_users.py"},
                                        f"{3 - i} failed, {9 + i} passed" if i < 2 else "12 passed")])
    m.user("Also document the new parameters.")
    return m.messages


def cc_real_compaction() -> list[str]:
    """A Claude Code session file: one JSONL record per content block, usage on every call (the context =
    a fixed overhead for the system prompt and tools + the messages so far, cached), and an automatic
    compaction where the context passes 2.1.14's threshold (155,000 tokens): a compact_boundary record
    with preTokens, then the isCompactSummary user record; the session goes on after it."""
    rng = random.Random(41)
    mk = Maker(41)
    sid = "5e55a0c1-0000-4000-8000-00000000c0de"
    t = [1_767_000_000.0]
    parent = [None]
    lines: list[str] = []
    n = [0]
    overhead, threshold = 48_000, 155_000
    state = {"context": 0, "sent": 0, "compacted": 0}

    def uid() -> str:
        n[0] += 1
        return f"{n[0]:08x}-0000-4000-8000-{rng.getrandbits(48):012x}"

    def stamp(gap: float) -> str:
        t[0] += gap
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t[0])) + f".{int(t[0] % 1 * 1000):03d}Z"

    def emit(rec: dict, gap: float, chain: bool = True) -> dict:
        u = uid()
        out = {"parentUuid": parent[0], "isSidechain": False, "userType": "external", "cwd": "/home/dev/shop",
               "sessionId": sid, "version": "2.1.14", "gitBranch": "main", **rec, "uuid": u,
               "timestamp": stamp(gap)}
        if chain:
            parent[0] = u
        lines.append(json.dumps(out, ensure_ascii=False))
        return out

    def user(content) -> None:
        emit({"type": "user", "message": {"role": "user", "content": content}}, rng.uniform(2, 40))
        state["context"] += len(json.dumps(content)) // 4

    def call(blocks: list[dict]) -> None:
        if overhead + state["context"] >= threshold:
            compact()
        ctx = overhead + state["context"]
        usage = {"input_tokens": rng.randint(3, 9), "cache_creation_input_tokens": max(0, ctx - state["sent"]),
                 "cache_read_input_tokens": min(state["sent"], ctx), "output_tokens": rng.randint(40, 600)}
        state["sent"] = ctx
        mid = f"msg_01{rng.getrandbits(80):020x}"
        req = f"req_011{rng.getrandbits(72):018x}"
        for b in blocks:
            emit({"type": "assistant", "requestId": req,
                  "message": {"id": mid, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
                              "content": [b], "stop_reason": "tool_use" if b["type"] == "tool_use" else None,
                              "usage": usage}}, rng.uniform(1, 20))
        state["context"] += len(json.dumps(blocks)) // 4

    def compact() -> None:
        pre = overhead + state["context"]
        b = emit({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted",
                  "isMeta": False, "level": "info", "compactMetadata": {"trigger": "auto", "preTokens": pre}},
                 rng.uniform(30, 60))
        b["logicalParentUuid"] = b["parentUuid"]
        b["parentUuid"] = None
        lines[-1] = json.dumps(b, ensure_ascii=False)
        summary = ("This session is being continued from a previous conversation that ran out of context. The "
                   "conversation is summarized below:\n1. Primary Request and Intent: make checkout retry failed "
                   "payments with backoff and log every attempt.\n2. Key Technical Concepts: idempotency keys, "
                   "exponential backoff, the payments client.\n3. Files and Code Sections: shop/payments.py, "
                   "shop/checkout.py, tests/test_checkout.py.\n4. Errors and fixes: a retry loop that re-charged "
                   "the card; fixed with idempotency keys.\n5. Problem Solving: retries now stop after 4 attempts."
                   "\n6. All user messages: (listed).\n7. Pending Tasks: document the retry settings.\n8. Current "
                   "Work: reviewing the logs of the retry tests.\n9. Optional Next Step: update docs/payments.md.")
        emit({"type": "user", "isCompactSummary": True, "isVisibleInTranscriptOnly": True,
              "message": {"role": "user", "content": summary}}, 0.01)
        state["context"] = len(summary) // 4 + 9_000
        state["sent"] = 0
        state["compacted"] = 1

    user("Checkout gives up on the first failed payment. Make it retry with backoff, log every attempt, and "
         "keep the tests green.")
    files = [f"shop/{name}.py" for name in ("payments", "checkout", "cart", "orders", "inventory", "shipping",
                                            "tax", "users", "notify", "config")]
    k, after = 0, 0
    while after < 5:                 # until the compaction, then five more rounds
        after += state["compacted"]
        f = files[k % len(files)]
        tid = mk.tid()
        call([{"type": "text", "text": f"Reading {f}."},
              {"type": "tool_use", "id": tid, "name": "Read", "input": {"file_path": f"/home/dev/shop/{f}"}}])
        user([{"tool_use_id": tid, "type": "tool_result", "content": mk.code(9_000 + 300 * (k % 9), f)}])
        tid = mk.tid()
        call([{"type": "tool_use", "id": tid, "name": "Bash",
               "input": {"command": f"pytest -q tests/test_{f.split('/')[1]}", "description": "Run the tests"}}])
        user([{"tool_use_id": tid, "type": "tool_result",
               "content": f"{k % 4} failed, {20 + k} passed" if k % 5 else f"{20 + k} passed"}])
        if k % 12 == 11:
            call([{"type": "text", "text": "Tests pass for this module; moving on."}])
            user("Good. Continue with the next module.")
        k += 1
    call([{"type": "text", "text": "Every module retries now; the retry settings are documented in docs/payments.md."}])
    return lines


EXAMPLES = {"long_session.json": long_session, "boundary_case.json": boundary_case,
            "short_session.json": short_session, "seed000_snip.json": seed000_snip,
            "readme_parallel.json": readme_parallel, "layer_order.json": layer_order,
            "cc_autocompact.json": cc_autocompact}
JSONL = {"cc_real_compaction.jsonl": cc_real_compaction}


def main(argv: list[str] | None = None) -> None:
    import argparse
    ap = argparse.ArgumentParser(description="Make the bundled example conversations.")
    ap.add_argument("--out", type=Path, default=HERE, help="folder to write them to (default: beside this script)")
    out = ap.parse_args(argv).out
    out.mkdir(parents=True, exist_ok=True)
    for name, fn in EXAMPLES.items():
        path = out / name
        messages = fn()
        path.write_text(json.dumps(messages, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {path} ({len(messages)} messages)")
    for name, fn in JSONL.items():
        path = out / name
        lines = fn()
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"wrote {path} ({len(lines)} records)")


if __name__ == "__main__":
    main()
