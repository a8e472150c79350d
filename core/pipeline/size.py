"""Size and token estimators. Every figure carries the name of what produced it.

* ``repr_size``: the seed's ``estimate_size(messages) = len(str(messages))``, except that an image
  block counts as 4 x its tokens (``core.images``: Anthropic's rule from the pixel size read from the
  base64 header, a fixed 1,600 otherwise), never as its base64 characters,
  computed per message and cached by identity, so a list that shares most of
  its messages with an earlier one costs time only for the new messages:
  ``len(str(list)) == 2 + sum(len(repr(m))) + 2 * (n - 1)`` for n >= 1.
* ``chars/4``: tokens estimated as the repr size divided by 4.
* ``anthropic``: ``client.messages.count_tokens`` with a cache (when a key is set).

Every strategy's estimate is a sum of per-message *figures* (the repr size, Claude Code's
chars with images flat, Hermes's rough chars with images blanked, ...). ``SizeMeter`` computes
each figure once per message object and is shared by every estimator of an engine (and by the
engines of one session), and it remembers the totals of the lists it has measured: a list made
from a measured one by ``concat`` (replay: the last context plus the new messages) or by a
layer's reported change (``derive``: the pipeline, after each layer) costs only the messages
that are new in it; so does the same list grown in place by its owner (``extend``, or appended to).
A list made otherwise (``prev + [m]``) is found sharing its prefix with a list measured before by an
identity scan in C, and costs that scan plus its new messages.
"""
from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterable, Protocol

from ..runtime.record import record
from .facts import FACTS, MISSING, Facts
from ..runtime.lazy import lazy_module
from ..runtime.listmemo import common_prefix

if TYPE_CHECKING:
    import hashlib
else:                                       # imported on first use (a headless command's start-up, issue 27)
    hashlib = lazy_module("hashlib", globals())

SIZE = "size"
"""The name of the repr-size figure (``len(repr(message))``)."""

FigureFn = Callable[[Any, "SizeMeter"], int]
_RAW = "raw"            # len(repr(m)) of a message whose images were re-counted (column of core.facts)
_FNS: dict[str, FigureFn] = {}      # figure name -> its function (the first one given: all compute the same)
_IMAGES = False         # a message with an image was measured (raw sizes then differ from sizes)
_SCAN_MIN = 256         # a list shorter than this is summed, never derived from another (see SizeMeter._derived)
_SCAN_LISTS = 2         # lists measured before that an unknown list is compared with
_SCAN_LISTS_BIG = 8     # ... when a layer reported a big change (``SizeMeter.derive``)


def chars_and_raw(m: Any) -> tuple[int, int]:
    """(size, raw) of one message: ``raw`` = ``len(repr(m))``, ``size`` the same with each image counted
    as its tokens (x 4 chars, Anthropic's rule from its dimensions) instead of its base64 text
    (core.images). ``size`` is THE chars figure of a message: the size estimator sums it, and every view
    that says how many chars a message has says this one; ``raw`` is what the seeds decide on."""
    r = repr(m)
    n = len(r)
    if "'image'" in r:
        from ..model.images import size_adjustment
        return n - size_adjustment(m), n
    return n, n


def message_chars(m: Any) -> int:
    """The chars of one message as the size estimator counts them (see ``chars_and_raw``)."""
    return chars_and_raw(m)[0]


def measure_chars(f: Facts, m: Any) -> int:
    """``message_chars(m)``, kept in the table ``f`` (column SIZE), with its raw size beside it when they differ."""
    g = f.gen
    s = g.index.get(id(m))                  # (Facts.int_value inlined: one call per message of every list sized)
    if s is not None and g.refs[s] is m:
        col = g.ints.get(SIZE)
        if col is not None:
            v = col[s]
            if v != MISSING:
                return v
    n, raw = chars_and_raw(m)
    g, s = f.slot(m)
    f.int_column(g, SIZE)[s] = n
    if raw != n:
        global _IMAGES
        _IMAGES = True
        f.int_column(g, _RAW)[s] = raw
    return n


