"""The strategy that runs, its parameters (the user's, pinned, and those inferred from the file), the layer order and the summarizer."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import strategies
from .loading import INFER_LOCK
from ..strategies.base import Strategy
from ..strategies.infer import Inferred
from ..summarizers import make_summarizer

if TYPE_CHECKING:
    from .model import Session


class SetupPart:
    """The strategy that runs, its parameters (the user's, pinned, and those inferred from the file), the layer order and the summarizer."""

    def __init__(self, s: Session, strategy: str | Strategy | None, params: dict | None, summarizer: str):
        self.s = s
        names = strategies.available() or ["s08"]
        st = strategies.get(strategy) if isinstance(strategy, str) else strategy
        self.summarizers: dict = {}                 # spec -> CachedSummarizer (stepping never pays twice)
        self.strategy: Strategy = st or strategies.get(names[0])
        self.params: dict = self.strategy.resolve(params or {})
        self.pinned: dict = {}                      # parameters the user set: they win over inferred ones
        # which strategy: a file opens with its own pipeline (strategies.choose_strategy, the rule of every
        # command) until the user names one (gui --strategy: pinned; the strategy box, a lesson: chosen); the
        # user's strategy then stays for the files opened after, and the status line says it was chosen (with
        # a warning when it is not the file's own pipeline)
        self.strategy_pinned = False
        self.strategy_chosen = False
        self.keep_strategy = False                 # restore(): the next file opened keeps the strategy
        self.inferred: Inferred | None = None       # strategies.Inferred of the shown conversation
        self.infer = True                           # read defaults from the session (gui --no-infer: False)
        self._inferred_set: dict = {}               # the parameters the last inference set, as it set them
        self._inferences: dict = {}                 # _infer's cache: key -> (strategy, conversation, Inferred)
        self.summarizer = summarizer or "offline"
        self.order: list[str] | None = None

    @property
    def variant(self) -> str | None:
        """The name of the strategy variant the parameters select (None: the main way)."""
        return next((v.name for v in self.strategy.variants if v.active(self.params)), None)

    def use_own_strategy(self, conv) -> None:
        """A file opened: its own pipeline (``strategies.choose_strategy``), unless the user named a strategy.
        The user's pinned parameters the strategy has stay; the rest start from its defaults."""
        keep, self.keep_strategy = self.keep_strategy, False
        if self.strategy_pinned or self.strategy_chosen or keep:
            return
        name = self._own_strategy_name(conv)
        same = name == self.strategy.name
        try:
            st = self.strategy if same else strategies.get(name)
            params = st.resolve({**(self.params if same else {}),
                                 **{k: v for k, v in self.pinned.items() if k in st.defaults()}})
        except (KeyError, ValueError, ImportError):
            return
        if same and params == self.params:
            return
        if not same:
            self.strategy, self.order = st, None
            self.s.events.strategy(st)
        self.params = params
        self.s.events.params(dict(params))

    def _own_strategy_name(self, conv) -> str:
        return strategies.choose_strategy(conv).name

    def opening_strategy(self, conv):
        """The strategy ``conv`` will run with when it is shown (``_use_own_strategy``'s rule; nothing changes)."""
        if self.strategy_pinned or self.strategy_chosen or self.keep_strategy:
            return self.strategy
        try:
            return strategies.get(self._own_strategy_name(conv))
        except (KeyError, ImportError):
            return None

    def _infer_key(self, strategy, conv) -> tuple:
        return strategy.name, id(getattr(strategy, "infer", None)), id(conv), len(conv.messages)

    def _inferred_for(self, strategy, conv):
        """The inference ``_infer`` keeps for (strategy, conv), or None."""
        hit = self._inferences.get(self._infer_key(strategy, conv))
        return hit[2] if hit is not None and hit[0] is strategy and hit[1] is conv else None

    def infer_for(self, strategy, conv):
        """``strategies.infer_params(strategy, conv)``, kept for the last few (strategy, conversation) pairs:
        a Claude Code inference reads every model call's usage (~0.25 s at 100k messages), made in the
        load's worker (``_prepare``) and asked again at each strategy change (a switch back finds it)."""
        from ..strategies import infer_params
        hit = self._inferred_for(strategy, conv)
        if hit is not None:
            return hit
        key = self._infer_key(strategy, conv)
        inf = infer_params(strategy, conv)
        with INFER_LOCK:
            self._inferences[key] = (strategy, conv, inf)
            for old in list(self._inferences)[:-4]:
                del self._inferences[old]
        return inf

    def pin_strategy(self, name=None) -> bool:
        """The strategy the user named (gui --strategy; None: the current one): every file opens with it."""
        ok = True if name is None else self.set_strategy(name)
        self.strategy_pinned = self.strategy_pinned or ok
        return ok

    @property
    def strategy_choice(self):
        """Which strategy runs and why (``strategies.StrategyChoice``): the file's own pipeline, or chosen."""
        chosen = self.strategy_chosen or self.strategy_pinned
        return strategies.choose_strategy(self.s.source.conversation, self.strategy.name if chosen else None,
                                          "with --strategy" if self.strategy_pinned else "in the window")

    def set_strategy(self, name: str | Strategy, params: dict | None = None) -> bool:
        try:
            st = strategies.get(name) if isinstance(name, str) else name
            resolved = st.resolve(params or {})
        except (KeyError, ValueError, ImportError) as e:
            self.s.set_error(f"Strategy {name}: {e.args[0] if e.args else e}", "Pick another strategy.")
            return False
        self.strategy, self.params, self.order = st, resolved, None
        self.strategy_chosen = True
        self.apply_inferred(notify=False)
        resolved = self.params
        self.s.events.strategy(st)
        self.s.events.params(dict(resolved))
        self.s.run()
        return True

    def apply_inferred(self, notify: bool = True) -> None:
        """The strategy's session-inferred defaults (``strategies.infer_params``: e.g. Claude Code's version
        picks its threshold rule) under the parameters pinned by the user (``pin_params``, gui --set)."""
        from ..strategies import Inferred
        try:
            inf = self.infer_for(self.strategy, self.s.source.conversation) if self.s.source.conversation is not None and self.infer \
                else Inferred()
        except Exception:          # a plugin strategy's inference must not stop a file from opening
            inf = Inferred()
        self.inferred = inf
        # what the last conversation's inference set goes back to the strategy's default first (another file, or
        # inference turned off, must not keep b8's cap_reserve=False)
        before = {k: v for k, v in self._inferred_set.items() if self.params.get(k) == v}
        self._inferred_set = {}
        if not inf.params and not before:
            return
        try:
            known = self.strategy.defaults()
            base = {**self.params, **{k: known[k] for k in before if k in known}}
            params = self.strategy.resolve({**base, **inf.params,
                                            **{k: v for k, v in self.pinned.items() if k in known}})
        except (KeyError, ValueError):
            return
        self._inferred_set = {k: params[k] for k in inf.params if k in params and k not in self.pinned}
        if params != self.params:
            self.params = params
            if notify:
                self.s.events.params(dict(params))

    def params_to_remember(self, params: dict | None = None) -> dict:
        """The parameters worth keeping for the next start: those off their default that the user chose, not
        those the shown session's inference set (b8's cap_reserve=False is b8's, not the user's)."""
        params = self.params if params is None else params
        inferred = self._inferred_set
        out = {}
        for k, v in params.items():
            try:
                default = self.strategy.param(k).default
            except KeyError:
                continue
            if v != default and not (k in inferred and inferred[k] == v and k not in self.pinned):
                out[k] = v
        return out

    def pin_params(self, values: dict, run: bool = True) -> bool:
        """Parameters the user set explicitly (gui --set): they win over session-inferred defaults."""
        self.pinned.update(values)
        return self.set_params({**self.params, **values}, run=run)

    def inferred_text(self) -> str:
        """What was read from the session, in one line (the status bar); ``inferred.reasons`` say why."""
        inf = self.inferred
        if not inf or not inf.params:
            return ""
        parts = [f"{k}={v}" + (f" ({inf.evidence_words(k)})" if inf.evidence_words(k) else "")
                 for k, v in inf.params.items() if k not in self.pinned]
        vs = inf.facts.get("versions") or []
        return ("inferred from the session" + (f" ({self.strategy.name} {vs[-1]})" if vs else "") + ": "
                + ", ".join(parts)) if parts else ""

    def set_params(self, values: dict, run: bool = True) -> bool:
        """All parameters (values as the editors hold them: coerced by each ``Param``)."""
        try:
            params = self.strategy.resolve(values)
        except (KeyError, ValueError) as e:
            self.s.set_error(f"Parameter: {e.args[0] if e.args else e}", "Correct the value in the parameter panel.")
            return False
        if params != self.params:
            self.params = params
            self.s.events.params(dict(params))
        if run:
            self.s.run()
        return True

    def set_param(self, name: str, value: Any) -> bool:
        return self.set_params({**self.params, name: value})

    def drag_threshold(self, value: float) -> bool:
        """The chart's threshold line was dragged to ``value`` (``Strategy.drag_threshold``)."""
        if self.strategy.threshold is None or not self.strategy.threshold.movable:
            return False
        return self.set_params(self.strategy.drag_threshold(value, self.params))

    def reset_params(self) -> bool:
        return self.set_params({})

    def set_variant(self, name: str | None) -> bool:
        """Select a variant of the strategy by name (None: the defaults of the variant parameters)."""
        if name is None:
            keys = {k for v in self.strategy.variants for k, _ in v.overrides}
            return self.set_params({**self.params, **{k: self.strategy.param(k).default for k in keys}})
        v = next((v for v in self.strategy.variants if v.name == name), None)
        if v is None:
            raise KeyError(f"strategy {self.strategy.name} has no variant {name!r}")
        return self.set_params({**self.params, **v.params})

    def set_order(self, order: list[str] | None) -> bool:
        if order is not None:
            try:
                for n in order:
                    self.strategy.layer(n)
            except KeyError as e:
                self.s.set_error(f"Layer order: {e.args[0]}", "Name the strategy's layers, comma-separated.")
                return False
        self.order = list(order) if order is not None else None
        self.s.events.order(self.order)
        self.s.run()
        return True

    def set_summarizer(self, spec: str, run: bool = True) -> None:
        spec = (spec or "offline").strip() or "offline"
        if spec != self.summarizer:
            self.summarizer = spec
            self.s.events.summarizer(spec)
        if run:
            self.s.run()

    def summarizer_object(self):
        if self.summarizer not in self.summarizers:
            self.summarizers[self.summarizer] = make_summarizer(self.summarizer)
        return self.summarizers[self.summarizer]

    def choice_words(self) -> str:
        """Why the strategy runs, short (the status line): the file's own, or chosen (and not the file's)."""
        c = self.strategy_choice
        if not c.chosen:
            return c.origin
        return c.origin + (f"; \u26a0 the file's own pipeline is {c.own.name}" if c.warning() else "")
