"""OpenAI Codex CLI's local auto-compaction (codex-cli 0.171.0, ``codex-rs/core/src/compact.rs``) as three
traced layers over OpenAI chat messages (the Codex loader's dialect):

    codex_token_check -> codex_compact_request -> codex_build_history

* ``codex_token_check``: Codex's figure before the next request (the last reported ``total_tokens`` plus its
  bytes/4 estimate of what was added since) against ``min(model_auto_compact_token_limit, 90% of
  model_context_window)``; checked mid turn (the last response called tools) and before a user turn;
* ``codex_compact_request``: the request Codex sends to compact: the history plus the compaction prompt as the
  last user message, no tools (its output is that request's input list); the summary comes from the
  session's summarizer (offline by default). When the request itself is estimated over the window, the oldest
  item is dropped until it fits (Codex retries so on ContextWindowExceeded);
* ``codex_build_history``: the new history: the user's prompts within the 20k-token budget, the summary
  behind ``SUMMARY_PREFIX``, and (mid turn) the initial context before the last prompt.

The rules are in ``codex_rules``. The phases hand data on through the pipeline state ``codex_pass``, cleared
by the last layer.
"""
from __future__ import annotations

from itertools import compress
from typing import Any

from ..runtime.record import record
from ..summarizers import LazyPrompt, SummaryError, SummaryRequest
from ..pipeline.facts import BytesFact
from ..runtime.forget import on_forget
from ..runtime.listmemo import ListMemo
from ..pipeline.trace import BOUNDARY, DROP, INSERT, NOTE, SUMMARY, Edit, LayerOutput
from . import base as roles
from . import codex_rules as R
from .codex_scan import CodexScan, codex_scan
from .codex_scan import forget as _forget_scans
from .base import Layer, LayerContext
from .params import Settings, param

CODEX_VERSION = "0.171.0"
PASS = "codex_pass"
MID_TURN, PRE_TURN, MANUAL = "mid_turn", "pre_turn", "manual"


DEFAULT_WINDOW = 272_000        # the context window of the models Codex ships for (gpt-5 family)


@record(frozen=True)
class CodexParams(Settings):
    """Codex CLI's compaction settings (config.toml) and constants."""

    model_auto_compact_token_limit: int = param(
        0, "config.toml model_auto_compact_token_limit: compact when Codex's "
        "figure reaches this many tokens (0 = unset: 90% of model_context_window); never more than 90% of the "
        "window",
        minimum=0, unit="tokens")
    model_context_window: int = param(
        DEFAULT_WINDOW, "config.toml model_context_window: the model's context window "
        "in tokens (Codex reports and fills 95% of it)",
        minimum=1_000, unit="tokens")
    user_message_max_tokens: int = param(
        R.COMPACT_USER_MESSAGE_MAX_TOKENS, "the budget of the user's own messages "
        "kept after a compaction, newest first (COMPACT_USER_MESSAGE_MAX_TOKENS)",
        minimum=0, unit="tokens")
    trigger: str = param(
        "auto", "'auto' = compact when the check fires (mid turn or before a turn); 'always' = "
        "compact now, like /compact",
        choices=("auto", "always"))
    summary_max_tokens: int = param(2000, "the longest summary asked of the summarizer", minimum=1, unit="tokens")


def _fmt(n: int) -> str:
    return f"{n:,}"


def threshold(params: dict) -> int:
    """Where the strategy compacts (charts, replay): Codex's auto-compact limit for these parameters."""
    lim = R.limit(int(params.get("model_auto_compact_token_limit", 0) or 0),
                  int(params.get("model_context_window", 0) or 0))
    return lim if lim is not None else 2 ** 53


def system_tokens(system: Any) -> int:
    if isinstance(system, str):
        return R.approx_tokens(system)
    if isinstance(system, list):
        # (a part whose text is not a string, as a file may hold it, carries no text to count)
        return sum(R.approx_tokens(t) for p in system if isinstance(p, dict) and isinstance(t := p.get("text"), str))
    return 0


def _figure(m: Any, meter: Any = None) -> int:
    return R.message_tokens(m)