def measure_new(f: Facts, msgs: list) -> int:
    """The sum of ``message_chars`` over ``msgs`` (messages the table ``f`` does not know yet), each kept in its
    column SIZE as ``measure_chars`` keeps it, added to the table in one go (``Facts.put_ints``)."""
    sizes: list[int] = []
    add = sizes.append
    raws: list = []
    for m in msgs:
        r = repr(m)
        if "'image'" in r:
            n, raw = chars_and_raw(m)
            if raw != n:
                raws.append((m, raw))
            add(n)
        else:
            add(len(r))
    f.put_ints(SIZE, msgs, sizes)
    if raws:
        global _IMAGES
        _IMAGES = True
        f.put_ints(_RAW, [m for m, _ in raws], [r for _, r in raws])
    return sum(sizes)


class MessageChars:
    """THE chars of a message (``message_chars``), the same in every view and summed by the size estimator:
    the meters' SIZE column of the shared table."""

    def __init__(self, facts: Facts = FACTS):
        self.facts = facts

    def get(self, m: Any) -> int:
        return measure_chars(self.facts, m)

    __call__ = get

    def peek(self, m: Any) -> int | None:
        return self.facts.int_value(m, SIZE)


class SizeMeter:
    """``len(str(messages))`` with a per-message cache keyed by identity, plus the other
    per-message figures of the token estimators and the totals of recently measured lists.

    Messages are immutable values in core, so the identity of a dict is a
    sound cache key while the dict is alive; the cache holds a reference to
    each message so an id is never reused for another object while cached.
    A figure is a pure function of the message, identified by its name: every
    caller that asks for the figure ``name`` must compute the same value.
    """
    name = "len(str(messages))"

    def __init__(self, max_lists: int = 32, facts: Facts | None = None):
        # the per-message figures: columns of one identity table (``core.facts``), shared by default with
        # every other meter and the views (a figure is a pure function of the message and its name)
        self.facts = FACTS if facts is None else facts
        # id(list) -> [list, len, last message, {figure name: total}]; the list is held so its id is not reused
        self._lists: dict[int, list] = {}
        self._lock = threading.Lock()
        self.max_lists = max_lists

    # ------------------------------------------------------------ per message
    def message_size(self, m: Any) -> int:
        return measure_chars(self.facts, m)

    def raw_size(self, m: Any) -> int:
        """``len(repr(m))`` itself, base64 of images included: what the seeds' ``len(str(messages))``
        decides on (s08's context_limit, hermes' rough estimate). Equal to ``message_size`` for a
        message without images."""
        n = self.message_size(m)
        if not _IMAGES:
            return n
        g = self.facts.gen
        s = self.facts.find(m, g)
        col = g.ints.get(_RAW)
        if s is None or col is None:           # (forgotten meanwhile: computed again)
            return chars_and_raw(m)[1]
        return n if col[s] == MISSING else col[s]

    def raw_total(self, messages: list) -> int:
        """``len(str(messages))`` exactly (images as their base64 text)."""
        n = len(messages)
        if n == 0:
            return 2
        total = self.size(messages)        # (fills the per-message figures: any image is known after it)
        if not _IMAGES:
            return total
        return 2 + sum(self.raw_size(m) for m in messages) + 2 * (n - 1)

    def figure(self, m: Any, name: str, fn: FigureFn) -> int:
        """The per-message figure ``name`` of ``m``: ``fn(m, meter)``, computed once per message object."""
        if name == SIZE:
            return self.message_size(m)
        f = self.facts
        v = f.int_value(m, name)
        if v is not None:
            return v
        n = fn(m, self)
        g, s = f.slot(m)
        f.int_column(g, name)[s] = n
        return n

    def figure_sum(self, messages: Iterable, name: str = SIZE, fn: FigureFn | None = None) -> int:
        """The sum of the figure ``name`` over ``messages`` (each message's figure cached, the sum not)."""
        if messages.__class__ is list:
            f = self.facts
            if len(messages) > f.peak:       # (``f.expect(len(messages))``, inlined: it runs several times a call)
                f.peak = len(messages)
        elif isinstance(messages, list):
            self.facts.expect(len(messages))
        if name == SIZE:
            return self._size_sum(messages)
        if fn is None:
            fn = _FNS[name]
        elif name not in _FNS:
            _FNS[name] = fn
        t, new = self._known_sum(messages, name)
        if not new:
            return t
        # the figures not known yet, computed and kept in one go (``Facts.put_ints``: one lock, no call per
        # message into the table; a 50,000-message chain spent a third of its first count in the table)
        values = [fn(m, self) for m in new]
        self.facts.put_ints(name, new, values)
        return t + sum(values)

    def figures(self, messages: list, name: str, fn: FigureFn) -> list[int]:
        """The figure ``name`` of each of ``messages``, in order, the unknown ones computed and kept together
        (``figure_sum``), then each read from the table."""
        self.figure_sum(messages, name, fn)
        figure = self.figure
        return [figure(m, name, fn) for m in messages]

    def _size_sum(self, messages: Iterable) -> int:
        """``figure_sum`` of SIZE: the known figures read from the table, the others measured together."""
        t, new = self._known_sum(messages, SIZE)
        return t + measure_new(self.facts, new) if new else t

    def _known_sum(self, messages: Iterable, name: str) -> tuple[int, list]:
        """(the sum of the figures ``name`` the table knows over ``messages``, the messages whose figure it does
        not know yet, in order)."""
        g = self.facts.gen
        col = g.ints.get(name)
        if col is None:
            return 0, messages if isinstance(messages, list) else list(messages)
        idx, refs, t = g.index.get, g.refs, 0
        new: list = []
        for m in messages:      # the table lookup inlined: this loop runs over whole contexts
            s = idx(id(m))
            if s is not None and refs[s] is m:
                v = col[s]
                if v != MISSING:
                    t += v
                    continue
            new.append(m)
        return t, new

    # ------------------------------------------------------------ per list
    def _entry(self, messages: list) -> list | None:
        e = self._lists.get(id(messages))
        if e is None or e[0] is not messages or e[1] != len(messages) or (e[1] and messages[-1] is not e[2]):
            return None
        return e

    def _known(self, messages: list) -> dict | None:
        """The totals known of ``messages``: remembered for this list, or derived from a list measured before
        (``_derived``) and remembered now."""
        e = self._entry(messages)
        if e is not None:
            return e[3]
        if not isinstance(messages, list) or len(messages) < _SCAN_MIN:
            return None
        e = self._lists.get(id(messages))
        totals = self._derived(messages)
        if totals is not None:        # (grown in place: still made from the same base)
            self._remember(messages, totals, base=e[4] if e is not None and e[0] is messages else None)
        return totals

    def _derived(self, messages: list, scan: int = _SCAN_LISTS) -> dict | None:
        """The totals of a list not measured as it is, at the cost of what differs from one that was: the same
        list grown in place since (its old last message still in its place: lists are values in core, only their
        owner extends them), or another list that shares a long prefix with one measured (``prev + [m]``, found
        by an identity scan in C, 20-30x cheaper per message than summing; ``scan``: how many lists that start with
        the same message are compared). None when neither holds."""
        n = len(messages)
        e = self._lists.get(id(messages))
        if e is not None and e[0] is messages and e[1] < n and (e[1] == 0 or messages[e[1] - 1] is e[2]):
            tail = messages[e[1]:]
            return {k: v + self.figure_sum(tail, k, None) for k, v in e[3].items()}
        first = messages[0]
        best: tuple[int, list] | None = None
        tried = 0
        with self._lock:
            entries = list(self._lists.values())
        for e in reversed(entries):              # the most recent first
            old, m = e[0], e[1]
            if not m or old is messages or len(old) < m or old[0] is not first or old[m - 1] is not e[2] \
                    or not e[3]:
                continue
            k = min(common_prefix(old, messages), m)
            if best is None or k > best[0]:
                best = (k, e)
            tried += 1
            if k == m or tried >= scan or (scan > _SCAN_LISTS and (m - k) + (n - k) <= n // 64):
                break             # (a list differing in a few last messages: another could spare only those)
        if best is None:
            return None
        k, e = best
        if (e[1] - k) + (n - k) > n // 2:      # too little shared: summing is as cheap
            return None
        gone, tail = e[0][k:e[1]], messages[k:]
        return {name: v - self.figure_sum(gone, name, None) + self.figure_sum(tail, name, None)
                for name, v in e[3].items()}

    def _remember(self, messages: list, totals: dict, base: list | None = None) -> None:
        if not isinstance(messages, list):
            return
        with self._lock:
            e = self._lists.pop(id(messages), None)
            if e is not None and e[0] is messages and e[1] == len(messages) \
                    and (not e[1] or messages[-1] is e[2]):
                totals = {**e[3], **totals}
                base = base if base is not None else e[4]
            while len(self._lists) >= self.max_lists:
                self._lists.pop(next(iter(self._lists)))
            self._lists[id(messages)] = [messages, len(messages), messages[-1] if messages else None, totals, base]

    def knows(self, messages: list) -> bool:
        """Whether the totals of ``messages`` as it is now are remembered (``size`` costs a look-up)."""
        return self._entry(messages) is not None

    def base(self, messages: list) -> list | None:
        """The list ``messages`` was made from by ``concat`` (its first messages are that list's), or None."""
        e = self._entry(messages)
        return e[4] if e is not None else None

    def total(self, messages: list, name: str = SIZE, fn: FigureFn | None = None) -> int:
        """The sum of the figure ``name`` over ``messages`` (remembered for this list object)."""
        known = self._known(messages)
        if known is not None and name in known:
            return known[name]
        t = self.figure_sum(messages, name, fn)
        self._remember(messages, {name: t})
        return t

    def size(self, messages: list) -> int:
        n = len(messages)
        if n == 0:
            return 2
        return 2 + self.total(messages) + 2 * (n - 1)

    def sizes(self, messages: list) -> list[int]:
        return [self.message_size(m) for m in messages]

    def concat(self, a: list, b: list) -> list:
        """``a + b``, its totals known from ``a``'s (when known) at the cost of ``b``'s messages only."""
        out = a + b
        known = self._known(a) or {}
        self._remember(out, {k: v + self.figure_sum(b, k, None) for k, v in known.items()}, base=a)
        return out

    def extend(self, a: list, b: list) -> list:
        """``a`` extended by ``b`` in place, its totals kept at the cost of ``b``'s messages only; for a caller
        that owns ``a`` (nothing else holds it: a replay's running context). Returns ``a``. Building ``a + b``
        at every call of a long session copied (and freed) the whole context each time: quadratic."""
        e = self._entry(a)
        known, base = (e[3], e[4]) if e is not None else (self._known(a) or {}, None)
        totals = {k: v + self.figure_sum(b, k, None) for k, v in known.items()}
        a.extend(b)
        self._remember(a, totals, base=base)
        return a

    def derive(self, before: list, after: list, removed: Iterable, added: Iterable) -> None:
        """``after`` is ``before`` without the messages ``removed`` and with the messages ``added``
        (a layer's reported change; a replaced message is in both): its totals follow from
        ``before``'s at the cost of the changed messages only."""
        known = self._known(before)
        if not known or after is before or self._entry(after) is not None:
            return                # (``after`` measured as it is already: a layer that gave back an earlier list)
        removed, added = list(removed), list(added)
        if len(removed) + len(added) > max(_SCAN_MIN, len(after) // 8) and isinstance(after, list):
            # a big change (hermes's prune replaced 48k of 100k messages): a list measured before may share
            # nearly all of ``after`` (the same layer's output in the run before a parameter change)
            derived = self._derived(after, scan=_SCAN_LISTS_BIG)
            if derived is not None and all(k in derived for k in known):
                self._remember(after, derived)
                return
        f = self.facts
        if len(added) > f.peak:          # (as ``figure_sum`` notes it; the removed are fewer than ``before``)
            f.peak = len(added)
        totals = {}
        for k, v in known.items():
            if k == SIZE:         # (``figure_sum`` of SIZE without its checks: the lists are the layer's own)
                totals[k] = v - (self._size_sum(removed) if removed else 0) + (self._size_sum(added) if added else 0)
            else:
                totals[k] = v - self.figure_sum(removed, k, None) + self.figure_sum(added, k, None)
        self._remember(after, totals)

    def clear_lists(self) -> None:
        """Forget the totals of the lists measured (the per-message figures stay)."""
        with self._lock:
            self._lists.clear()

    def clear(self) -> None:
        """Forget the lists measured and every per-message figure (of the table this meter uses)."""
        with self._lock:
            self._lists.clear()
        self.facts.clear()


def estimate_size(messages: list) -> int:
    """The seed's estimate, uncached: ``len(str(messages))``."""
    return len(str(messages))


class TokenEstimator(Protocol):
    name: str

    def tokens(self, messages: list, meter: SizeMeter, *, system: Any = None, tools: Any = None) -> int: ...


class AdditiveTokens(Protocol):
    """An estimator that is a function of a sum of per-message figures (every built-in one but
    count_tokens): ``tokens(ms) == tokens_from(sum(figure_fn(m) for m in ms), len(ms), ms[0])``.
    Replay and the pipeline then follow a growing or changed list at the cost of its new messages."""
    name: str
    figure: str                                   # the figure's name in the SizeMeter

    def figure_fn(self, m: Any, meter: SizeMeter) -> int: ...

    def tokens_from(self, total: int, n: int, lead: Any = None, *, system: Any = None, tools: Any = None) -> int: ...


def is_additive(estimator: Any) -> bool:
    return getattr(estimator, "figure", None) is not None and callable(getattr(estimator, "tokens_from", None))


def _size_figure(m: Any, meter: SizeMeter) -> int:
    return meter.message_size(m)


class CharsPerToken:
    """tokens = characters / 4 of the seed's size estimate."""
    figure = SIZE
    figure_fn = staticmethod(_size_figure)

    def __init__(self, chars_per_token: int = 4):
        self.cpt = chars_per_token
        self.name = f"chars/{chars_per_token}"

    def tokens_from(self, total: int, n: int, lead: Any = None, *, system=None, tools=None) -> int:
        return (2 + total + 2 * (n - 1) if n else 2) // self.cpt

    def tokens(self, messages, meter, *, system=None, tools=None) -> int:
        return meter.size(messages) // self.cpt


class AnthropicTokenCounter:
    """Anthropic's ``messages.count_tokens``, cached by the request's hash.

    ``client`` is an ``anthropic.Anthropic`` (or anything with the same
    ``messages.count_tokens``); ``fallback`` is used when the call fails, and
    the figure's name then says so.
    """

    def __init__(self, client: Any, model: str, fallback: CharsPerToken | None = None):
        self.client = client
        self.model = model
        self.fallback = fallback or CharsPerToken()
        self.name = f"anthropic count_tokens ({model})"
        self._cache: dict[str, int] = {}
        self._by_identity: dict[tuple, tuple[tuple, int]] = {}
        self.last_error: str | None = None

    def tokens(self, messages, meter, *, system=None, tools=None) -> int:
        # Fast path: the same message objects (messages are immutable in core) were counted before.
        ident = (tuple(map(id, messages)), id(system), id(tools))
        hit = self._by_identity.get(ident)
        if hit is not None:
            return hit[1]
        n, ok = self._count(messages, meter, system, tools)
        if ok:
            if len(self._by_identity) > 10_000:
                self._by_identity.clear()
            # keep the objects themselves, so their ids cannot be reused while the entry exists
            self._by_identity[ident] = ((tuple(messages), system, tools), n)
        return n

    def _count(self, messages, meter, system, tools) -> tuple[int, bool]:
        body = {"model": self.model, "messages": messages}
        if system:
            body["system"] = system
        if tools:
            body["tools"] = tools
        key = hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()
        if key in self._cache:
            return self._cache[key], True
        try:
            n = int(self.client.messages.count_tokens(**body).input_tokens)
        except Exception as e:  # network, auth, invalid request: fall back, say why
            self.last_error = f"{type(e).__name__}: {e}"
            return self.fallback.tokens(messages, meter), False
        self._cache[key] = n
        return n, True


def make_anthropic_counter(model: str | None = None, api_key: str | None = None,
                           base_url: str | None = None) -> AnthropicTokenCounter:
    """An Anthropic count_tokens estimator from settings or the environment
    (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, COMPACTSCOPE_MODEL), resolved and connected like the summarizer's."""
    from ..summarizers.anthropic_api import AnthropicSummarizer
    api = AnthropicSummarizer(model, api_key, base_url)
    if not api.api_key:
        raise ValueError("counting tokens with Anthropic needs an API key: set ANTHROPIC_API_KEY "
                         "(or use the chars/4 estimate)")
    return AnthropicTokenCounter(api.client(), api.model)


@record(frozen=True)
class Measure:
    """A message list's size (in the meter's unit) and its token estimate."""
    size: int
    tokens: int


def measure(messages: list, meter: SizeMeter, estimator: TokenEstimator) -> Measure:
    return Measure(meter.size(messages), estimator.tokens(messages, meter))


TokenFn = Callable[[list], int]
