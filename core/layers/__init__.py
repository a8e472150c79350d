"""Compaction layers. Each is a pure function ``(messages, ctx) -> LayerOutput``:
it never mutates its input, shares unchanged messages with it, and reports
what it did. Side effects (persisted files, transcripts) go to ``ctx.workspace``.

``Layer`` and ``LayerContext`` are in ``layers.base``; this package imports nothing itself, so that a loader that
shares an agent's rules with its layers (``layers.codex_rules``) does not import the pipeline with them.
"""
