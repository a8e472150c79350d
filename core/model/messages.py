"""Messages in the two dialects the strategies speak, and helpers over them.

A message is a plain ``dict`` exactly as the API sees it, so that the seed's
``len(str(messages))`` gives the same figure here as in the agent.

* Anthropic Messages: ``{"role": "user"|"assistant", "content": str | [block]}``
  with blocks ``text``, ``tool_use {id, name, input}``,
  ``tool_result {tool_use_id, content, is_error?}``, ``image``, ``thinking``.
* OpenAI chat: roles ``system``/``developer``/``user``/``assistant``/``tool``;
  assistant ``tool_calls[{id, type, function: {name, arguments}}]``,
  tool results ``{"role": "tool", "tool_call_id", "content"}``.

Messages are treated as immutable values: nothing in ``core`` changes a
message in place. A layer that changes one message builds a new dict for it
and shares every other one with its input.
"""
from __future__ import annotations

import json
from array import array
from bisect import bisect_left, bisect_right
from typing import Any, Iterable, Iterator

from ..runtime.record import field, record
from .text import readable_message_text, readable_text
from ..files.jsonio import dict_at

ANTHROPIC = "anthropic"
OPENAI = "openai"

KNOWN_BLOCK_TYPES = frozenset({
    "text", "tool_use", "tool_result", "image", "thinking", "redacted_thinking",
    "document", "server_tool_use", "web_search_tool_result",
})


# ----------------------------------------------------------------- blocks
def blocks(message: Any) -> list:
    """The content blocks of an Anthropic message ([] for string content)."""
    if not isinstance(message, dict):
        return []
    content = message.get("content")
    return content if isinstance(content, list) else []


def block_type(block: Any) -> str | None:
    """A block's type when it is a string (a list or an object there is no type: never a set member)."""
    t = block.get("type") if isinstance(block, dict) else None
    return t if isinstance(t, str) else None


def has_tool_use(message: Any) -> bool:
    """The seed's ``_message_has_tool_use``: an assistant message with list content
    holding a tool_use block."""
    return (isinstance(message, dict) and message.get("role") == "assistant"
            and any(block_type(b) == "tool_use" for b in blocks(message)))


def is_tool_result_message(message: Any) -> bool:
    """The seed's ``_is_tool_result_message``: a user message with list content
    holding a tool_result dict block."""
    return (isinstance(message, dict) and message.get("role") == "user"
            and any(block_type(b) == "tool_result" for b in blocks(message)))


def tool_use_ids(message: Any) -> list[str]:
    if isinstance(message, dict) and message.get("role") == "tool":
        return []
    ids = [b.get("id") for b in blocks(message) if block_type(b) == "tool_use"]
    for call in (message.get("tool_calls") or []) if isinstance(message, dict) else []:
        if isinstance(call, dict):
            ids.append(call.get("id"))
    return [i for i in ids if isinstance(i, str)]


def tool_result_ids(message: Any) -> list[str]:
    if isinstance(message, dict) and message.get("role") == "tool":
        tid = message.get("tool_call_id")
        return [tid] if isinstance(tid, str) else []
    return [b.get("tool_use_id") for b in blocks(message)
            if block_type(b) == "tool_result" and isinstance(b.get("tool_use_id"), str)]


# the readable text of content and of a whole message (core.text: the three readings, each defined once)
content_text = readable_text
message_text = readable_message_text


def replace_block(message: dict, index: int, new_block: dict) -> dict:
    """A new message equal to ``message`` with block ``index`` replaced; other
    blocks are shared."""
    content = list(message["content"])
    content[index] = new_block
    out = dict(message)
    out["content"] = content
    return out


# ----------------------------------------------------------- tool pairs
@record
class ToolPair:
    """One tool call and where it was answered: the tool_use's (message, block) and every tool_result for its id."""
    id: str
    name: str | None = None
    use: tuple[int, int] | None = None        # (message index, block index) of the call
    results: list[tuple[int, int]] = field(default_factory=list)  # where it was answered

    @property
    def result(self) -> tuple[int, int] | None:
        return self.results[0] if self.results else None

    @property
    def complete(self) -> bool:
        return self.use is not None and bool(self.results)


