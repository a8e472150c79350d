"""Summaries from the Anthropic Messages API (the seed's compact_history call)."""
from __future__ import annotations

import os

from .base import SummaryError, SummaryRequest, SummaryResult

DEFAULT_MODEL = "claude-sonnet-4-5"


def is_prompt_too_long(e: BaseException) -> bool:
    """The real API error (HTTP 400 "prompt is too long: N tokens > M maximum", or 413) and
    the older wordings the teaching code matched ("prompt_too_long", "too many tokens")."""
    status = getattr(e, "status_code", None)
    if status not in (None, 400, 413):
        return False
    msg = (getattr(e, "message", None) or str(e)).lower()
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        msg += " " + str(body).lower()
    return "prompt is too long" in msg or "prompt_too_long" in msg or "too many tokens" in msg


def classify_api_error(e: BaseException) -> SummaryError:
    """Turn an SDK exception into a SummaryError with a reason and what to do."""
    try:
        import anthropic
    except ImportError:  # pragma: no cover - anthropic is a dependency
        return SummaryError(str(e))
    msg = getattr(e, "message", None) or str(e)
    if is_prompt_too_long(e):
        return SummaryError(f"prompt too long: {msg}", "lower the input cap or summarise less", "prompt_too_long")
    if isinstance(e, anthropic.AuthenticationError):
        return SummaryError(f"the API rejected the key: {msg}", "check ANTHROPIC_API_KEY or the key in Settings",
                            "auth")
    if isinstance(e, anthropic.PermissionDeniedError):
        return SummaryError(f"permission denied: {msg}", "this key may not use that model", "auth")
    if isinstance(e, anthropic.RateLimitError):
        return SummaryError(f"rate limited: {msg}", "wait a minute and retry, or use the offline summarizer",
                            "rate_limit")
    if isinstance(e, anthropic.APIConnectionError):
        return SummaryError(f"cannot reach the API: {msg}",
                            "check the network and ANTHROPIC_BASE_URL, or use the offline summarizer", "network")
    if isinstance(e, anthropic.APIStatusError):
        status = getattr(e, "status_code", None)
        if status == 529 or "overloaded" in msg.lower():
            return SummaryError(f"the API is overloaded: {msg}", "retry later", "overloaded")
        if status == 400:
            return SummaryError(f"the API refused the request (400): {msg}", "check the model name in Settings",
                                "bad_request")
        return SummaryError(f"API error {status}: {msg}", "retry, or use the offline summarizer", "api")
    return SummaryError(f"{type(e).__name__}: {msg}")


class AnthropicSummarizer:
    def __init__(self, model: str | None = None, api_key: str | None = None, base_url: str | None = None,
                 client=None, timeout: float = 120.0):
        self.model = model or os.environ.get("COMPACTSCOPE_MODEL") or DEFAULT_MODEL
        self.api_key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL")
        self._client = client
        self.timeout = timeout
        self.name = f"Anthropic {self.model}"

    def client(self):
        if self._client is None:
            if not self.api_key:
                raise SummaryError("no API key is set",
                                   "set ANTHROPIC_API_KEY or enter a key in Settings, or use the offline summarizer",
                                   "auth")
            import anthropic
            kw = {"api_key": self.api_key, "timeout": self.timeout}
            if self.base_url:
                kw["base_url"] = self.base_url
            self._client = anthropic.Anthropic(**kw)
        return self._client

    def summarize(self, request: SummaryRequest, cancel=None) -> SummaryResult:
        client = self.client()
        kw = {"model": self.model, "max_tokens": request.max_tokens,
              "messages": [{"role": "user", "content": request.prompt}]}
        if request.system:
            kw["system"] = request.system
        try:
            resp = client.messages.create(**kw)
        except Exception as e:
            raise classify_api_error(e) from e
        text = "".join(getattr(b, "text", "") for b in resp.content if getattr(b, "type", "") == "text").strip()
        if not text:
            raise SummaryError("the model returned an empty summary", "retry, or use the offline summarizer", "empty")
        usage = getattr(resp, "usage", None)
        return SummaryResult(text, self.name, self.model, False,
                             getattr(usage, "input_tokens", None), getattr(usage, "output_tokens", None))
