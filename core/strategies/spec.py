"""The one parser of parameter specs, for the CLI, the window and replay:

* assignments ``NAME=VALUE`` (``--set``, repeatable; ``parse_assignments``);
* runs ``NAME``, ``NAME:K=V,K=V`` or ``LABEL=NAME:K=V`` (``--compare``; the window's "more runs"
  field holds several, ';'-separated): ``parse_run`` -> a ``RunSpec`` with the strategy and its
  resolved, typed parameters; ``parse_run_spec`` -> (label, name, the values as text);
* ``--compare`` values, the same in replay, fleet, report and the window (repeatable, each value
  one run or several ';'-separated): ``split_runs`` / ``parse_compare``.

Values stay text until ``Strategy.resolve`` coerces them with each ``Param``: nothing is turned
back into ``k=v`` strings and parsed again.
"""
from __future__ import annotations

from typing import Iterable

from ..runtime.record import field, record
from .base import Strategy

RUN_FORMAT = "[LABEL=]NAME[:KEY=VALUE,...]"


def parse_assignments(items: Iterable[str] | None, what: str = "--set") -> dict[str, str]:
    """``["a=1", "b = x"]`` -> ``{"a": "1", "b": "x"}``; ValueError names the item without '='."""
    out: dict[str, str] = {}
    for item in items or []:
        if "=" not in item:
            raise ValueError(f"{what} takes NAME=VALUE, not {item!r}")
        k, v = item.split("=", 1)
        if not k.strip():
            raise ValueError(f"{what} takes NAME=VALUE, not {item!r}")
        out[k.strip()] = v.strip()
    return out


def parse_run_spec(spec: str) -> tuple[str, str, dict[str, str]]:
    """``NAME`` or ``NAME:K=V,K=V`` or ``LABEL=NAME:K=V`` -> (label, strategy name, params as text).
    NAME may be a plugin spec with its own colon (``PATH.py:FUNCTION``, ``MODULE:NAME``). The label
    defaults to the spec itself. Raises ValueError with what is wrong."""
    from . import builtin
    spec = spec.strip()
    label = None
    if "=" in spec.split(":", 1)[0]:
        label, spec = spec.split("=", 1)
        label = label.strip()
    from .plugin import split_params         # (the plugin machinery imported only when a spec is parsed)
    name, rest = split_params(spec)          # NAME, MODULE:NAME or PATH.py:NAME (a plugin), then K=V,...
    head, colon, tail = spec.partition(":")
    if colon and head.strip() in builtin():
        name, rest = head.strip(), tail      # a built-in name: what follows is parameters
    if not name:
        raise ValueError(f"a run is NAME or NAME:KEY=VALUE,..., not {spec!r}")
    try:
        params = parse_assignments([p.strip() for p in rest.split(",") if p.strip()], "a run")
    except ValueError:
        raise ValueError(f"a run is NAME or NAME:KEY=VALUE,..., not {spec!r}") from None
    return label or (name + (":" + rest.strip() if rest.strip() else "")), name, params


@record(frozen=True)
class RunSpec:
    """One run to replay or compare: a label, the strategy, and its resolved parameters."""
    label: str
    strategy: Strategy
    params: dict = field(default_factory=dict)

    @property
    def key(self) -> tuple:
        """Two specs with the same key run the same thing (whatever their labels)."""
        return self.strategy.name, tuple(sorted(self.params.items(), key=lambda kv: kv[0]))

    def to_json(self) -> dict:
        return {"label": self.label, "strategy": self.strategy.name, "params": dict(self.params)}


def run(label: str, strategy: str | Strategy, overrides: dict | None = None, conversation=None) -> RunSpec:
    """A RunSpec from its parts; with ``conversation``, the strategy's session-inferred defaults
    (``infer_params``) apply under the overrides, as on the command line. KeyError (unknown strategy
    or parameter) or ValueError (a value the parameter does not take) says what is wrong."""
    from . import get, infer_params
    st = get(strategy) if isinstance(strategy, str) else strategy
    return RunSpec(label, st, st.resolve(infer_params(st, conversation).apply(overrides or {})))


def parse_run(spec: str, conversation=None) -> RunSpec:
    label, name, raw = parse_run_spec(spec)
    return run(label, name, raw, conversation)


RUN_SEP = ";"


def split_runs(items: Iterable[str] | str | None, sep: str = RUN_SEP) -> list[str]:
    """The runs ``--compare`` values name, the same in replay, fleet, report and the window: the option is
    repeatable and each value may hold several runs ``sep``-separated (``--compare "s08;hermes"`` =
    ``--compare s08 --compare hermes``)."""
    if items is None:
        return []
    if isinstance(items, str):
        items = [items]
    return [part for item in items for part in (p.strip() for p in str(item).split(sep)) if part]


def parse_compare(items: Iterable[str] | str | None) -> list[tuple[str, str, dict[str, str]]]:
    """``--compare`` values (``split_runs``) -> one (label, strategy name, params as text) per run
    (``parse_run_spec``); ValueError says which run is wrong."""
    return [parse_run_spec(part) for part in split_runs(items)]


def parse_runs(text: str | Iterable[str], sep: str = RUN_SEP, conversation=None) -> list[RunSpec]:
    """Several runs, ``sep``-separated (the window's field, ``--compare``): resolved RunSpecs."""
    return [parse_run(part, conversation) for part in split_runs(text, sep)]


def compare_runs(strategy: Strategy, params: dict, defaults_of: Iterable[str] = (), extra: str = "",
                 conversation=None) -> list[RunSpec]:
    """The runs a comparison replays: the current strategy with ``params`` first ("current: NAME"),
    then each strategy of ``defaults_of`` with its defaults ("NAME (defaults)", inferred from
    ``conversation`` where the strategy infers) unless it would run the same as one already listed,
    then every run written in ``extra`` (``parse_runs``)."""
    out = [RunSpec(f"current: {strategy.name}", strategy, dict(params))]
    seen = {out[0].key}
    for name in defaults_of:
        spec = run(f"{name} (defaults)", name, None, conversation)
        if spec.key not in seen:
            seen.add(spec.key)
            out.append(spec)
    return out + parse_runs(extra, conversation=conversation)
