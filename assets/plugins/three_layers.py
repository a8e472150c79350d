"""A three-layer compactor: clear old tool output, drop old reasoning, summarise the middle.

A multi-layer plugin: ``STRATEGY`` lists its layers in order, each a plain function
``messages -> messages`` that becomes one traced layer; their keyword arguments are the
strategy's parameters. It works on the OpenAI chat dialect (``dialect``), so an Anthropic
conversation is converted first. ``threshold_param`` puts ``max_tokens`` on the chart as the
threshold line (in tokens).

    compactscope run FILE --strategy assets/plugins/three_layers.py --set max_tokens=20000
    compactscope replay FILE --strategy claude_code --compare "mine=assets/plugins/three_layers.py"
"""
from typing import Annotated

PLACEHOLDER = "[old tool output cleared]"


def _tokens(messages) -> int:
    return len(str(messages)) // 4


def clear_old_tool_output(messages, keep_results: Annotated[int, "the most recent tool results kept whole",
                                                            {"minimum": 0}] = 5,
                          min_chars: Annotated[int, "only results longer than this are cleared",
                                               {"unit": "chars"}] = 200):
    """Replace all but the most recent tool results with a placeholder."""
    results = [i for i, m in enumerate(messages) if m["role"] == "tool"]
    old = set(results[:-keep_results] if keep_results else results)
    out = []
    for i, m in enumerate(messages):
        if i in old and isinstance(m.get("content"), str) and len(m["content"]) > min_chars:
            m = {**m, "content": PLACEHOLDER}
        out.append(m)
    return out


def drop_old_reasoning(messages, keep_turns: Annotated[int, "assistant turns that keep their reasoning"] = 1):
    """Remove the reasoning of all but the last assistant turns."""
    turns = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    old = set(turns[:-keep_turns] if keep_turns else turns)
    return [{k: v for k, v in m.items() if k not in ("reasoning", "reasoning_content")} if i in old else m
            for i, m in enumerate(messages)]


def summarize_middle(messages, max_tokens: Annotated[int, "summarise when the estimate (chars/4) is over this",
                                                     {"unit": "tokens"}] = 30_000,
                     keep_tail: Annotated[int, "recent messages kept after the summary"] = 10, *, summarize):
    """Over max_tokens: keep the system prompt and the first user message, summarise everything up to the
    last keep_tail messages (never starting the tail on a tool result)."""
    if _tokens(messages) <= max_tokens:
        return messages
    head = 0
    while head < len(messages) and messages[head]["role"] == "system":
        head += 1
    head += 1                                            # the task: the first message after the system prompt
    start = max(head, len(messages) - keep_tail)
    while start > head and messages[start]["role"] == "tool":
        start -= 1                                       # a result stays with its call
    if start - head < 2:
        return messages
    text = summarize(messages[head:start], instructions="Keep file names and open questions.")
    summary = {"role": "user", "content": f"Summary of the earlier conversation:\n{text}"}
    return messages[:head] + [summary] + messages[start:]


class STRATEGY:
    """Clear old tool output, drop old reasoning, summarise the middle over a token budget."""
    title = "three layers (example plugin)"
    dialect = "openai"
    layers = [clear_old_tool_output, drop_old_reasoning, summarize_middle]
    threshold_param = "max_tokens"
    threshold_unit = "tokens"
