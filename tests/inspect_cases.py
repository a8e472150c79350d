"""Generated conversations and parameters for the cross-check of the inspect_* strategies against
inspect-ai (tests/test_inspect_oracle.py). Deterministic per seed."""
from __future__ import annotations

import json
import random

from compactscope.core.layers import inspect_rules as R

WORDS = ("alpha beta gamma delta file.py def class return import error fixed test passed failed path /src/app "
         "résumé naïve 数据 ключ ✓ → {} [] () : ; , . ! ? \n \t").split(" ")
TOOLS = {
    "bash": {"name": "bash", "description": "Run a shell command.",
             "input_schema": {"type": "object", "properties": {"cmd": {"type": "string", "description": "command"}},
                              "required": ["cmd"]}},
    "read_file": {"type": "function", "function": {"name": "read_file", "description": "Read a file",
                                                   "parameters": {"type": "object", "properties": {
                                                       "path": {"type": "string"},
                                                       "limit": {"type": "integer", "default": 100}},
                                                       "required": ["path"]}}},
    "memory": {"name": "memory", "description": "Save notes.",
               "input_schema": {"type": "object", "properties": {"command": {"type": "string",
                                                                             "enum": ["create", "view"]},
                                                                 "path": {"type": "string"},
                                                                 "file_text": {"type": "string"}},
                                "required": ["command"]}},
    "tool_search": {"name": "tool_search", "description": "Find tools.", "input_schema": {"type": "object"}},
    "web": {"name": "web", "description": "Fetch a page.",
            "input_schema": {"type": "object", "properties": {"url": {"type": "string", "format": "uri"}}}},
}
REPLIES = [
    "The user asked for a fix; it was made and the tests pass.",
    "<analysis>\nWent through the turns.\n</analysis>\n\n<summary>\n1. Primary Request: fix the bug.\n</summary>",
    "<analysis>unclosed scratchpad, cut off by max_tokens",
    "<summary>quotes <analysis>x</analysis> inside</summary>",
    "Before.<analysis>a</analysis> <summary>S</summary> after",
    "<analysis>mentions <summary> early</analysis>\n<summary>real</summary>",
    "Résumé: 数据 fixed ✓ — next: ship it.",
    "",
]


def text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def image_part(rng: random.Random) -> dict:
    return {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{'iVBORw0K' * rng.randint(1, 4)}",
                                               **({"detail": rng.choice(["low", "high", "auto"])}
                                                  if rng.random() < 0.6 else {})}}


