"""The s08 teaching pipeline of the learn-claude-code course (seeds 000, 001)."""
from __future__ import annotations

from compactscope.core.layers.base import SNIP
from compactscope.core.layers.s08 import LAYERS
from compactscope.core.strategies.base import SIZE, Param, Strategy, Threshold, Variant

S08 = Strategy(
    name="s08",
    title="s08 teaching pipeline",
    description="budget -> snip -> micro -> summary over the size limit; sizes are len(str(messages)) characters",
    layers=tuple(LAYERS[n] for n in ("tool_result_budget", "snip_compact", "micro_compact", "compact_history")),
    extra_layers=(LAYERS["reactive_compact"], LAYERS["compact_tool"]),
    params=(
        Param("max_messages", 50, "snip_compact fires when there are more messages than this", minimum=1),
        Param("keep_head", 3, "snip_compact keeps this many messages at the head (the seed's 3)", minimum=0),
        Param("keep_recent", 3, "micro_compact keeps this many most recent tool results whole", minimum=0),
        Param("micro_min_chars", 120, "micro_compact only replaces results longer than this (len() of the content)",
              minimum=0),
        Param("max_bytes", 200_000, "tool_result_budget: the last message's tool results may total this many chars",
              minimum=0, unit="chars"),
        Param("persist_threshold", 30_000, "tool_result_budget persists only results longer than this",
              minimum=0, unit="chars"),
        Param("preview_chars", 2000, "characters of a persisted result kept in the context as a preview", minimum=0,
              unit="chars"),
        Param("context_limit", 50_000, "compact_history runs when len(str(messages)) is over this", minimum=0,
              unit="chars"),
        Param("reactive_keep", 5, "reactive_compact keeps this many last messages", minimum=0),
        Param("summary_input_chars", 80_000, "the summary prompt gets json.dumps(messages)[:this]", minimum=0,
              unit="chars"),
        Param("summary_max_tokens", 2000, "max_tokens of the summary call", minimum=1),
        Param("max_failures", 3, "circuit breaker: stop auto-compacting after this many consecutive failures",
              minimum=1),
        Param("variant", "guarded", "'readme' = the seed README's snip: the same guards without the overlap and "
              "bounds checks ('snipped 0' placeholders, negative snips duplicating messages, IndexError at the ends)",
              choices=("guarded", "readme")),
        Param("compact_tool_mode", "teaching", "'teaching' appends the batch's results after the summary (API 400); "
              "'deferred' compacts after the batch", choices=("teaching", "deferred")),
    ),
    threshold=Threshold(SIZE, "context_limit", formula="len(str(messages)) over context_limit"),
    variants=(Variant("readme", "README variant (no overlap or bounds checks)", (("variant", "readme"),),
                      until_role=SNIP,
                      description="the README code has both guards but lacks the overlap check (head_end >= "
                                  "tail_start) and the bounds checks: it inserts a 'snipped 0' placeholder when the "
                                  "guards make head_end reach tail_start, duplicates messages when they push it "
                                  "past, and raises IndexError when the cut falls at the list's end"),),
    reactive_layer="reactive_compact",
    compact_tool_layer="compact_tool",
)
