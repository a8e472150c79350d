"""Compaction layers. Each is a pure function ``(messages, ctx) -> LayerOutput``:
it never mutates its input, shares unchanged messages with it, and reports
what it did. Side effects (persisted files, transcripts) go to ``ctx.workspace``.
"""
from compactscope.core.layers.base import Layer, LayerContext

__all__ = ["Layer", "LayerContext"]
