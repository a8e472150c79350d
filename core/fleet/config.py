"""What a fleet run replays: the main strategy, the user's overrides and the ``--compare`` runs.

The configuration travels to every worker (it is small and picklable) and is stored in the
results file, so a resumed run can tell whether the file was made the same way.
"""
from __future__ import annotations

import json
import re

from ..runtime.record import field, record
from .. import strategies

FORMAT_VERSION = 4          # 2: post_levels; 3: worker_peak_mb; 4: a row per session of a file, duplicates


class FleetError(Exception):
    """A fleet run cannot start or go on (bad arguments, an unreadable results file): its text says why."""


@record(frozen=True)
class Run:
    """One strategy configuration replayed over every session."""
    label: str                  # as the user wrote it (shown in tables and figures)
    key: str                    # the column prefix: ``cmp_<key>_...`` (main run: no prefix)
    strategy: str | None        # None (main run only): each session's own pipeline
    params: dict = field(default_factory=dict)   # overrides as given (text), on top of the inferred defaults

    def to_json(self) -> dict:
        return {"label": self.label, "key": self.key, "strategy": self.strategy, "params": dict(self.params)}


_RESERVED = {"main", "sim", "real", "series"}


def version_key(v: str) -> list:
    """Sorts versions as numbers: 2.1.14 after 2.1.7."""
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in v.replace("-", ".").split(".")]


def column_key(label: str, taken: set[str]) -> str:
    """A column-safe, unique key for a run label: lower case letters, digits and underscores."""
    key = re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_") or "run"
    if key[0].isdigit() or key in _RESERVED:
        key = "r_" + key
    base, n = key, 2
    while key in taken:
        key, n = f"{base}_{n}", n + 1
    taken.add(key)
    return key


OWN = "own pipeline"


@record(frozen=True)
class FleetConfig:
    strategy: str | None = None                     # --strategy; None: each file's own pipeline (strategies.own)
    params: dict = field(default_factory=dict)      # --set, as text
    compare: tuple[Run, ...] = ()
    summarizer: str = "offline"
    infer: bool = True                              # apply strategies.infer_params per session

    @property
    def main(self) -> Run:
        return Run(self.strategy or OWN, "", self.strategy, dict(self.params))

    @property
    def runs(self) -> list[Run]:
        return [self.main, *self.compare]

    def check(self) -> None:
        """Raise FleetError when a strategy or parameter does not exist (before any work starts)."""
        for run in self.runs:
            try:
                if run.strategy is None:
                    _check_own_params(run.params)
                    continue
                s = strategies.get(run.strategy)
                s.resolve(run.params)
            except (KeyError, ValueError) as e:
                where = "--strategy/--set" if not run.key else f"--compare {run.label!r}"
                raise FleetError(f"{where}: {e.args[0] if e.args else e}") from None

    def to_json(self) -> dict:
        return {"format_version": FORMAT_VERSION, "strategy": self.strategy, "params": dict(self.params),
                "compare": [r.to_json() for r in self.compare], "summarizer": self.summarizer, "infer": self.infer}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)

    @classmethod
    def from_json(cls, d: dict) -> "FleetConfig":
        return cls(d.get("strategy"), dict(d.get("params") or {}),
                   tuple(Run(r["label"], r["key"], r["strategy"], dict(r.get("params") or {}))
                         for r in d.get("compare") or []),
                   d.get("summarizer", "offline"), bool(d.get("infer", True)))


def _check_own_params(params: dict) -> None:
    """--set without --strategy goes to every session whose own strategy has the parameter: it must be a
    parameter of some built-in strategy, and a value each that has it accepts."""
    for k, v in params.items():
        have = []
        for name in strategies.builtin():
            try:
                st = strategies.get(name)
            except (KeyError, ImportError):
                continue
            if any(p.name == k for p in st.params):
                have.append(name)
                st.param(k).coerce(v)
        if not have:
            raise KeyError(f"no parameter {k!r} in any strategy (without --strategy each file runs its own pipeline, "
                           f"and a --set goes to the strategies that have it)")


def make_config(strategy: str | None = None, params: dict | None = None, compare: list | None = None,
                summarizer: str = "offline", infer: bool = True) -> FleetConfig:
    """``strategy``: the main run's (None: each file's own pipeline, the rule of every command);
    ``compare``: specs ``[LABEL=]NAME[:K=V,...]`` or (label, strategy, params) tuples."""
    from ..strategies.spec import parse_compare
    runs: list = []
    taken: set[str] = set()
    specs = []
    for spec in compare or []:
        if isinstance(spec, str):       # the --compare syntax of every command: "s08;hermes" = two runs
            try:
                specs += parse_compare(spec)
            except ValueError as e:
                raise FleetError(f"--compare: {e}") from None
        else:
            specs.append(spec)
    for label, name, p in specs:
        runs.append(Run(label, column_key(label, taken), name, dict(p or {})))
    cfg = FleetConfig(strategy, dict(params or {}), tuple(runs), summarizer, infer)
    cfg.check()
    return cfg