def conversation(rng: random.Random) -> tuple[list, list]:
    """(messages in the OpenAI chat dialect, tool definitions)."""
    msgs: list = []
    tools = rng.sample(sorted(TOOLS), rng.randint(0, len(TOOLS))) if rng.random() < 0.6 else []
    names = tools or ["bash", "read_file", "memory", "tool_search", "web"]
    if rng.random() < 0.8:
        msgs.append({"role": "system", "content": "You are a coding agent. " + text(rng, rng.randint(0, 40))})
    if rng.random() < 0.1:
        msgs.append({"role": "system", "content": "Second system message."})
    first = {"role": "user", "content": "Task: " + text(rng, rng.randint(3, 60))}
    if rng.random() < 0.3:
        first["source"] = "input"
    if rng.random() < 0.15:
        first["content"] = [{"type": "text", "text": first["content"]}, image_part(rng)]
    if rng.random() < 0.1:
        early = {"role": "assistant", "content": "I start before the user speaks."}
        if rng.random() < 0.5:
            early["reasoning"] = "an early thought"
        msgs.append(early)
    msgs.append(first)
    if rng.random() < 0.15:
        msgs.append({"role": "user", "content": "More input: " + text(rng, 10), "source": "input"})
    k = 0
    for _ in range(rng.randint(0, 22)):
        r = rng.random()
        if r < 0.12:
            m = {"role": "user", "content": text(rng, rng.randint(1, 50))}
            if rng.random() < 0.1:
                m["content"] = [{"type": "text", "text": m["content"]}, image_part(rng)]
            msgs.append(m)
            continue
        if r < 0.2:
            m = {"role": "assistant", "content": text(rng, rng.randint(0, 80))}
            if rng.random() < 0.4:
                m["reasoning"] = "thinking " + text(rng, rng.randint(1, 60))
            msgs.append(m)
            continue
        if r < 0.24 and rng.random() < 0.5:
            msgs.append({"role": "user", "content": "[CONTEXT COMPACTION SUMMARY]\n\nearlier " + text(rng, 30),
                         "metadata": {"summary": True}})
            continue
        if r < 0.26:
            msgs.append({"role": "tool", "tool_call_id": f"orphan{k}", "content": "orphan result " + text(rng, 5)})
            continue
        calls = []
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            k += 1
            name = rng.choice(names)
            if name == "memory":
                args = {"command": "create", "path": f"/memories/n{k}.md", "file_text": text(rng, 40)}
            elif name == "read_file":
                args = {"path": f"/src/f{k}.py", **({"limit": rng.randint(1, 500)} if rng.random() < 0.5 else {})}
            else:
                args = {"cmd": text(rng, rng.randint(1, 12))}
            cid = f"call_{k}" if rng.random() < 0.97 else "call_dup"
            calls.append({"id": cid, "type": "function",
                          "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=rng.random() < 0.5)}})
        a = {"role": "assistant", "content": None if rng.random() < 0.5 else text(rng, rng.randint(0, 20)),
             "tool_calls": calls}
        if rng.random() < 0.3:
            a["reasoning"] = "plan " + text(rng, rng.randint(1, 40))
        msgs.append(a)
        answered = [c for c in calls if rng.random() < 0.93]
        if rng.random() < 0.2:
            answered.reverse()
        for c in answered:
            size = rng.choice([0, 20, 200, 800, 3000, 12000])
            body = text(rng, max(1, size // 6)) if size else ""
            content = body
            if rng.random() < 0.1:
                content = [{"type": "text", "text": body}, image_part(rng)]
            msgs.append({"role": "tool", "tool_call_id": c["id"], "name": c["function"]["name"], "content": content})
    for _ in range(rng.choice([0, 0, 0, 1, 2])):
        msgs.append({"role": "assistant", "content": "trailing " + text(rng, 5)})
    return msgs, [TOOLS[n] for n in tools]


def params_for(rng: random.Random, kind: str, msgs: list, tools: list) -> dict:
    total = R.tools_tokens(tools) + R.count_messages(msgs)
    p: dict = {}
    window = rng.choice([2_000, 8_000, 32_000, 128_000, 200_000])
    if rng.random() < 0.5:
        p["context_window"] = window
    window = p.get("context_window", 128_000)
    mode = rng.random()
    if mode < 0.1:
        p["trigger"] = "always"
    elif mode < 0.55:
        factors = {"trim": [0.2, 0.45, 0.55, 0.65, 0.8, 0.95, 1.0, 1.05], "summary": [0.1, 0.3, 0.6, 0.9, 1.0, 1.05],
                   "edit": [0.5, 0.7, 0.85, 0.95, 0.999, 1.0, 1.05]}[kind]
        p["threshold"] = float(max(2, int(total * rng.choice(factors))))
    else:
        p["threshold"] = round(min(1.0, max(0.01, total * rng.choice([0.3, 0.5, 0.8, 0.95, 1.1]) / window)), 4)
    if rng.random() < 0.2:
        p["memory"] = False
    if rng.random() < 0.25:
        p["provider_merging"] = rng.choice(["user", "user+assistant", "system"])
    if kind == "edit":
        p["keep_thinking_turns"] = rng.choice([0, 1, 1, 2, "all"])
        p["keep_tool_uses"] = rng.choice([0, 1, 3, 3, 5])
        p["keep_tool_inputs"] = rng.random() < 0.7
        if rng.random() < 0.2:
            p["exclude_tools"] = rng.choice(["bash", "read_file,web", "memory"])
    elif kind == "trim":
        p["preserve"] = rng.choice([0.0, 0.3, 0.5, 0.8, 0.8, 1.0])
    else:
        if rng.random() < 0.3:
            p["instructions"] = "Keep file names. " + text(rng, 5)
        if rng.random() < 0.15:
            p["prompt"] = rng.choice(["Summarise briefly. {addendums}", "Use <analysis> then <summary>. {addendums}",
                                      "No placeholder here."])
        if rng.random() < 0.3:
            p["max_tokens"] = rng.choice([256, 1024, 8192])
    return p


def case(seed: int) -> tuple[str, list, list, dict, list]:
    """(kind, messages, tools, params, summary replies) for one seed."""
    rng = random.Random(seed)
    kind = ("edit", "trim", "summary")[seed % 3]
    msgs, tools = conversation(rng)
    params = params_for(rng, kind, msgs, tools)
    replies = [rng.choice(REPLIES) for _ in range(4)]
    return kind, msgs, tools, params, replies