PROMPT, SUMMARY_ITEM, INITIAL = 1, 2, 4      # what a message is for Codex, as the bits of one per-message figure


def _kind_of(m: Any, meter: Any = None) -> int:
    return (PROMPT if R.is_user_prompt(m) else 0) | (SUMMARY_ITEM if R.is_summary(m) else 0) | \
        (INITIAL if R.is_initial_context(m) else 0)


_FACTS_MAX = 1 << 17
_FACTS: dict = {}        # id(message) -> (message, kind bits, (its text, approx tokens) or None); bounded, forgotten


def _forget_facts() -> None:
    _FACTS.clear()
    _forget_scans()
    _SUMS.clear()


on_forget(_forget_facts)         # (a fleet worker drops the last session's messages)


def _facts_of(m: Any) -> list:
    e = _FACTS.get(id(m))
    if e is not None and e[0] is m:
        return e
    if len(_FACTS) >= _FACTS_MAX:
        _FACTS.clear()
    e = _FACTS[id(m)] = [m, _kind_of(m), None]
    return e


class _Kinds:
    """``R.is_user_prompt``, ``R.is_initial_context``, a prompt's text and tokens, and the item estimate of a
    message, each computed once per message object: a compaction at every call of a replay asks them of every
    message of its history, several times per layer (a lookup in the meter's table cost 1-2 us; the kinds and
    texts are kept in a bounded identity map of this module instead)."""
    __slots__ = ("figure",)

    def __init__(self, meter: Any):
        self.figure = meter.figure

    @staticmethod
    def prompt(m: Any) -> bool:
        return bool(_facts_of(m)[1] & PROMPT)

    @staticmethod
    def initial(m: Any) -> bool:
        return bool(_facts_of(m)[1] & INITIAL)

    @staticmethod
    def text_tokens(m: Any) -> tuple[str, int]:
        e = _facts_of(m)
        if e[2] is None:
            t = R.text_of(m)
            e[2] = (t, R.approx_tokens(t))
        return e[2]

    def tokens(self, m: Any) -> int:
        return self.figure(m, CodexTokens.figure_name, _figure)


def _key(m: Any) -> tuple:
    return m.get("role"), R.text_of(m)


def scan_of(messages: list, upto: int, ctx: LayerContext) -> CodexScan:
    """``codex_scan`` of ``messages[:upto]`` with this module's per-message facts (kinds, prompt tokens) and the
    meter's item estimate."""
    figure, text_tokens = ctx.meter.figure, _Kinds.text_tokens
    name = CodexTokens.figure_name

    def add(st: CodexScan, m: Any) -> None:
        st.add(m, _facts_of(m)[1], INITIAL, PROMPT, text_tokens, figure(m, name, _figure), _key)
    return codex_scan(messages, upto, ctx.meta, add)


_SUMS = ListMemo(8)         # per list: the prefix sums of Codex's item estimate, for the lists that share a prefix


def item_total(messages: list, meter: Any) -> int:
    """``meter.total`` of Codex's item estimate over ``messages``, carried from the prefix sums of a list this one
    shares a prefix with (the contexts of a compacting replay are a few hundred messages, which the meter sums
    whole each time; each call's new history starts with the prompts the previous one kept)."""
    sums, k, same = _SUMS.find(messages, meter)
    if sums is None:
        sums, k, same = [0], 0, True
    n = len(messages)
    made = k < n
    if k < len(sums) - 1:
        sums, made = sums[:k + 1], True
    elif not same and made:
        sums = list(sums)
    if made:
        figure, name = meter.figure, CodexTokens.figure_name
        for m in messages[k:]:
            sums.append(sums[-1] + figure(m, name, _figure))
        _SUMS.store(messages, n, sums)
    return sums[n]


