"""core/runtime/record.py: ``@record`` says what ``@dataclass`` says, for every shape the core declares.

Each generated shape (fields with no default, a default or a factory; ``init``, ``repr`` and ``compare`` flags;
frozen or not; slots or not; a base record with fields of its own; a ``__post_init__``) is declared twice, once
with ``dataclasses.dataclass`` and once with ``record``, and the two are held against each other: the
constructor's arguments and errors, the values it sets, ``repr``, ``==`` and ``hash``, assigning to a frozen
one, ``replace``, ``dataclasses.fields``/``replace``/``asdict``, pickling and copying."""
from __future__ import annotations

import copy
import dataclasses
import pathlib
import pickle
import re

import orjson
import pytest
from hypothesis import given, settings, strategies as st

from compactscope.core.layers.params import Param, Settings, param
from compactscope.core.runtime import record as rec

ROOT = pathlib.Path(__file__).resolve().parent.parent

# a field: (kind, init, repr, compare); kind 0 = no default, 1 = a default, 2 = a default factory
FIELD = st.tuples(st.integers(0, 2), st.booleans(), st.booleans(), st.booleans())


def _source(fields: list, deco: str, base: str, post: bool, prefix: str) -> str:
    lines = [f"@{deco}", f"class C({base}):" if base else "class C:"]
    for i, (kind, init, rp, cmp) in enumerate(fields):
        flags = ("" if init else ", init=False") + ("" if rp else ", repr=False") + ("" if cmp else ", compare=False")
        value = {0: "", 1: f" = field(default={i * 10}{flags})", 2: f" = field(default_factory=list{flags})"}[kind]
        if kind == 0 and flags:
            value = f" = field({flags[2:]})"
        lines.append(f"    {prefix}{i}: object{value}")
    if post:
        lines.append("    def __post_init__(self):\n        object.__setattr__(self, 'seen', 1)")
    if len(lines) == 2:
        lines.append("    pass")
    return "\n".join(lines) + "\n"


def _declare(fields, frozen, slots, post, base_fields, lib):
    """The shape's class built with ``lib`` ("dc" or "rec"), or the TypeError/ValueError declaring it raises."""
    if lib == "dc":
        ns = {"field": dataclasses.field, "dataclasses": dataclasses}
        deco = f"dataclasses.dataclass(frozen={frozen}, slots={slots})"
    else:
        ns = {"field": rec.field, "record": rec.record}
        deco = f"record(frozen={frozen}, slots={slots})"
    base = ""
    try:
        if base_fields is not None:
            exec(_source(base_fields, deco, "", False, "b").replace("class C", "class B"), ns)
            base = "B"
        exec(_source(fields, deco, base, post, "f"), ns)
    except (TypeError, ValueError) as e:
        return ("error", type(e))
    return ns["C"]


def _args(cls) -> tuple[list, dict]:
    """Positional values for the init fields without a default, keywords for half of those with one."""
    pos, kw = [], {}
    for i, f in enumerate(dataclasses.fields(cls)):
        if not f.init:
            continue
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        if not has_default:
            pos.append(("v", i))
        elif i % 2:
            kw[f.name] = ("k", i)
    return pos, kw


def _outcome(fn, *args):
    """What ``fn(*args)`` gives: ("ok", its value) or ("raises", the exception's type)."""
    try:
        return "ok", fn(*args)
    except Exception as e:               # noqa: BLE001 - compared, not hidden
        return "raises", type(e)


def _state(obj) -> dict:
    return {f.name: getattr(obj, f.name, "<unset>") for f in dataclasses.fields(obj)}


@settings(max_examples=150, deadline=None)
@given(fields=st.lists(FIELD, max_size=5), frozen=st.booleans(), slots=st.booleans(), post=st.booleans(),
       base=st.none() | st.lists(FIELD, max_size=3))
def test_a_record_behaves_as_the_same_dataclass(fields, frozen, slots, post, base):
    if post and slots:
        post = False                     # (a slotted class has no room for the hook's extra attribute)
    D = _declare(fields, frozen, slots, post, base, "dc")
    R = _declare(fields, frozen, slots, post, base, "rec")
    if isinstance(D, tuple):
        assert R == D                    # the same declaration error
        return
    assert [f.name for f in dataclasses.fields(R)] == [f.name for f in dataclasses.fields(D)]
    assert [f.name for f in rec.fields(R)] == [f.name for f in dataclasses.fields(D)]
    pos, kw = _args(D)
    d, r = D(*pos, **kw), R(*pos, **kw)
    assert _state(r) == _state(d)
    assert _outcome(lambda: repr(r)) == _outcome(lambda: repr(d).replace(D.__qualname__, R.__qualname__))
    assert _outcome(lambda: r == R(*pos, **kw)) == _outcome(lambda: d == D(*pos, **kw))
    assert (r == d) is False
    for f in dataclasses.fields(D):      # a default factory's value is a new one for each instance
        if f.default_factory is not dataclasses.MISSING and f.name not in kw:
            assert getattr(r, f.name) is not getattr(R(*pos, **kw), f.name)
    assert (R.__hash__ is None) == (D.__hash__ is None)
    if D.__hash__ is not None:
        assert _outcome(hash, r) == _outcome(hash, d)     # (a list field's value cannot be hashed)
    with pytest.raises(TypeError):
        R(*pos, *(("extra",) * 20), **kw)
    names = [f.name for f in dataclasses.fields(D) if f.init]
    if names:
        if frozen:
            with pytest.raises(dataclasses.FrozenInstanceError):
                setattr(d, names[0], 1)
            with pytest.raises(rec.FrozenInstanceError):     # (an AttributeError, as dataclasses' is)
                setattr(r, names[0], 1)
        else:
            setattr(r, names[0], ("set",))
            setattr(d, names[0], ("set",))
            assert _state(r) == _state(d)
        changed_d = dataclasses.replace(d, **{names[-1]: ("new",)})
        assert _state(rec.replace(r, **{names[-1]: ("new",)})) == _state(changed_d)
        assert _state(dataclasses.replace(r, **{names[-1]: ("new",)})) == _state(changed_d)
    assert _outcome(dataclasses.asdict, r) == _outcome(dataclasses.asdict, d)
    assert hasattr(r, "__dict__") == hasattr(d, "__dict__")
    assert getattr(r, "seen", None) == getattr(d, "seen", None)


