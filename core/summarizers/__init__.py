"""Summarizers: who writes a compaction summary.

* ``AnthropicSummarizer``: a real LLM call (key, model and base URL from settings or the environment).
* ``OfflineSummarizer``: deterministic, no key needed: useful in a classroom.
* ``FixedSummarizer``: returns a fixed text, for tests and reproducible demos.

All are wrapped by ``CachedSummarizer`` so stepping back and forth never pays twice.
"""
from .base import CachedSummarizer, LazyPrompt, Summarizer, SummaryError, SummaryRequest, SummaryResult
from .factory import make_summarizer
from .fixed import FixedSummarizer
from .offline import OfflineSummarizer

__all__ = ["LazyPrompt", "Summarizer", "SummaryRequest", "SummaryResult", "SummaryError", "CachedSummarizer",
           "FixedSummarizer", "OfflineSummarizer", "make_summarizer"]
