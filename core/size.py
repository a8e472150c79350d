"""Size and token estimators. Every figure carries the name of what produced it.

* ``repr_size``: the seed's ``estimate_size(messages) = len(str(messages))``,
  computed per message and cached by identity, so a list that shares most of
  its messages with an earlier one costs time only for the new messages:
  ``len(str(list)) == 2 + sum(len(repr(m))) + 2 * (n - 1)`` for n >= 1.
* ``chars/4``: tokens estimated as the repr size divided by 4.
* ``anthropic``: ``client.messages.count_tokens`` with a cache (when a key is set).
"""
from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from typing import Any, Callable, Protocol


class SizeMeter:
    """``len(str(messages))`` with a per-message cache keyed by identity.

    Messages are immutable values in core, so the identity of a dict is a
    sound cache key while the dict is alive; the cache holds a reference to
    each message so an id is never reused for another object while cached.
    """
    name = "len(str(messages))"

    def __init__(self, max_entries: int = 1_000_000):
        self._cache: dict[int, tuple[Any, int]] = {}
        self._lock = threading.Lock()
        self.max_entries = max_entries

    def message_size(self, m: Any) -> int:
        key = id(m)
        hit = self._cache.get(key)
        if hit is not None and hit[0] is m:
            return hit[1]
        n = len(repr(m))
        with self._lock:
            if len(self._cache) >= self.max_entries:
                self._cache.clear()
            self._cache[key] = (m, n)
        return n

    def size(self, messages: list) -> int:
        n = len(messages)
        if n == 0:
            return 2
        ms = self.message_size
        return 2 + sum(ms(m) for m in messages) + 2 * (n - 1)

    def sizes(self, messages: list) -> list[int]:
        return [self.message_size(m) for m in messages]

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()


def estimate_size(messages: list) -> int:
    """The seed's estimate, uncached: ``len(str(messages))``."""
    return len(str(messages))


class TokenEstimator(Protocol):
    name: str

    def tokens(self, messages: list, meter: SizeMeter, *, system: Any = None, tools: Any = None) -> int: ...


class CharsPerToken:
    """tokens = characters / 4 of the seed's size estimate."""

    def __init__(self, chars_per_token: int = 4):
        self.cpt = chars_per_token
        self.name = f"chars/{chars_per_token}"

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
        self._by_identity: dict[tuple, tuple[list, int]] = {}
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
    from .summarizers.anthropic_api import AnthropicSummarizer
    api = AnthropicSummarizer(model, api_key, base_url)
    if not api.api_key:
        raise ValueError("counting tokens with Anthropic needs an API key: set ANTHROPIC_API_KEY "
                         "(or use the chars/4 estimate)")
    return AnthropicTokenCounter(api.client(), api.model)


@dataclass(frozen=True)
class Measure:
    size: int
    tokens: int


def measure(messages: list, meter: SizeMeter, estimator: TokenEstimator) -> Measure:
    return Measure(meter.size(messages), estimator.tokens(messages, meter))


TokenFn = Callable[[list], int]
