"""Gemini CLI's chat compression (Gemini CLI 0.61.0, ``packages/core``) as a strategy.

Parameters are named after the CLI's settings: ``compression_threshold`` is ``model.compressionThreshold``
in ``~/.gemini/settings.json`` (shipped default 0.5); ``token_limit`` is what the CLI's ``tokenLimit`` answers
for the model (1,048,576 for every Gemini model). On a Gemini CLI session both are inferred: the limit from
the session's model, the threshold from the settings file under the user's home when it sets one, else from
where the session compressed and where it did not (the prompt token counts it recorded).
"""
from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from ..layers.gemini_cli import (
    GeminiCliParams, DEFAULT_COMPRESSION_THRESHOLD, GEMINI_CLI_VERSION, LAYERS, GeminiTokens, threshold, token_limit,
)
from ..model.messages import ANTHROPIC
from .base import TOKENS, Strategy, Threshold
from .infer import Inferred

FORMATS = ("gemini-cli", "gemini-cli-jsonl")


def settings_threshold(home: Path | None = None) -> tuple[float | None, str]:
    """``model.compressionThreshold`` from ``~/.gemini/settings.json`` (None when absent or unreadable), and
    where it was looked for."""
    path = (home or Path.home()) / ".gemini" / "settings.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, str(path)
    model = data.get("model") if isinstance(data, dict) else None
    v = model.get("compressionThreshold") if isinstance(model, dict) else None
    if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v <= 1:
        return float(v), str(path)
    return None, str(path)


def _shortest_in(lo: float, hi: float) -> float:
    """The decimal with the fewest digits in (lo, hi]: how a person writes a setting."""
    for digits in range(1, 8):
        q = Decimal(1).scaleb(-digits)
        v = (Decimal(repr(hi)) // q) * q
        if float(v) > lo:
            return float(v)
    return hi


def _counts(conversation) -> tuple[list[int], list[int]]:
    """(the prompt token counts the checks that compressed saw, the largest count of a check that did not, per
    context): the count the check reads is the last response's before each request."""
    msgs, meta = conversation.messages, conversation.meta
    starts = list(conversation.segments or [0]) + [len(msgs)]
    fired, quiet = [], []
    for k in range(len(starts) - 1):
        seg = range(starts[k], starts[k + 1])
        # a check after a resume counts an estimate, not the response before it: that response says nothing
        counts = [meta[i].usage.context_tokens for i in seg if i < len(meta) and meta[i].usage is not None
                  and "copy_of" not in meta[i].extra and msgs[i].get("role") == "assistant"
                  and not (i + 1 < len(meta) and meta[i + 1].extra.get("after_resume"))]
        if not counts:
            continue
        closed = k + 1 < len(starts) - 1
        quiet += counts[:-1] if closed else counts
        if closed:
            fired.append(counts[-1])
    return fired, quiet


def infer(conversation) -> Inferred:
    out = Inferred()
    if getattr(conversation, "format", "") not in FORMATS:
        return out
    model = getattr(conversation, "model", None)
    limit = token_limit(model)
    out.set("token_limit", limit, f"the CLI's token limit for {model or 'an unnamed model'} (tokenLimits)")
    value, where = settings_threshold()
    if value is not None:
        out.set("compression_threshold", value, f"model.compressionThreshold in {where}")
        return out
    fired, quiet = _counts(conversation)
    out.facts.update(compressions=fired, largest_without_compression=max(quiet, default=None))
    if not fired:
        out.notes.append(f"no model.compressionThreshold in {where} and the session holds no compression: the "
                         f"shipped default {DEFAULT_COMPRESSION_THRESHOLD} stays")
        return out
    lo = max((q for q in quiet if q < min(fired)), default=0) / limit
    hi = min(fired) / limit
    v = _shortest_in(lo, hi)
    out.set("compression_threshold", v,
            f"no model.compressionThreshold in {where}; the session compressed at {min(fired):,} prompt tokens and "
            f"did not at {round(lo * limit):,}: {v:g} x {limit:,} lies between")
    return out


def _drag(value: float, params: dict) -> dict:
    """A drag of the threshold line sets compression_threshold (the token limit is the model's)."""
    limit = int(params.get("token_limit", 1_048_576) or 1_048_576)
    return {"compression_threshold": round(max(0.0001, min(1.0, value / limit)), 4)}


GEMINI_CLI = Strategy(
    name="gemini_cli",
    title=f"Gemini CLI chat compression (Gemini CLI {GEMINI_CLI_VERSION})",
    description="before every request: last prompt tokens >= compression_threshold x token limit -> cut old "
                "function responses past 50,000 tokens -> split at the first user text after 70% of the "
                "characters -> <state_snapshot> summary and its verification -> keep unless inflated -> mask "
                "old tool outputs past 50,000 tokens",
    layers=tuple(LAYERS[n] for n in ("gemini_truncate", "gemini_split", "gemini_summarize", "gemini_assemble",
                                     "gemini_mask")),
    dialect=ANTHROPIC,
    params=GeminiCliParams.declared(),
    threshold=Threshold(TOKENS, fn=threshold, to_params=_drag, formula="compression_threshold x token_limit"),
    token_estimator=GeminiTokens,
    infer=infer,
    notes={"source": f"gemini-cli {GEMINI_CLI_VERSION} packages/core/src/context/chatCompressionService.ts, "
                     "core/tokenLimits.ts",
           "threshold": "compression_threshold x token_limit, against the prompt token count the last response "
                        "reported",
           "not reproduced": "the context management pipeline (contextManagement.enabled, off by default); the "
                             "real compression prompt (the summary comes from Compactscope's summarizer)"},
)
