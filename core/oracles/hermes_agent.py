"""Cross-check the hermes strategy against the real hermes-agent 0.19.0 (when it is installed).

The real ``agent.context_compressor.ContextCompressor`` runs offline once its summary LLM
call (``call_llm`` in that module) is replaced by a fixed reply. Everything after the reply
(reasoning stripping, task-snapshot grounding, prefix, END marker, role choice, sanitation)
is theirs, so the comparison covers the whole ``compress()`` path.

Their secret redaction (``agent/redact.py``) is switched off for the comparison with their
documented opt-out (``HERMES_REDACT_SECRETS=false``, i.e. ``agent.redact._REDACT_ENABLED``);
Compactscope does not reproduce it (see docs/hermes.md, "Deliberate differences").

Install: ``pip install --no-deps hermes-agent==0.19.0 && pip install httpx==0.28.1``
(``agent.context_compressor`` needs only httpx beyond the standard library at import time), or
the full ``pip install -e '.[hermes]'``.
"""
from __future__ import annotations

import contextlib
import copy
from types import SimpleNamespace
from typing import Any, Callable

from ..layers.hermes import HERMES_VERSION as VERSION
from ..strategies import base as verdicts
from ..pipeline.trace import Trace

MODEL = "compactscope-oracle"
MATCH = f"matches hermes-agent {VERSION}"
ABSENT = "hermes-agent not installed"
NOT_A_RUN = "not a hermes run"
NO_PRUNE = "the run has no hermes_prune step"
NOTHING = "nothing to compare: the strategy did not compact in this run"
NOT_COMPARED = (ABSENT, NOT_A_RUN, NO_PRUNE, NOTHING)       # check_trace's answers when nothing was compared

# our parameter -> their constructor argument
_CTOR = {"threshold_pct": "threshold_percent", "protect_first_n": "protect_first_n",
         "protect_last_n": "protect_last_n", "summary_target_ratio": "summary_target_ratio",
         "abort_on_summary_failure": "abort_on_summary_failure"}


def module():
    """Their ``agent.context_compressor`` module, or None when hermes-agent is not importable."""
    try:
        import agent.context_compressor as cc  # noqa: PLC0415
    except Exception:
        return None
    return cc


def installed_version() -> str | None:
    try:
        from importlib.metadata import version
        return version("hermes-agent")
    except Exception:
        return None


def _reply(text: str):
    return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=text))])


@contextlib.contextmanager
def patched(cc, llm: Callable[..., Any]):
    """Their LLM call replaced by ``llm`` and their redaction switched off, restored afterwards."""
    import agent.redact as redact
    old_call, old_red = cc.call_llm, redact._REDACT_ENABLED
    cc.call_llm = llm
    redact._REDACT_ENABLED = False
    try:
        yield
    finally:
        cc.call_llm = old_call
        redact._REDACT_ENABLED = old_red


class TheirCompressor:
    """One real ``ContextCompressor`` (one session): ``compress`` may be called repeatedly
    (iterative summaries, decaying head protection)."""

    def __init__(self, params: dict | None = None, summary_text: str = "Summary.", fail: str | None = None):
        cc = module()
        if cc is None:
            raise ImportError(ABSENT)
        self.cc = cc
        params = dict(params or {})
        kw = {_CTOR[k]: v for k, v in params.items() if k in _CTOR}
        mt = int(params.get("max_tokens", 0) or 0)
        self.summary_text = summary_text
        self.fail = fail
        self.calls = 0
        with patched(cc, self._llm):
            self.obj = cc.ContextCompressor(model=MODEL, config_context_length=int(params.get("context_length", 200_000)),
                                            quiet_mode=True, max_tokens=mt or None, **kw)

    def _llm(self, **kw):
        self.calls += 1
        if self.fail is not None:
            raise RuntimeError(self.fail)
        return _reply(self.summary_text)

    def compress(self, messages: list, focus_topic: str | None = None) -> list:
        with patched(self.cc, self._llm):
            return self.obj.compress(copy.deepcopy(messages), focus_topic=focus_topic or None, force=True)