class CodexTokens:
    """The strategy's token estimator: Codex's own figure for a history (``get_total_token_usage``). Bound to a
    recorded session (``bind``, as the engine does), it is the ``total_tokens`` the last response in the list
    reported plus Codex's estimate of each item after it (its JSON bytes / 4, rounded up); with no reported
    response after the last summary, the estimate of every item plus the base instructions (what Codex writes
    right after a compaction). Reading the recorded usage itself, it is never calibrated on top."""
    name = "Codex's figure: last reported total + item JSON bytes / 4 since"
    anchors_on_usage = True
    figure_name = "codex_item_tokens"

    def __init__(self):
        self._meta: dict = {}

    def bind(self, conversation: Any, meter: Any = None) -> None:
        fn = getattr(conversation, "meta_by_identity", None)
        self._meta = fn() if callable(fn) else {}

    def tokens(self, messages: list, meter: Any = None, *, system: Any = None, tools: Any = None) -> int:
        at, reported = last_reported(messages, self._meta)
        if at is not None and reported is not None:
            return reported + sum(self._size(m, meter) for m in messages[at + 1:])
        total = item_total(messages, meter) if meter is not None else sum(map(R.message_tokens, messages))
        return total + system_tokens(system)

    def _size(self, m: Any, meter: Any) -> int:
        return meter.figure(m, self.figure_name, _figure) if meter is not None else R.message_tokens(m)


# ------------------------------------------------------------------ 1. the token check
def _phase(messages: list) -> tuple[str | None, int | None]:
    """When Codex checks before this request: mid turn (the last response called tools and only their outputs
    came since), before a user turn (a user message came since), or not at all (the last response ended its turn;
    or a compaction just replaced the history and the turn goes on with the next request), with the index of
    the last response."""
    last = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "assistant"), None)
    start = last + 1 if last is not None else 0           # (a summary matters only after the last response)
    summary = next((i for i in range(len(messages) - 1, start - 1, -1) if R.is_summary(messages[i])), None)
    if summary is not None:
        after_summary = messages[summary + 1:]
        return (PRE_TURN if any(R.is_user_prompt(m) for m in after_summary) else None), last
    after = messages[last + 1:] if last is not None else messages
    if any(m.get("role") == "user" for m in after) or last is None:
        return PRE_TURN, last
    if messages[last].get("tool_calls") and after:
        return MID_TURN, last
    return None, last


def _stop(m: Any, meta: dict) -> tuple[bool, tuple[int | None, int | None] | None]:
    """Where ``last_reported``'s walk back stops at ``m``: (stops, the (total) it found, None at a summary)."""
    if R.is_summary(m):
        return True, None
    if m.get("role") != "assistant":
        return False, None
    mm = meta.get(id(m))
    u = mm.usage if mm is not None else None
    if mm is None or u is None:
        return False, None
    total = mm.extra.get("total_tokens") if isinstance(mm.extra, dict) else None
    return True, (None, int(total) if isinstance(total, int) else u.context_tokens + u.output_tokens)


def _walk_back(messages: list, meta: dict, stop_at: int) -> tuple[int, tuple[int | None, int | None]] | None:
    """(index, answer) of the last message at or after ``stop_at`` where the walk back stops, or None."""
    for i in range(len(messages) - 1, stop_at - 1, -1):
        stops, found = _stop(messages[i], meta)
        if stops:
            return i, ((i, found[1]) if found is not None else (None, None))
    return None


_REPORTED = ListMemo()      # per list: (where the walk stopped, or -1; its answer), for the lists that extend it


def last_reported(messages: list, meta: dict) -> tuple[int | None, int | None]:
    """(index, total_tokens) of the last response whose usage the file reports (``meta``: id(message) -> its
    MessageMeta), after the last summary (a compaction resets Codex's figure to its estimate). Asked at every
    call of a replay, several times per call: the answer for a list that extends one asked before is that list's
    unless one of the new messages stops the walk (a session that reports no usage walked back to its start at
    every call: quadratic)."""
    state, k, _ = _REPORTED.find(messages, meta)
    if state is not None and state[0] < k:
        hit = _walk_back(messages, meta, k)
        at, answer = hit if hit is not None else state
    else:
        hit = _walk_back(messages, meta, 0)
        at, answer = hit if hit is not None else (-1, (None, None))
    _REPORTED.store(messages, len(messages), (at, answer))
    return answer


