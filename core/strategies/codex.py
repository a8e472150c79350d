"""OpenAI Codex CLI's local auto-compaction (codex-cli 0.171.0) as a strategy.

Native on the OpenAI chat dialect (Codex rollouts load as it). One run is Codex's check before a model request
and, when it fires, its compaction: the request (history + prompt, no tools), then the new history. The
parameters are named after Codex's settings (``$CODEX_HOME/config.toml``); their defaults are the CLI's shipped
ones. ``infer`` reads what a session says: the window its token counts report, the limit its config file sets,
else the limit implied by where it compacted and where it did not.
"""
from __future__ import annotations

import os
from itertools import pairwise
from pathlib import Path

from ..layers import codex_rules as R
from ..layers.codex import LAYERS, CodexParams, CodexTokens
from ..layers.codex import threshold as codex_threshold
from ..model.messages import OPENAI
from .base import TOKENS, Strategy, Threshold
from .infer import Inferred

CODEX_FORMAT = "codex-rollout"
EFFECTIVE_PERCENT = 95          # Codex reports (and fills) 95% of the configured window


def _config_toml(path: Path) -> dict:
    try:
        import tomllib  # type: ignore[import-not-found, unused-ignore]  # Python 3.11 on; 3.10: no config read
    except ImportError:  # pragma: no cover - Python < 3.11
        return {}
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def codex_home() -> Path:
    """Where the CLI keeps its config: ``$CODEX_HOME``, else ``~/.codex``."""
    env = os.environ.get("CODEX_HOME")
    return Path(env).expanduser() if env else Path.home() / ".codex"


def _whole(v) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def _from_config(out: Inferred) -> set:
    """What the user's ``config.toml`` sets (the rollout does not hold the limit)."""
    path = codex_home() / "config.toml"
    cfg = _config_toml(path) if path.is_file() else {}
    got = set()
    for name in ("model_auto_compact_token_limit", "model_context_window"):
        v = _whole(cfg.get(name))
        if v is not None:
            out.set(name, v, f"{path} sets it")
            got.add(name)
    return got


def _reported_window(conversation) -> int | None:
    """The window the session's token counts report (95% of the configured one) back as the configured window."""
    w = _whole((getattr(conversation, "extra", None) or {}).get("model_context_window"))
    return w * 100 // EFFECTIVE_PERCENT if w else None


def _evidence(conversation) -> tuple[list, list]:
    """Codex's figure at each check the session records: (figures where it compacted, figures where it did not).
    A check follows each response that called tools (its reported total plus Codex's estimate of the outputs) and
    each response that ended a turn, before the next one (its reported total); a check that closes a segment fired."""
    msgs, meta = conversation.messages, conversation.meta
    starts = sorted(set(conversation.segments or [0]) | {0, len(msgs)})
    fired, quiet = [], []
    for a, b in pairwise(starts):
        seg = msgs[a:b]
        compacted = b < len(msgs)
        for k, m in enumerate(seg):
            mm = meta[a + k] if a + k < len(meta) else None
            if mm is None or m.get("role") != "assistant" or "copy_of" in mm.extra:
                continue
            total = mm.extra.get("total_tokens")
            if not isinstance(total, int):
                continue
            if m.get("tool_calls"):
                nxt = next((j for j in range(k + 1, len(seg)) if seg[j].get("role") != "tool"), len(seg))
                figure = total + sum(R.message_tokens(x) for x in seg[k + 1:nxt])
            else:                         # the turn ended: the next turn's check, before its prompt is recorded
                nxt = next((j for j in range(k + 1, len(seg)) if seg[j].get("role") == "user"), len(seg))
                figure = total
                if nxt == len(seg) and k + 1 < len(seg):
                    continue
            if nxt == len(seg) and compacted:
                fired.append(figure)
            elif nxt < len(seg):
                quiet.append(figure)
    return fired, quiet


def infer(conversation) -> Inferred:
    out = Inferred()
    if getattr(conversation, "format", "") != CODEX_FORMAT:
        return out
    got = _from_config(out)
    extra = getattr(conversation, "extra", None) or {}
    out.facts.update(cli_version=extra.get("cli_version"), model_provider=extra.get("model_provider"),
                     model=getattr(conversation, "model", None))
    if "model_context_window" not in got:
        w = _reported_window(conversation)
        if w:
            out.set("model_context_window", w, f"the session's token counts report a {extra['model_context_window']:,}"
                                               f"-token window, Codex's {EFFECTIVE_PERCENT}% of {w:,}")
    if "model_auto_compact_token_limit" in got:
        return out
    fired, quiet = _evidence(conversation)
    out.facts.update(compacted_at=fired, largest_without_compaction=max(quiet, default=None))
    if not fired:
        return out
    lo, hi = max(quiet, default=0), min(fired)
    if lo >= hi:
        out.notes.append(f"no single limit fits the session: it compacted at {hi:,} tokens but not at {lo:,}")
        return out
    # the largest round limit that every compaction reached and no quiet check did
    step = next((s for s in (10_000, 5_000, 1_000, 500, 100, 10, 1) if hi // s * s > lo), 1)
    limit = hi // step * step
    out.set("model_auto_compact_token_limit", limit,
            f"the rollout does not store the limit and {codex_home() / 'config.toml'} does not set it; Codex compacted "
            f"at {', '.join(f'{f:,}' for f in sorted(fired))} tokens (its own figure: the last reported total plus its "
            f"estimate since) and {len(quiet)} check(s) up to {lo:,} did not: the roundest limit between is {limit:,}")
    return out


CODEX = Strategy(
    name="codex",
    title="OpenAI Codex CLI auto-compaction (codex-cli 0.171.0)",
    description="token check (last reported total + Codex's bytes/4 estimate since, against min(limit, 90% of the "
                "window)) -> compaction request (history + prompt, no tools) -> new history (user prompts within "
                "20,000 tokens, the prefixed summary, the initial context)",
    layers=tuple(LAYERS[n] for n in ("codex_token_check", "codex_compact_request", "codex_build_history")),
    dialect=OPENAI,
    params=CodexParams.declared(),
    threshold=Threshold(TOKENS, fn=codex_threshold,
                        to_params=lambda value, params: {"model_auto_compact_token_limit": max(int(round(value)), 1)},
                        formula="min(model_auto_compact_token_limit, 90% of "
                                                            "model_context_window); 90% alone when no limit is set"),
    token_estimator=CodexTokens,
    notes={"source": "openai/codex codex-rs/core/src/compact.rs (codex-cli 0.171.0)", "docs": "docs/codex.md"},
    infer=infer,
)