class OurCompressor:
    """The hermes strategy with ``trigger=always`` and a fixed summarizer, state kept across calls."""

    def __init__(self, params: dict | None = None, summary_text: str = "Summary.", fail: str | None = None):
        from .. import strategies
        from ..pipeline.engine import Engine
        from ..summarizers import SummaryError, SummaryResult

        outer = self
        self.summary_text, self.fail = summary_text, fail   # both may be changed between calls

        class _Reply:
            name = "fixed reply"

            def summarize(self, request, cancel=None):
                if outer.fail is not None:
                    raise SummaryError(outer.fail)
                return SummaryResult(outer.summary_text, self.name)

        p = {k: v for k, v in dict(params or {}).items()}
        p["trigger"] = "always"
        self.engine = Engine(strategies.get("hermes"), p, summarizer=_Reply())
        self.trace: Trace | None = None

    def compress(self, messages: list) -> list:
        trace = self.trace = self.engine.run(messages, dialect="openai")
        return trace.output


def first_difference(ours: list, theirs: list) -> str | None:
    """None when equal, else a sentence naming the first message that differs."""
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if a != b:
            if not isinstance(a, dict) or not isinstance(b, dict):
                return f"message {i}: {a!r:.200} != {b!r:.200}"
            keys = sorted(set(a) | set(b), key=str)
            for k in keys:
                if a.get(k, "<absent>") != b.get(k, "<absent>"):
                    va, vb = repr(a.get(k, "<absent>")), repr(b.get(k, "<absent>"))
                    j = next((n for n, (x, y) in enumerate(zip(va, vb)) if x != y), min(len(va), len(vb)))
                    lo = max(0, j - 60)
                    return (f"message {i} ({a.get('role')}), key {k!r} differs at char {j}: ours "
                            f"...{va[lo:j + 80]}... theirs ...{vb[lo:j + 80]}...")
            return f"message {i} differs"
    if len(ours) != len(theirs):
        return f"ours has {len(ours)} messages, hermes-agent {len(theirs)}"
    return None


def hermes_oracle_check(messages: list, params: dict | None = None, summary_text: str = "Summary.") -> str:
    """Run one compaction through the real hermes-agent and through the hermes strategy, with
    ``summary_text`` as the summary LLM's reply. Returns ``MATCH``, ``ABSENT``, or a
    description of the first message that differs."""
    if module() is None:
        return ABSENT
    params = dict(params or {})
    try:
        theirs = TheirCompressor(params, summary_text).compress(messages, params.get("focus_topic"))
    except Exception as e:  # their code failing on this input is a finding, not a crash of ours
        return f"hermes-agent {VERSION} raised {type(e).__name__}: {e}"
    ours = OurCompressor(params, summary_text).compress(messages)
    diff = first_difference(ours, theirs)
    if diff is None:
        version = installed_version()
        return MATCH if version in (None, VERSION) else f"{MATCH} (installed: {version})"
    return diff


def check_trace(trace) -> str:
    """For the window: compare a finished hermes-strategy ``Trace`` with what hermes-agent 0.19.0
    makes of the same input (the messages after conversion), the same parameters, the same
    pipeline state (previous summary, compaction count) and the summary text the run got.
    Returns ``MATCH``, ``ABSENT``, a sentence why nothing was compared, or the first difference."""
    if module() is None:
        return ABSENT
    if getattr(trace, "strategy", None) != "hermes":
        return NOT_A_RUN
    prune = trace.step("hermes_prune")
    if prune is None:
        return NO_PRUNE
    summ = trace.step("hermes_summarize")
    if not prune.triggered or summ is None or summ.summary is None:
        return NOTHING
    fail = None
    text = summ.summary.get("text") or ""
    if summ.vars.get("fallback"):
        fail = summ.summary.get("reason") or "summary failed"
    params = {k: v for k, v in trace.params.items() if k in _CTOR or k in ("context_length", "max_tokens")}
    theirs_c = TheirCompressor(params, text, fail)
    before = trace.state_before or {}
    theirs_c.obj.compression_count = int(before.get("hermes_compression_count", 0) or 0)
    theirs_c.obj._previous_summary = before.get("hermes_previous_summary") or None
    try:
        theirs = theirs_c.compress(prune.input, trace.params.get("focus_topic"))
    except Exception as e:
        return f"hermes-agent {VERSION} raised {type(e).__name__}: {e}"
    return first_difference(trace.output, theirs) or MATCH


def verdict(trace) -> "verdicts.Verdict":
    """``check_trace`` as the hermes strategy's typed cross-check verdict (``Strategy.cross_check``)."""
    return verdicts.Verdict.from_text(check_trace(trace), MATCH, NOT_COMPARED)
