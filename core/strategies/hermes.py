"""Hermes agent's ContextCompressor (hermes-agent 0.19.0, seed 002) as a strategy.

Native on the OpenAI chat dialect: Anthropic conversations are converted first (the
pipeline's ``convert`` step). One run is one ``compress()`` call when the estimate reaches
the threshold (or always, with ``trigger=always``, like ``/compress``). Iterative summaries
and the decaying head protection live in the pipeline state between runs.
"""
from __future__ import annotations

from ..layers.hermes import LAYERS
from ..layers.hermes import threshold as hermes_threshold
from ..layers.hermes_rules import HermesTokens
from ..messages import OPENAI
from ..moa import MOA_LAYER
from .base import TOKENS, CrossCheck, IterationPolicy, Param, Strategy, Threshold

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
    params=(
        Param("context_length", 200_000, "the model's context window in tokens (config_context_length)",
              minimum=1_000, unit="tokens"),
        Param("max_tokens", 0, "output tokens reserved out of the window (0 = provider default, no reservation); "
              "the threshold works on context_length - max_tokens", minimum=0, unit="tokens"),
        Param("threshold_pct", 0.50, "compress when the estimate reaches this share of the usable window; raised "
              "to at least 0.75 for windows under 512,000 tokens; the result is floored at 64,000 tokens (85% of "
              "the window when that floor would not fit)", minimum=0.01, maximum=1.0),
        Param("protect_first_n", 3, "messages after the system prompt kept verbatim at the head, on the FIRST "
              "compaction only (0 afterwards, so early turns do not fossilize)", minimum=0),
        Param("protect_last_n", 20, "the prune pass protects at least this many recent messages; the tail cut "
              "keeps at least min(this, 8) (and at least 3)", minimum=0),
        Param("summary_target_ratio", 0.20, "tail token budget = threshold x this (clamped to 0.10-0.80); the "
              "tail may run to 1.5x the budget", minimum=0.10, maximum=0.80),
        Param("trigger", "threshold", "'threshold' = compress only when the estimate reaches the threshold (and "
              "not in anti-thrash or cooldown); 'always' = compress now, like the /compress command",
              choices=("threshold", "always")),
        Param("abort_on_summary_failure", False, "when the summary LLM fails: false = insert the deterministic "
              "fallback summary; true = abort and keep the messages (auth and network errors always abort)"),
        Param("focus_topic", "", "optional focus for the summary prompt (like /compress <topic>); empty = derived "
              "from the last user turns"),
        Param("moa_preview_chars", 4000, "Mixture-of-Agents view: tool results are folded into previews of this "
              "many characters", minimum=0, unit="chars"),
    ),
    threshold=Threshold(TOKENS, fn=hermes_threshold,
                        formula="(context_length - max_tokens) x threshold_pct (at least 0.75 under 512,000 "
                                "tokens), floored at 64,000 tokens"),
    token_estimator=HermesTokens,
    iteration_budget=IterationPolicy(),     # hermes-agent's turn loop: max_iterations 90, refunds, per turn
    cross_check=CrossCheck("hermes-agent 0.19.0", "compactscope.core.hermes_oracle:verdict",
                           "core.hermes_oracle ran the real hermes-agent ContextCompressor on the same input, "
                           "parameters, state and summary text and compared the output message by message."),
    notes={"source": "hermes-agent 0.19.0 agent/context_compressor.py", "docs": "docs/hermes.md"},
)