def _idle_check(cfg, phase, lim, total) -> bool:
    """The token check changes nothing and does not fire (no check in this phase, or under the limit)."""
    if cfg.trigger == "always":
        return False
    return phase is None or lim is None or total < lim


def codex_token_check(messages: list, ctx: LayerContext) -> LayerOutput:
    cfg = CodexParams.of(ctx)
    phase, last = _phase(messages)
    lim = R.limit(int(cfg.model_auto_compact_token_limit or 0), int(cfg.model_context_window or 0))
    at, reported = last_reported(messages, ctx.meta)
    if reported is not None and at is not None:
        since = messages[at + 1:]
        if phase == PRE_TURN:       # the CLI checks before it records the new turn's input (codex-cli 0.171.0)
            since = [m for m in since if m.get("role") != "user"]
        added = ctx.meter.figure_sum(since, CodexTokens.figure_name, _figure)
        total = reported + added
    else:
        since = None
        added = total = system_tokens(ctx.system) + item_total(messages, ctx.meter)
    if not ctx.explain and _idle_check(cfg, phase, lim, total):
        return LayerOutput.unchanged(messages, triggered=False, state={PASS: None})    # (``LayerContext.explain``)
    if since is None or reported is None:
        how = "no response since the last compaction reported its usage: Codex's estimate of the whole history"
    else:
        how = (f"the last response (message {at}) reported {_fmt(reported)} tokens, and Codex estimates "
               f"{_fmt(added)} for the {len(since)} item(s) since")
    v = {"phase": phase, "last_reported_total": reported, "reported_at": at, "estimated_since": added,
         "total_usage_tokens": total, "auto_compact_limit": lim, "last_response": last}
    forced = cfg.trigger == "always"
    if forced:
        phase = MANUAL
    elif phase is None:
        why = ("no check: the history was just compacted, and the turn goes on with the next request" if last is None
               or any(R.is_summary(m) for m in messages[last + 1:]) else
               "no check: the last response ended its turn (Codex checks before a follow-up request or a new user "
               "turn)")
        return LayerOutput.unchanged(messages, why, vars=v, triggered=False, state={PASS: None})
    fires = forced or (lim is not None and total >= lim)
    limit_words = _fmt(lim) if lim is not None else "no limit"
    op = ">=" if lim is not None and total >= lim else "<"
    edit = Edit(BOUNDARY, f"total_usage_tokens {_fmt(total)} {op} auto_compact_limit {limit_words}: {how}",
                var="total_usage_tokens", new=total)
    if not fires:
        return LayerOutput.unchanged(messages, f"under the limit: {_fmt(total)} < {limit_words} tokens", edits=[edit],
                                     vars=v, triggered=False, state={PASS: None})
    note = "compact now (trigger=always, like /compact)" if forced else \
        f"compact {'mid turn' if phase == MID_TURN else 'before the turn'}: {_fmt(total)} >= {limit_words} tokens"
    return LayerOutput.unchanged(messages, note, edits=[edit], vars=v, triggered=True,
                                 state={PASS: {"phase": phase, "total": total, "limit": lim}})


# ------------------------------------------------------------------ 2. the compaction request
def _trailing_input(messages: list, phase: str) -> int:
    """Where the history the request summarises ends: before a new turn's own input (pre turn), else the end."""
    if phase != PRE_TURN:
        return len(messages)
    last = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "assistant"), -1)
    return last + 1 if last >= 0 else len(messages)


def _piece(m: Any) -> str:
    from ..model.text import readable_message_text
    return f"[{m.get('role')}]\n{readable_message_text(m)}\n\n"


def _request_pieces(history: list):
    for m in history:
        yield _piece(m)
    yield R.COMPACT_PROMPT


def _piece_digest(m: Any) -> bytes:
    import hashlib
    return hashlib.sha256(_piece(m).encode("utf-8", "surrogatepass")).digest()


# message -> sha256 of its piece of the compaction request: a compaction at every call of a replay hashed the
# text of its whole history for the summary cache; now 32 bytes per message (kept per message object)
_PIECE_DIGESTS = BytesFact("codex_piece_sha256", 32, _piece_digest)