# classes at module level, so that pickle can find them
@rec.record(frozen=True, slots=True)
class FrozenSlots:
    a: int
    b: list = rec.field(default_factory=list)


@rec.record
class Plain:
    a: int
    b: str = "x"
    c: dict = rec.field(default_factory=dict, repr=False)


@rec.record(frozen=True)
class Frozen:
    a: tuple
    b: object = None


@pytest.mark.parametrize("value", [FrozenSlots(1, [2]), Plain(3, "y", {"k": 1}), Frozen((1, 2), Plain(4))])
def test_records_pickle_and_copy_to_equal_values(value):
    for back in (pickle.loads(pickle.dumps(value)), copy.deepcopy(value), copy.copy(value)):
        assert back == value and type(back) is type(value)
    assert pickle.loads(pickle.dumps(value)) is not value


def test_orjson_writes_a_record_as_the_dataclass_it_is():
    assert orjson.loads(orjson.dumps(Plain(1, "z", {"q": 2}))) == {"a": 1, "b": "z", "c": {"q": 2}}
    assert orjson.loads(orjson.dumps(FrozenSlots(5))) == {"a": 5, "b": []}


def test_init_is_compiled_when_first_used_and_then_is_the_class_own():
    @rec.record
    class Late:
        a: int
        b: int = 2
    lazy = Late.__dict__["__init__"]
    assert Late(1) == Late(1, 2) and Late(a=1).b == 2
    assert Late.__dict__["__init__"] is not lazy and "a" in Late.__dict__["__init__"].__code__.co_varnames

    class Sub(Late):                     # an undecorated subclass, first used before its base
        pass

    @rec.record
    class Late2:
        a: int

    class Sub2(Late2):
        pass
    assert Sub2(5).a == 5 and Late2(6).a == 6


def test_a_dataclass_declared_on_a_record_keeps_its_fields_for_the_project():
    """A ``Settings`` a plugin declares with ``dataclasses`` (its ``param`` fields): the project's ``fields`` reads
    it, and the parameter list comes out of it."""
    @dataclasses.dataclass(frozen=True)
    class Theirs(Settings):
        limit: int = dataclasses.field(default=3, metadata={"param": ("the limit", None, 1, 9, ""), "kind": Param})
    assert [(f.name, f.default) for f in rec.fields(Theirs)] == [("limit", 3)]
    assert [(p.name, p.default, p.maximum) for p in Theirs.declared()] == [("limit", 3, 9)]

    @rec.record(frozen=True)
    class Ours(Settings):
        limit: int = param(3, "the limit", minimum=1, maximum=9)
    (p,) = Ours.declared()
    assert (p.name, p.default, p.minimum, p.maximum, p.help) == ("limit", 3, 1, 9, "the limit")
    with pytest.raises(TypeError):
        @rec.record
        class Thawed(Ours):              # a frozen record's subclass cannot thaw
            more: int = 1


def test_declaration_errors_say_what_dataclasses_says():
    with pytest.raises(ValueError, match="mutable default"):
        @rec.record
        class Bad:
            a: list = []                 # noqa: RUF012
    with pytest.raises(TypeError, match="non-default argument"):
        @rec.record
        class Order:
            a: int = 1
            b: int                       # type: ignore[misc]

    @rec.record
    class Counted:
        a: int
        n: int = rec.field(default=0, init=False)
    assert rec.replace(Counted(1), a=2) == Counted(2)
    with pytest.raises(ValueError, match="init=False"):
        rec.replace(Counted(1), n=3)


def test_the_core_declares_its_value_types_as_records():
    """``dataclasses.dataclass`` costs 0.7-1.4 ms a class at start-up: the core uses ``record`` (app/ and widgets/,
    behind the window's start-up, may use either)."""
    found = [f"{p.relative_to(ROOT)}:{k}" for p in (ROOT / "core").rglob("*.py")
             for k, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if re.match(r"\s*(@dataclass\b|from dataclasses import .*\bdataclass\b)", line)]
    assert found == []
