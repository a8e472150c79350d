"""The s08 teaching pipeline of the learn-claude-code course (seeds 000, 001)."""
from __future__ import annotations

from ..layers.base import SNIP
from ..layers.s08 import S08Params, LAYERS
from .base import SIZE, Strategy, Threshold, Variant

S08 = Strategy(
    name="s08",
    title="s08 teaching pipeline",
    description="budget -> snip -> micro -> summary over the size limit; sizes are len(str(messages)) characters",
    layers=tuple(LAYERS[n] for n in ("tool_result_budget", "snip_compact", "micro_compact", "compact_history")),
    extra_layers=(LAYERS["reactive_compact"], LAYERS["compact_tool"]),
    params=S08Params.declared(),
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
