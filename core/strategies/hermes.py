"""Hermes agent's ContextCompressor (hermes-agent 0.19.0, seed 002) as a strategy.

Native on the OpenAI chat dialect: Anthropic conversations are converted first (the
pipeline's ``convert`` step). One run is one ``compress()`` call when the estimate reaches
the threshold (or always, with ``trigger=always``, like ``/compress``). Iterative summaries
and the decaying head protection live in the pipeline state between runs.
"""
from __future__ import annotations

from ..layers.hermes import HermesParams, LAYERS
from ..layers.hermes import threshold as hermes_threshold
from ..layers.hermes_rules import HermesTokens
from ..model.messages import OPENAI
from ..analysis.moa import MOA_LAYER
from .base import TOKENS, CrossCheck, IterationPolicy, Strategy, Threshold
from .infer import Inferred, context_evidence

HERMES_FORMATS = ("hermes-db", "hermes-session")
# windows models are sold with: a recording that does not store its window gets the one of these that best
# reproduces where it compacted (hermes-agent reads it from the provider's model metadata at run time)
WINDOWS = (4_096, 8_192, 16_384, 32_000, 32_768, 64_000, 65_536, 100_000, 128_000, 131_072, 200_000, 256_000,
           262_144, 400_000, 1_000_000, 1_048_576, 2_000_000)


def _model_config(conversation) -> dict:
    import json
    session = (getattr(conversation, "extra", None) or {}).get("session") or {}
    raw = session.get("model_config") if isinstance(session, dict) else None
    try:
        cfg = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return {}
    return cfg if isinstance(cfg, dict) else {}


def _whole(v) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def infer(conversation) -> Inferred:
    """hermes' window from a hermes-agent recording (a state.db or a session JSON), which stores no window and
    no token counts: the usual window whose threshold (hermes' rule) best reproduces where the recording
    compacted and where it did not, measured with the strategy's own estimate of the real contexts. A
    ``context_length`` or ``max_tokens`` the session's model_config records is taken as it is."""
    out = Inferred()
    if getattr(conversation, "format", "") not in HERMES_FORMATS:
        return out
    cfg = _model_config(conversation)
    base: dict = {}
    if _whole(cfg.get("max_tokens")):
        base["max_tokens"] = cfg["max_tokens"]
        out.set("max_tokens", cfg["max_tokens"], "the session's model_config records it")
    if _whole(cfg.get("context_length")):
        out.set("context_length", cfg["context_length"], "the session's model_config records it")
        return out
    ev = context_evidence(conversation, HermesTokens())
    out.facts.update(compactions=[t for _, t in ev.fired], largest_without_compaction=ev.below,
                     calls=len(ev.quiet) + len(ev.fired))
    if not ev.quiet and not ev.fired:
        return out

    def thr(window):
        return hermes_threshold({"context_length": window, "threshold_pct": 0.50, **base})
    lo, hi = ev.below or 0, ev.lowest_fired

    def miss(window):                  # how far the threshold lies outside what the recording allows
        t = thr(window)
        return max(0, lo - t + 1) + (max(0, t - hi) if hi is not None else 0)
    best = min(WINDOWS, key=lambda w: (ev.errors(thr(w)), miss(w), w))
    t = thr(best)
    measured = "hermes' own estimate of each real context: the recorded messages, system prompt and tools"
    if ev.fired:
        n, bad = len(ev.fired), ev.errors(t)
        figures = sorted(f for _, f in ev.fired)
        span = f"{figures[0]:,}" if len(figures) == 1 else f"{figures[0]:,}-{figures[-1]:,}"
        fits = ("it fits every real context" if bad == 0 else
                f"the usual window that fits them best ({len(ev.segments) - bad} of the {len(ev.segments)} real "
                f"contexts)")
        why = (f"the recording does not store the window; hermes compacted {n} time(s) at {span} tokens and "
               f"{len(ev.quiet)} call(s) up to {lo:,} tokens did not compact ({measured}); a {best:,}-token window "
               f"gives the threshold {t:,}: {fits}")
    else:
        if thr(200_000) > lo:
            out.notes.append(f"the recording holds no compaction to read the window from; its context reached "
                             f"{lo:,} tokens without compacting, which hermes' default window (200,000) agrees with")
            return out
        best = next((w for w in WINDOWS if thr(w) > lo), WINDOWS[-1])
        t = thr(best)
        why = (f"the recording holds no compaction, but its context reached {lo:,} tokens without compacting "
               f"({measured}): the smallest usual window that allows it is {best:,} (threshold {t:,})")
    out.facts["threshold"] = t
    out.set("context_length", best, why)
    return out

HERMES = Strategy(
    name="hermes",
    title="Hermes agent ContextCompressor (hermes-agent 0.19.0)",
    description="prune old tool output -> head/tail boundaries -> one LLM summary of the middle (iterative) -> "
                "assemble with role choice -> sanitize tool pairs and images; tokens are Hermes' rough "
                "(chars + 3) // 4 estimate",
    layers=tuple(LAYERS[n] for n in ("hermes_prune", "hermes_boundaries", "hermes_summarize", "hermes_assemble",
                                     "hermes_sanitize")),
    extra_layers=(MOA_LAYER,),
    dialect=OPENAI,
    params=HermesParams.declared(),
    threshold=Threshold(TOKENS, fn=hermes_threshold,
                        formula="(context_length - max_tokens) x threshold_pct (at least 0.75 under 512,000 "
                                "tokens), floored at 64,000 tokens"),
    token_estimator=HermesTokens,
    iteration_budget=IterationPolicy(),     # hermes-agent's turn loop: max_iterations 90, refunds, per turn
    cross_check=CrossCheck("hermes-agent 0.19.0", "compactscope.core.oracles.hermes_agent:verdict",
                           "core.hermes_oracle ran the real hermes-agent ContextCompressor on the same input, "
                           "parameters, state and summary text and compared the output message by message."),
    notes={"source": "hermes-agent 0.19.0 agent/context_compressor.py", "docs": "docs/hermes.md"},
    infer=infer,
)