def _request_key_pieces(history: list, scan: CodexScan | None = None, messages: list | None = None,
                        start: int = 0):
    """What identifies the request's prompt for the summary cache: equal exactly when the prompts are (the count of
    items, the compaction prompt, each item as the digest of its piece). With ``scan`` (of ``messages``, where
    ``history`` is ``messages[start:start + len(history)]``), the digests it keeps, extended to the history's end."""
    yield f"{len(history)}:" + R.COMPACT_PROMPT
    _PIECE_DIGESTS.shown(len(history))
    if scan is None or messages is None:
        yield _PIECE_DIGESTS.joined(history)
    else:
        yield scan.digests(messages, start, start + len(history), _PIECE_DIGESTS.joined)


def codex_compact_request(messages: list, ctx: LayerContext) -> LayerOutput:
    cfg = CodexParams.of(ctx)
    p = ctx.state.get(PASS)
    if not p:
        return LayerOutput.unchanged(messages, "no compaction in this pass")
    end = _trailing_input(messages, p["phase"])
    history = messages[:end]
    edits: list[Edit] = []
    dropped = 0
    window = int(cfg.model_context_window or 0)
    fixed = system_tokens(ctx.system) + R.approx_tokens(R.COMPACT_PROMPT)
    kinds = _Kinds(ctx.meter)
    scan = scan_of(messages, end, ctx)
    total = fixed + scan.tok[end]
    sizes = [kinds.tokens(m) for m in history] if window > 0 and total > window else []
    while window > 0 and total > window and len(history) - dropped > 1:
        total -= sizes[dropped]
        dropped += 1
    if dropped:
        edits.append(Edit(DROP, f"the compaction request is estimated over the window ({_fmt(window)} tokens): the "
                                f"{dropped} oldest item(s) removed, as Codex does when the request overflows",
                          start=0, end=dropped))
    history = history[dropped:]
    prompt_msg = {"role": "user", "content": R.COMPACT_PROMPT}
    out = history + [prompt_msg] + messages[end:]
    origin: list = list(range(dropped, end)) + [None] + list(range(end, len(messages)))
    edits.append(Edit(INSERT, "the compaction prompt added as the last user message; the request is sent with no "
                              "tools, request_kind compaction", out=len(history), new_len=len(R.COMPACT_PROMPT)))
    if end < len(messages):
        edits.append(Edit(NOTE, f"the new turn's input ({len(messages) - end} message(s)) is not in the request: it "
                                "follows the compaction", start=end, end=len(messages)))
    v = {"request_items": len(history) + 1, "tools": 0, "request_kind": "compaction", "estimated_request_tokens": total,
         "dropped_oldest": dropped, "summarised_until": end}
    shown = compress(history, scan.notinit[dropped:end])
    prompt: Any = LazyPrompt(lambda: _request_pieces(history),
                             lambda: _request_key_pieces(history, scan, messages, dropped))
    req = SummaryRequest(prompt, tuple(shown), ctx.system
                         if isinstance(ctx.system, str) else None, cfg.summary_max_tokens,
                         "codex_compact", {"request_kind": "compaction", "tools": 0})
    try:
        res = ctx.summarizer.summarize(req, ctx.cancel)
    except SummaryError as e:
        return LayerOutput.unchanged(messages, "the compaction request failed: the history is kept", vars=v,
                                     error=f"summary failed ({e.kind}): {e}", state={PASS: None}, triggered=False)
    reply = res.text if isinstance(res.text, str) else str(res.text or "")
    info = {**res.to_json(), "text": reply}
    state = {PASS: {**p, "reply": reply, "end": end, "dropped": dropped}}
    return LayerOutput(out, origin, edits, v, f"compaction request: {len(history) + 1} items, no tools; the summary is "
                                              f"{_fmt(len(reply))} chars", triggered=True, state=state, summary=info)


