"""Infer what a black-box compactor did, from its input and output lists.

A plugin that is a plain ``messages -> messages`` function reports nothing: no origins, no
edits. ``infer_output`` reconstructs them so the views, the checker and the chart treat its
step like any built-in layer's:

1. **identity**: an output message that IS an input message (or the copy the plugin was
   handed in its place) comes from it;
2. **content**: an output message equal to an unclaimed input message comes from it (the
   input object is shared, so an unchanged message stays unchanged in the views);
3. **likeness**: an output message of the same role as an unclaimed input message between
   its neighbours' origins, sharing a tool id with it or with mostly the same text, is that
   message *replaced* (a REPLACE edit, with per-block changes when both have blocks);
4. anything left is *inserted*; where inserted messages stand in for a removed run of input
   messages, the first text message among them that says "summary" or runs to 200 characters
   is taken for a *summary* of that run, a shorter one for the run's placeholder.

Removed runs become SNIP edits, inserted messages INSERT or SUMMARY edits. Pure Python.
"""
from __future__ import annotations

from bisect import bisect_right
from difflib import SequenceMatcher
from typing import Any

import orjson

from ..model.messages import block_type, blocks, content_text, message_text, tool_result_ids, tool_use_ids
from ..pipeline.trace import INSERT, NOTE, REPLACE, SNIP, SUMMARY, Edit, LayerOutput

WINDOW = 64             # likeness: unclaimed inputs looked at after the expected place
GOOD = 0.9              # likeness: stop looking at this ratio
MIN_RATIO = 0.5         # likeness: SequenceMatcher ratio of the texts (first TEXT_CAP chars)
TEXT_CAP = 4000
SUMMARY_MIN_RUN = 2     # an inserted text message standing where this many messages were removed
SUMMARY_MIN_CHARS = 200  # ... is a summary when it says so or is at least this long (else a placeholder)