class ToolPairIndex:
    """For each tool id: where it was called and where it was answered.

    Works on both dialects. Positions are (message index, block index); for an
    OpenAI tool_calls entry the block index is its index in ``tool_calls`` and
    for a ``role: tool`` message it is -1.

    Held compactly (an index over 100k messages is kept for each stage shown): one dict tool id -> pair
    number, the call and first answer of each pair in typed arrays, and every position that names a
    tool id as one entry of three arrays in message order (found by bisection); ``ToolPair`` objects are
    made when asked for.
    """

    def __init__(self, messages: list):
        self._num: dict[str, int] = {}            # tool id -> pair number
        self._tids: list[str] = []                # pair number -> tool id
        self._names: list = []                    # pair number -> name of its (first) call
        self._use = array("q")                    # pair number -> (message << 32 | block + 1) of its call, or -1
        self._res = array("q")                    # pair number -> the same of its first answer, or -1
        self._more: dict[int, list] = {}          # pair number -> its answers after the first
        self._at_msg = array("q")                 # every position naming a tool id, in message order
        self._at_blk = array("q")
        self._at_num = array("q")
        for mi, m in enumerate(messages):
            if not isinstance(m, dict):
                continue
            if m.get("role") == "tool":
                tid = m.get("tool_call_id")
                if isinstance(tid, str):
                    self._add_result(tid, mi, -1)
                continue
            for bi, b in enumerate(blocks(m)):
                t = block_type(b)
                if t == "tool_use" and isinstance(b.get("id"), str):
                    self._add_use(b["id"], b.get("name"), mi, bi)
                elif t == "tool_result" and isinstance(b.get("tool_use_id"), str):
                    self._add_result(b["tool_use_id"], mi, bi)
            for ci, call in enumerate(m.get("tool_calls") or []):
                if isinstance(call, dict) and isinstance(call.get("id"), str):
                    fn = dict_at(call, "function")
                    self._add_use(call["id"], fn.get("name"), mi, ci)

    def _number(self, tid: str) -> int:
        k = self._num.get(tid)
        if k is None:
            k = self._num[tid] = len(self._tids)
            self._tids.append(tid)
            self._names.append(None)
            self._use.append(-1)
            self._res.append(-1)
        return k

    def _at(self, k: int, mi: int, bi: int) -> None:
        self._at_msg.append(mi)
        self._at_blk.append(bi)
        self._at_num.append(k)

    def _add_use(self, tid, name, mi, bi):
        k = self._number(tid)
        if self._use[k] < 0:
            self._use[k] = _pack(mi, bi)
            self._names[k] = name
        self._at(k, mi, bi)

    def _add_result(self, tid, mi, bi):
        k = self._number(tid)
        if self._res[k] < 0:
            self._res[k] = _pack(mi, bi)
        else:
            self._more.setdefault(k, []).append((mi, bi))
        self._at(k, mi, bi)

    def _pair(self, k: int) -> ToolPair:
        u, r = self._use[k], self._res[k]
        results = [] if r < 0 else [_unpack(r)] + self._more.get(k, [])
        return ToolPair(self._tids[k], self._names[k], None if u < 0 else _unpack(u), results)

    @property
    def pairs(self) -> dict[str, ToolPair]:
        """tool id -> its ToolPair (made on each call)."""
        return {tid: self._pair(k) for tid, k in self._num.items()}

    def __len__(self) -> int:
        return len(self._tids)

    def __iter__(self) -> Iterator[ToolPair]:
        return map(self._pair, range(len(self._tids)))

    def get(self, tid: str) -> ToolPair | None:
        k = self._num.get(tid)
        return None if k is None else self._pair(k)

    def by_last_answer(self, names: set) -> Iterator[ToolPair]:
        """The pairs whose call is named one of ``names`` and that were answered, the one answered last first
        (pairs last answered in the same message: in pair order), made one at a time as they are read (a
        caller that wants the five latest reads of 100k messages makes five, not every pair)."""
        at_msg, at_num, use, res, more, tool_names = \
            self._at_msg, self._at_num, self._use, self._res, self._more, self._names
        e = len(at_msg) - 1
        while e >= 0:
            mi = at_msg[e]
            lo = bisect_left(at_msg, mi, 0, e + 1)          # the positions in message mi: [lo, e]
            for k in sorted({at_num[x] for x in range(lo, e + 1)}):
                name = tool_names[k]
                if use[k] < 0 or res[k] < 0 or name.__class__ is not str or name not in names:
                    continue
                last = more[k][-1] if k in more else _unpack(res[k])
                if last[0] == mi:
                    yield self._pair(k)
            e = lo - 1

    def _span(self, message: int) -> range:
        return range(bisect_left(self._at_msg, message), bisect_right(self._at_msg, message))

    def id_at(self, message: int, block: int) -> str | None:
        found = None
        blk = self._at_blk
        for e in self._span(message):              # the last naming this position (a block and a call alike)
            if blk[e] == block:
                found = self._at_num[e]
        return None if found is None else self._tids[found]

    def ids_in_message(self, message: int) -> list[str]:
        return list(dict.fromkeys(self._tids[self._at_num[e]] for e in self._span(message)))

    def partner(self, message: int, block: int) -> tuple[int, int] | None:
        """The other half of the pair the block at (message, block) belongs to."""
        tid = self.id_at(message, block)
        if tid is None:
            return None
        k = self._num[tid]
        u, r = self._use[k], self._res[k]
        if u >= 0 and _unpack(u) == (message, block):
            return None if r < 0 else _unpack(r)
        return None if u < 0 else _unpack(u)

    @property
    def complete_count(self) -> int:
        use, res = self._use, self._res
        return sum(1 for k in range(len(use)) if use[k] >= 0 and res[k] >= 0)