# ------------------------------------------------------------------ 3. the new history
def codex_build_history(messages: list, ctx: LayerContext) -> LayerOutput:
    cfg = CodexParams.of(ctx)
    p = ctx.state.get(PASS)
    if not p or "reply" not in p:
        return LayerOutput.unchanged(messages, "no compaction in this pass", state={PASS: None})
    at_prompt = p["end"] - p.get("dropped", 0)
    if not (0 <= at_prompt < len(messages) and messages[at_prompt].get("content") == R.COMPACT_PROMPT):
        return LayerOutput.unchanged(messages, "no compaction request before this layer", state={PASS: None})
    request, trailing = messages[:at_prompt], messages[at_prompt + 1:]
    budget = cfg.user_message_max_tokens
    kinds = _Kinds(ctx.meter)
    scan = scan_of(messages, at_prompt, ctx)
    first, whole, cut = scan.select(budget)
    taken = scan.prompts[first:first + whole]
    edits: list[Edit] = []
    new: list = []
    origin: list = []
    if cut is not None:
        i = scan.prompts[cut]
        new.append({"role": "user", "content": R.truncate_middle(kinds.text_tokens(request[i])[0],
                                                                 scan.left(budget, first))})
        origin.append(None)
        edits.append(Edit(NOTE, f"user message {i} cut to the tokens left of the {_fmt(budget)}-token budget",
                          message=i))
    new += map(request.__getitem__, taken)
    origin += taken
    picked = whole + (cut is not None)
    prompts = len(scan.prompts)
    if prompts > picked:
        edits.append(Edit(DROP, f"{prompts - picked} older user message(s) over the {_fmt(budget)}-token budget "
                                "dropped"))
    summary = {"role": "user", "content": R.summary_text(p["reply"])}
    new.append(summary)
    origin.append(None)
    ctx_at = list(scan.ctx)
    context = list(map(request.__getitem__, ctx_at))
    # mid turn (InitialContextInjection::BeforeLastUserMessage), and as codex-cli 0.171.0 does before a turn too
    s_out = len(new) - 1
    new, at = R.insert_before_last_prompt(new, context, kinds.prompt)
    # where the summary is now (no message before it equals it: none is a summary; a list.index compared them all)
    s_out += len(context) if at <= s_out else 0
    origin = origin[:at] + ctx_at + origin[at:]
    where = "before the last user message"
    if trailing:
        tail = [at_prompt + 1 + k for k, m in enumerate(trailing) if not kinds.initial(m)]
        new, origin = new + [messages[i] for i in tail], origin + tail
    # (the messages neither prompts nor kept: the initial context is never a prompt, and every prompt is one)
    gone = len(request) - prompts - len(ctx_at)
    edits.insert(0, Edit(SUMMARY, f"the history [{0}, {len(request)}) replaced by the summary behind Codex's prefix "
                                  f"({_fmt(len(summary['content']))} chars)", start=0, end=len(request), out=s_out,
                         new_len=len(summary["content"])))
    edits.append(Edit(DROP, f"{gone} item(s) dropped: tool calls, tool outputs and assistant messages"
                      if gone else "nothing else dropped"))
    edits.append(Edit(INSERT, f"the initial context ({len(context)} message(s)) placed {where}"))
    v = {"phase": p["phase"], "user_messages_kept": picked, "user_message_budget": budget,
         "initial_context": len(context), "summary_at": s_out, "messages_after": len(new)}
    return LayerOutput(new, origin, edits, v, f"{len(request)} -> {len(new)} messages: the user's prompts, the "
                                              f"summary and the initial context", triggered=True, state={PASS: None})


LAYERS = {
    "codex_token_check": Layer("codex_token_check", codex_token_check,
                               "Codex's check: the last reported total_tokens plus its estimate of the items added "
                               "since, against min(model_auto_compact_token_limit, 90% of model_context_window)",
                               label="L1 token check", role=roles.BOUNDARIES),
    "codex_compact_request": Layer("codex_compact_request", codex_compact_request,
                                   "the compaction request: the history plus the compaction prompt, no tools; the "
                                   "summary from the summarizer", llm=True, label="L2 compact request",
                                   role=roles.SUMMARY),
    "codex_build_history": Layer("codex_build_history", codex_build_history,
                                 "the new history: user prompts within 20,000 tokens, the prefixed summary, the "
                                 "initial context", label="L3 new history", role=roles.ASSEMBLE),
}
