"""A fixed summary text: the LLM's reply is TEXT. For tests and reproducible demos."""
from __future__ import annotations

from .base import SummaryRequest, SummaryResult


class FixedSummarizer:
    def __init__(self, text: str):
        self.text = text
        self.name = "fixed text"

    def summarize(self, request: SummaryRequest, cancel=None) -> SummaryResult:
        return SummaryResult(self.text, self.name)