def _pack(mi: int, bi: int) -> int:
    return (mi << 32) | (bi + 1)


def _unpack(v: int) -> tuple[int, int]:
    return v >> 32, (v & 0xFFFFFFFF) - 1


# ----------------------------------------------------------- conversion
def _json_args(arguments: Any) -> Any:
    if isinstance(arguments, dict):
        return arguments
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return {"_raw_arguments": arguments}
        return value if isinstance(value, dict) else {"_value": value}
    return {} if arguments is None else {"_value": arguments}


def _openai_part_to_block(part: Any) -> dict:
    if isinstance(part, dict):
        t = part.get("type")
        if t in ("text", "input_text", "output_text"):
            return {"type": "text", "text": str(part.get("text", ""))}
        if t in ("image_url", "input_image"):
            url = part.get("image_url")
            url = url.get("url") if isinstance(url, dict) else url
            return {"type": "image", "source": {"type": "url", "url": url}}
    return {"type": "text", "text": json.dumps(part, ensure_ascii=False, default=str)}


def _block_to_openai_part(block: Any) -> dict:
    t = block_type(block)
    if t == "text":
        text = block.get("text", "")
        return {"type": "text", "text": text if isinstance(text, str) else json.dumps(text, default=str)}
    if t == "image":
        src = dict_at(block, "source")
        if src.get("type") == "base64":
            url = f"data:{src.get('media_type', 'image/png')};base64,{src.get('data', '')}"
        else:
            url = src.get("url", "")
        return {"type": "image_url", "image_url": {"url": url}}
    return {"type": "text", "text": content_text([block]) if isinstance(block, dict) else str(block)}


def _openai_content(parts: list) -> Any:
    if all(p.get("type") == "text" for p in parts):
        return "\n".join(p["text"] for p in parts) if parts else ""
    return parts


@record
class Converted:
    """Messages converted to another dialect, with the input message each output message came from."""
    messages: list
    origin: list[int]      # for each output message, the input message it came from
    system: Any = None


def to_openai(messages: list, system: Any = None) -> Converted:
    """Anthropic -> OpenAI chat. A user message holding tool_result blocks
    becomes one ``role: tool`` message per result (in order), followed by a user
    message for any other blocks. Thinking becomes ``reasoning``."""
    out: list = []
    origin: list[int] = []
    if system:
        out.append({"role": "system", "content": content_text(system) if isinstance(system, list) else system})
        origin.append(-1)
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            continue
        role, content = m.get("role"), m.get("content")
        if role in ("system", "developer", "tool") or "tool_calls" in m:
            out.append(m)  # already OpenAI-shaped
            origin.append(i)
            continue
        if not isinstance(content, list):
            out.append({"role": role, "content": content})
            origin.append(i)
            continue
        if role == "assistant":
            texts, calls, thinking = [], [], []
            for b in content:
                t = block_type(b)
                if t == "tool_use":
                    calls.append({"id": b.get("id"), "type": "function", "function": {
                        "name": b.get("name"),
                        "arguments": json.dumps(b.get("input", {}), ensure_ascii=False, default=str)}})
                elif t == "thinking":
                    thinking.append(str(b.get("thinking", "")))
                elif t == "redacted_thinking":
                    continue
                else:
                    texts.append(_block_to_openai_part(b))
            msg: dict = {"role": "assistant", "content": _openai_content(texts) if texts else None}
            if calls:
                msg["tool_calls"] = calls
            if thinking:
                msg["reasoning"] = "\n".join(thinking)
            out.append(msg)
            origin.append(i)
            continue
        rest = []
        for b in content:
            if block_type(b) == "tool_result":
                c = b.get("content")
                text = content_text(c) if not isinstance(c, str) else c
                tmsg = {"role": "tool", "tool_call_id": b.get("tool_use_id"), "content": text}
                out.append(tmsg)
                origin.append(i)
            else:
                rest.append(_block_to_openai_part(b))
        if rest:
            out.append({"role": role, "content": _openai_content(rest)})
            origin.append(i)
    return Converted(out, origin)


