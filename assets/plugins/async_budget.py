"""An async compactor on the OpenAI dialect: drop the oldest turns until the estimate fits.

Agent frameworks often compact inside their async loop; an ``async def`` works as it is. It
declares its dialect (``dialect = "openai"``): an Anthropic conversation is converted first.

    compactscope run FILE --strategy assets/plugins/async_budget.py:fit_budget --set budget=8000
"""
import asyncio
from typing import Literal


async def fit_budget(messages, budget: int = 50_000, count: Literal["chars4", "words"] = "chars4"):
    """Drop whole turns (a user message and everything up to the next one) from the oldest,
    keeping the system prompt and the first user turn, until the estimate is under budget.

    Args:
        budget: the estimate the list must fit in (tokens)
        count: chars4 = len(text) / 4; words = 1.3 tokens per word
    """
    def estimate(ms) -> int:
        text = " ".join(str(m.get("content") or "") + str(m.get("tool_calls") or "") for m in ms)
        return len(text) // 4 if count == "chars4" else int(len(text.split()) * 1.3)

    await asyncio.sleep(0)                  # a real one might count with a tokenizer service here
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    if len(users) < 3:
        return messages
    first_turn_end = users[1]
    out = list(messages)
    while estimate(out) > budget:
        turns = [i for i, m in enumerate(out) if m["role"] == "user" and i >= first_turn_end]
        if len(turns) < 2:
            break
        out = out[:turns[0]] + out[turns[1]:]   # drop the oldest later turn whole: no pair is split
    return out


fit_budget.dialect = "openai"
