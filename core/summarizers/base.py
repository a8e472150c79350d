"""The summarizer interface and its cache."""
from __future__ import annotations

import itertools
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterable, Protocol, cast

from ..runtime.record import field, record
from ..runtime.lazy import lazy_module

if TYPE_CHECKING:
    import hashlib
else:                                       # imported on first use (a headless command's start-up, issue 27)
    hashlib = lazy_module("hashlib", globals())


class SummaryError(Exception):
    """A summary could not be made. ``hint`` says what the user can do."""

    def __init__(self, message: str, hint: str = "", kind: str = "error"):
        super().__init__(message)
        self.hint = hint
        self.kind = kind          # "auth", "network", "rate_limit", "overloaded", "prompt_too_long", "bad_request", ...

    def __str__(self) -> str:
        base = super().__str__()
        return f"{base} ({self.hint})" if self.hint else base


class LazyPrompt:
    """A prompt made of pieces produced on demand (``pieces()`` returns a fresh iterable of strings each
    time): a summary request over 100k messages is hashed for the cache without ever being one string,
    and a summarizer that reads only the messages (offline, fixed) never builds it."""
    __slots__ = ("pieces", "key_pieces")

    def __init__(self, pieces: Callable[[], Iterable[str]], key_pieces: Callable[[], Iterable] | None = None):
        self.pieces = pieces
        # what the cache key hashes instead of the text (optional): pieces (str or bytes) that are equal
        # exactly when the texts are, cheaper to make (digests of the messages, kept by identity, so that
        # the same summary asked again after a parameter change costs no JSON of 100k messages)
        self.key_pieces = key_pieces

    def text(self) -> str:
        return "".join(self.pieces())


@record(frozen=True)
class SummaryRequest:
    """What a strategy asks for. ``prompt`` is the full user prompt (it already
    contains the conversation text as the strategy formats it); ``messages`` are
    the messages being summarised, for summarizers that read structure. A strategy
    may pass a ``LazyPrompt``: reading ``prompt`` then builds the text (once)."""
    prompt: str
    messages: tuple = ()
    system: str | None = None
    max_tokens: int = 2000
    purpose: str = "compact_history"
    extra: dict = field(default_factory=dict)

    def __getattribute__(self, name: str):
        v = object.__getattribute__(self, name)
        if name == "prompt" and v.__class__ is LazyPrompt:
            v = v.text()
            object.__setattr__(self, "prompt", v)
        return v

    @classmethod
    def lazy(cls, prompt: LazyPrompt, **kw: Any) -> SummaryRequest:
        """A request whose prompt is built when it is first read (``prompt`` reads as the text)."""
        return cls(prompt=cast(str, prompt), **kw)

    def prompt_pieces(self) -> Iterable[str]:
        """The prompt in pieces, without building it when it is lazy."""
        v = object.__getattribute__(self, "prompt")
        return v.pieces() if v.__class__ is LazyPrompt else (v,)

    def key_pieces(self) -> Iterable:
        """What identifies the prompt for a cache: the lazy prompt's key pieces (after a marker no text
        piece starts with) when it has them, else the prompt in pieces."""
        v = object.__getattribute__(self, "prompt")
        if v.__class__ is LazyPrompt and v.key_pieces is not None:
            return itertools.chain((b"\x00key pieces\x00",), v.key_pieces())
        return self.prompt_pieces()


@record(frozen=True)
class SummaryResult:
    """A summary a summarizer wrote, who wrote it, and (for an LLM) its model and token counts."""
    text: str
    summarizer: str               # who wrote it, shown next to the summary
    model: str | None = None
    cached: bool = False
    input_tokens: int | None = None
    output_tokens: int | None = None

    def to_json(self) -> dict:
        d = {"summarizer": self.summarizer, "cached": self.cached, "chars": len(self.text)}
        if self.model:
            d["model"] = self.model
        return d


class Summarizer(Protocol):
    name: str

    def summarize(self, request: SummaryRequest, cancel: Any = None) -> SummaryResult: ...


class CachedSummarizer:
    """Caches results keyed by the hash of the summarizer and the request."""

    def __init__(self, inner: Summarizer):
        self.inner = inner
        self.name = inner.name
        self._cache: dict[str, SummaryResult] = {}
        self._lock = threading.Lock()
        self.calls = 0

    @staticmethod
    def key(name: str, req: SummaryRequest) -> str:
        h = hashlib.sha256()
        for part in (name, req.purpose, req.system or "", str(req.max_tokens)):
            h.update(part.encode("utf-8", "surrogatepass"))
            h.update(b"\x00")
        for piece in req.key_pieces():            # piece by piece, in slices: never a copy of a huge prompt
            if isinstance(piece, bytes):
                h.update(piece)
                continue
            for i in range(0, len(piece), 1 << 20):
                h.update(piece[i:i + (1 << 20)].encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
        return h.hexdigest()

    def summarize(self, request: SummaryRequest, cancel: Any = None) -> SummaryResult:
        k = self.key(self.name, request)
        with self._lock:
            hit = self._cache.get(k)
        if hit is not None:
            return SummaryResult(hit.text, hit.summarizer, hit.model, True, hit.input_tokens, hit.output_tokens)
        res = self.inner.summarize(request, cancel)
        self.calls += 1
        with self._lock:
            self._cache[k] = res
        return res
