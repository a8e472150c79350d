"""Small builders for test conversations (Anthropic dialect)."""
from __future__ import annotations


def u(text):
    return {"role": "user", "content": text}


def a(text):
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def tu(*ids, name="bash"):
    return {"role": "assistant", "content": [{"type": "tool_use", "id": i, "name": name, "input": {"command": "ls"}}
                                             for i in ids]}


def tr(*ids, content="x" * 200):
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": i, "content": content} for i in ids]}


def worked_example():
    """Seed 000's example: 12 messages, tool_use at 2 and 6, tool_result at 3 and 7."""
    return [u("0"), a("1"), tu("t2"), tr("t2"), u("4"), a("5"), tu("t6"), tr("t6"), u("8"), a("9"), u("10"), a("11")]