def to_anthropic(messages: list) -> Converted:
    """OpenAI chat -> Anthropic. System/developer messages become the system
    prompt; consecutive tool messages (and a user message right after them) are
    merged into one user message, so every call keeps its result in the next
    message."""
    out: list = []
    origin: list[int] = []
    system_parts: list[str] = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            continue
        role = m.get("role")
        if role in ("system", "developer"):
            system_parts.append(content_text(m.get("content")) if not isinstance(m.get("content"), str)
                                else m["content"])
            continue
        if role == "tool":
            block = {"type": "tool_result", "tool_use_id": m.get("tool_call_id"),
                     "content": m.get("content") if isinstance(m.get("content"), str)
                     else content_text(m.get("content"))}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list) \
                    and any(block_type(b) == "tool_result" for b in out[-1]["content"]):
                out[-1] = {"role": "user", "content": [*out[-1]["content"], block]}
            else:
                out.append({"role": "user", "content": [block]})
                origin.append(i)
            continue
        if role == "assistant":
            content = m.get("content")
            if "tool_calls" not in m and not m.get("reasoning") and not m.get("reasoning_content"):
                out.append(m if isinstance(content, (str, list)) else {"role": "assistant", "content": ""})
                origin.append(i)
                continue
            bl: list = []
            reasoning = m.get("reasoning") or m.get("reasoning_content")
            if reasoning:
                bl.append({"type": "thinking", "thinking": str(reasoning)})
            if isinstance(content, str) and content:
                bl.append({"type": "text", "text": content})
            elif isinstance(content, list):
                bl.extend(_openai_part_to_block(p) for p in content)
            for call in m.get("tool_calls") or []:
                if not isinstance(call, dict):
                    continue
                fn = dict_at(call, "function")
                bl.append({"type": "tool_use", "id": call.get("id"), "name": fn.get("name"),
                           "input": _json_args(fn.get("arguments"))})
            out.append({"role": "assistant", "content": bl})
            origin.append(i)
            continue
        content = m.get("content")
        if isinstance(content, list):
            content = [_openai_part_to_block(p) if not (isinstance(p, dict) and p.get("type") in KNOWN_BLOCK_TYPES)
                       else p for p in content]
        if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list) \
                and any(block_type(b) == "tool_result" for b in out[-1]["content"]):
            extra = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
            out[-1] = {"role": "user", "content": [*out[-1]["content"], *extra]}
            continue
        out.append({"role": role or "user", "content": content})
        origin.append(i)
    system = "\n\n".join(system_parts) if system_parts else None
    return Converted(out, origin, system)


ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document",
                              "server_tool_use", "web_search_tool_result"})
OPENAI_PARTS = frozenset({"image_url", "input_text", "input_image", "output_text", "input_audio"})


def detect_dialect(messages: Iterable, *, system: Any = None) -> str:
    """The dialect of a whole request, not of one role. OpenAI's marks: a ``tool``/``developer``
    message, ``tool_calls``, ``tool_call_id``, ``image_url``/``input_*`` parts. Anthropic's: its content
    blocks (tool_use, tool_result, thinking, image, ...) and a request-level ``system`` (pass it). A
    ``system``-role message alone is OpenAI's way of giving the system prompt, unless the request shows
    Anthropic's marks too: newer Claude Code clients send a system-role message inside an Anthropic
    ``messages`` list, and it stays there (measured where it was sent). Both kinds of marks: the more
    numerous wins."""
    oa = an = 0
    system_role = False
    for m in messages:
        if not isinstance(m, dict):
            continue
        role = m.get("role")
        if role in ("tool", "developer") or "tool_calls" in m or "tool_call_id" in m or "function_call" in m:
            oa += 1
        elif role == "system":
            system_role = True
        content = m.get("content")
        if content.__class__ is str or not isinstance(content, list):
            continue                        # (``blocks``: none)
        for b in content:
            t = block_type(b)
            if t in ANTHROPIC_BLOCKS:
                an += 1
            elif t in OPENAI_PARTS:
                oa += 1
    if system is not None and system != "" and system != []:
        an += 1
    if oa or an:
        return OPENAI if oa > an else ANTHROPIC
    return OPENAI if system_role else ANTHROPIC
