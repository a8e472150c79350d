"""Make a summarizer from its spec: ``offline``, ``anthropic[:MODEL]`` or ``fixed:TEXT``. Kept apart from
``base`` (the interface every summarizer imports), so no import runs in a circle."""
from __future__ import annotations

from .base import CachedSummarizer
from .fixed import FixedSummarizer
from .offline import OfflineSummarizer


def make_summarizer(spec: str | None, settings: dict | None = None) -> CachedSummarizer:
    """``offline`` (default), ``anthropic``, or ``fixed:TEXT``."""
    spec = spec or "offline"
    if spec.startswith("fixed:"):
        return CachedSummarizer(FixedSummarizer(spec[len("fixed:"):]))
    if spec == "offline":
        return CachedSummarizer(OfflineSummarizer())
    if spec == "anthropic" or spec.startswith("anthropic:"):
        from .anthropic_api import AnthropicSummarizer
        settings = dict(settings or {})
        if spec.startswith("anthropic:"):
            settings["model"] = spec.split(":", 1)[1]
        return CachedSummarizer(AnthropicSummarizer(**settings))
    raise ValueError(f"unknown summarizer {spec!r}: use offline, anthropic[:MODEL] or fixed:TEXT")