def _key(m: Any) -> bytes:
    try:
        return orjson.dumps(m, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        return repr(m).encode("utf-8", "surrogatepass")


def _ids(m: Any) -> set:
    return set(tool_use_ids(m)) | set(tool_result_ids(m))


def _text(m: Any) -> str:
    return message_text(m)[:TEXT_CAP] if isinstance(m, dict) else str(m)[:TEXT_CAP]


def _alike(a: Any, b: Any) -> float:
    """How much output ``b`` looks like input ``a`` (0 = not at all)."""
    if not isinstance(a, dict) or not isinstance(b, dict) or a.get("role") != b.get("role"):
        return 0.0
    ia, ib = _ids(a), _ids(b)
    if ia and ia & ib:
        return 2.0 + len(ia & ib) / len(ia | ib)
    ta, tb = _text(a), _text(b)
    if not ta and not tb:
        return 1.0 if not ia and not ib else 0.0
    sm = SequenceMatcher(None, ta, tb, autojunk=False)
    if sm.real_quick_ratio() < MIN_RATIO or sm.quick_ratio() < MIN_RATIO:
        return 0.0
    r = sm.ratio()
    return r if r >= MIN_RATIO else 0.0


def _size(x: Any) -> int:
    return len(content_text(x)) if not isinstance(x, str) else len(x)


def _block_edits(a: dict, b: dict, i: int, j: int) -> list[Edit]:
    """REPLACE edits per changed block when both messages have block lists of the same length."""
    ba, bb = blocks(a), blocks(b)
    if not ba or len(ba) != len(bb):
        return []
    out = []
    for k, (x, y) in enumerate(zip(ba, bb)):
        if x == y:
            continue
        tid = x.get("tool_use_id") or x.get("id") if isinstance(x, dict) else None
        t = block_type(x) or "block"
        out.append(Edit(REPLACE, f"message {i}: {t} block {k} replaced ({_size([x]):,} -> {_size([y]):,} chars)",
                        message=i, block=k, out=j, tool_id=tid if isinstance(tid, str) else None,
                        old_len=_size([x]), new_len=_size([y])))
    return out


def infer_origin(inp: list, out: list, handed: list | None = None) -> tuple[list, list, list[str]]:
    """(origin per output message, kind per output message, notes). Kinds: "kept", "changed",
    "inserted", "duplicated". ``handed``: the copies the function was given in place of ``inp``."""
    n, m = len(inp), len(out)
    origin: list = [None] * m
    kind: list = ["inserted"] * m
    used = [False] * n
    by_id = {id(x): i for i, x in enumerate(inp)}
    if handed is not None:
        by_id.update({id(x): i for i, x in enumerate(handed)})
    notes: list[str] = []
    # 1. identity
    for j, o in enumerate(out):
        i = by_id.get(id(o))
        if i is None:
            continue
        origin[j] = i
        if used[i]:
            kind[j] = "duplicated"
            continue
        used[i] = True
        kind[j] = "kept" if o is inp[i] or o == inp[i] else "changed"
    # 2. equal content
    rest = [j for j in range(m) if origin[j] is None]
    if rest:
        buckets: dict[bytes, list[int]] = {}
        for i in range(n):
            if not used[i]:
                buckets.setdefault(_key(inp[i]), []).append(i)
        prev = -1
        for j in range(m):
            if origin[j] is not None:
                prev = max(prev, origin[j])
                continue
            cands = buckets.get(_key(out[j]))        # unclaimed inputs with this content, ascending
            if not cands:
                continue
            k = bisect_right(cands, prev)
            i = cands.pop(k if k < len(cands) else 0)
            origin[j], kind[j], used[i] = i, "kept", True
            prev = max(prev, i)
    # 3. likeness: near the place the neighbours' origins leave for it, nearest first; at most a few
    # comparisons per message in all (a million outputs like none of a short input: linear, not m x WINDOW)
    budget = 4 * (n + m) + 1000
    if any(o is None for o in origin):
        nxt = [n] * (m + 1)                  # the first origin claimed by steps 1-2 after each output
        for j in range(m - 1, -1, -1):
            nxt[j] = origin[j] if origin[j] is not None else nxt[j + 1]
        lo = -1
        for j in range(m):
            if origin[j] is not None:
                lo = max(lo, origin[j])
                continue
            if budget <= 0:
                break
            hi = nxt[j + 1] if nxt[j + 1] > lo else n
            best, score, looked, steps = None, 0.0, 0, 0
            for i in range(lo + 1, hi):
                steps += 1
                if used[i]:
                    if steps >= budget:
                        break
                    continue
                s = _alike(inp[i], out[j])
                if s > score:
                    best, score = i, s
                    if s >= 2.0 or s >= GOOD:
                        break
                looked += 1
                if looked >= WINDOW or steps >= budget:
                    break
            budget -= steps
            if best is not None:
                origin[j], kind[j], used[best] = best, "changed", True
                lo = max(lo, best)
    seen = [o for o in origin if o is not None]
    if any(b < a for a, b in zip(seen, seen[1:])):
        notes.append("the output does not keep the input's order")
    return origin, kind, notes


def _is_summary_like(m: Any, known: tuple = ()) -> bool:
    """A text message that reads like a summary, not a one-line placeholder: it holds a summary
    the function is known to have made, says so, or is longer than a placeholder would be."""
    if not isinstance(m, dict) or m.get("role") not in ("user", "assistant", "system") or \
            tool_use_ids(m) or tool_result_ids(m):
        return False
    text = content_text(m.get("content")).strip()
    if known:
        return any(k and k.strip() in text for k in known)
    return len(text) >= SUMMARY_MIN_CHARS or "summar" in text.lower()


def infer_output(inp: list, out: list, *, handed: list | None = None, who: str = "the function",
                 summary: dict | None = None, summary_texts: tuple = ()) -> LayerOutput:
    """A ``LayerOutput`` for ``out`` made from ``inp`` by an unknown function: unchanged
    messages replaced by the input objects (shared), origins and edits inferred (see the module
    docstring). ``summary``: what the step reports as its LLM summary, if it made one;
    ``summary_texts``: summaries the function is known to have made (a message holding one of
    them is a summary)."""
    origin, kind, notes = infer_origin(inp, out, handed)
    msgs = list(out)
    for j, (o, k) in enumerate(zip(origin, kind)):
        if k == "kept" and msgs[j] is not inp[o]:
            msgs[j] = inp[o]                       # equal: share the input object
    edits: list[Edit] = []
    used = {o for o in origin if o is not None}
    removed = [i for i in range(len(inp)) if i not in used]
    # removed runs and the inserted outputs standing in for them
    runs: list[list[int]] = []
    for i in removed:
        if runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    inserted_at: dict[int, list[int]] = {}       # run start -> inserted outputs in its place
    placed: set[int] = set()
    starts = {r[0] for r in runs}
    lo = -1
    for j in range(len(msgs)):
        if origin[j] is not None:
            lo = max(lo, origin[j])
        elif kind[j] == "inserted" and lo + 1 in starts:
            inserted_at.setdefault(lo + 1, []).append(j)
            placed.add(j)
    n_summary = 0
    summary_out = None
    for run in runs:
        a, b = run[0], run[-1] + 1
        outs = inserted_at.get(a, [])
        summ = next((j for j in outs if _is_summary_like(msgs[j], summary_texts)), None) \
            if len(run) >= SUMMARY_MIN_RUN or summary_texts else None
        placeholder = next((j for j in outs if j != summ), None) if summ is None else None
        if summ is not None:
            n_summary += 1
            summary_out = summary_out if summary_out is not None else summ
            edits.append(Edit(SUMMARY, f"messages {a}..{b - 1} ({b - a}) replaced by a summary at {summ} "
                                       f"({len(content_text(msgs[summ].get('content'))):,} chars)",
                              start=a, end=b, out=summ))
        else:
            what = f"removed message {a}" if b - a == 1 else f"removed messages {a}..{b - 1} ({b - a})"
            edits.append(Edit(SNIP, what + (f", placeholder at {placeholder}" if placeholder is not None else ""),
                              start=a, end=b, out=placeholder))
        for j in outs:
            if j != summ and j != placeholder:
                edits.append(Edit(INSERT, f"inserted {msgs[j].get('role')} message {j}", out=j))
    for j in range(len(msgs)):
        if kind[j] == "inserted" and j not in placed:
            edits.append(Edit(INSERT, f"inserted {msgs[j].get('role') if isinstance(msgs[j], dict) else '?'} "
                                      f"message {j}", out=j))
        elif kind[j] == "changed":
            i = origin[j]
            per_block = _block_edits(inp[i], msgs[j], i, j)
            if per_block:
                edits.extend(per_block)
            else:
                ids = tool_result_ids(inp[i]) or tool_use_ids(inp[i])
                tid = ids[0] if ids else None
                old, new = len(message_text(inp[i])), len(message_text(msgs[j]))
                edits.append(Edit(REPLACE, f"message {i} replaced ({old:,} -> {new:,} chars)", message=i, out=j,
                                  tool_id=tid, old_len=old, new_len=new))
        elif kind[j] == "duplicated":
            edits.append(Edit(NOTE, f"message {origin[j]} appears again as message {j}", message=origin[j], out=j))
    for t in notes:
        edits.append(Edit(NOTE, t))
    counts = {"kept": kind.count("kept"), "changed": kind.count("changed"), "removed": len(removed),
              "inserted": kind.count("inserted"), "summaries": n_summary, "duplicated": kind.count("duplicated")}
    parts = [f"{counts['removed']} removed" if counts["removed"] else "",
             f"{counts['changed']} changed" if counts["changed"] else "",
             (f"{n_summary} summar{'y' if n_summary == 1 else 'ies'} inserted" if n_summary else ""),
             (f"{counts['inserted'] - n_summary} inserted" if counts["inserted"] - n_summary else ""),
             f"{counts['duplicated']} duplicated" if counts["duplicated"] else ""]
    changed = len(msgs) != len(inp) or any(a is not b for a, b in zip(msgs, inp))
    if not changed:
        return LayerOutput(inp, list(range(len(inp))), [], {"inferred": counts}, f"{who} returned its input unchanged")
    note = f"{who}: {len(inp)} -> {len(msgs)} messages" + "".join(f", {p}" for p in parts if p)
    if summary is None and summary_out is not None:
        text = content_text(msgs[summary_out].get("content"))
        summary = {"summarizer": f"{who} (inferred)", "cached": False, "text": text, "chars": len(text),
                   "inferred": True}
    return LayerOutput(msgs, origin, edits, {"inferred": counts}, note, summary=summary)
