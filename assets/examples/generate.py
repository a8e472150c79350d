"""Make the bundled example conversations (deterministic: run it again, get the same files).

    python assets/examples/generate.py

* ``long_session.json``: a coding session of 60+ messages with parallel tool calls whose last
  batch of tool results is over 200,000 characters: with the s08 defaults every layer fires
  (budget persists, snip cuts the middle, micro replaces old results, and the size is still over
  50,000 characters so the summary runs).
* ``boundary_case.json``: 56 small messages where both snip guards move the cut
  (head_end 3 -> 4, tail_start 9 -> 8); nothing else fires.
* ``short_session.json``: a short session where no layer fires.

Each file is a JSON list of Anthropic Messages API messages.
"""
from __future__ import annotations

import json
import random
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
                    f"    if value > limit:",
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


EXAMPLES = {"long_session.json": long_session, "boundary_case.json": boundary_case,
            "short_session.json": short_session}


def main() -> None:
    for name, fn in EXAMPLES.items():
        path = HERE / name
        path.write_text(json.dumps(fn(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {path} ({len(fn())} messages)")


if __name__ == "__main__":
    main()
