"""Record classes: the core's value types, declared as dataclasses are, made at a small part of their cost.

``@record`` (with ``frozen``, ``slots`` and ``unsafe_hash``), ``field``, ``fields``, ``replace`` and ``MISSING`` say
what ``dataclasses`` says, for the parts of it the project uses: fields from the class's annotations in order,
defaults and default factories, ``init``/``repr``/``compare``/``metadata`` per field, ``__post_init__``, generated
``__init__``, ``__repr__``, ``__eq__`` and, for a frozen class, ``__hash__``, ``__setattr__`` and ``__delattr__``
(assigning raises ``FrozenInstanceError``, an ``AttributeError``), inherited fields, and slots.

Why not ``dataclasses`` itself: it compiles source text for each of up to six methods of every class, about
0.7 ms a class (1.4 ms a frozen one). For the 46 classes a headless ``run`` defines that was 19 ms of every
command's start-up, half the bare interpreter's own (the imports of ``run`` went from 69 to 41 ms). Here ``__init__`` is compiled when the class is first
instantiated (one compile per class, none for a class only imported), and ``__eq__``, ``__hash__``, ``__repr__``
and the frozen guards are shared functions over the class's field names.

A record is still a dataclass to other code: ``dataclasses.fields``, ``replace``, ``asdict`` and ``is_dataclass``
work on it (``__dataclass_fields__`` is built, importing ``dataclasses``, the first time something asks for it),
so a plugin may treat the values it is given as the dataclasses the documentation calls them, and declare its
own ``Settings`` with ``@dataclass(frozen=True)`` on top of the project's (``fields`` here reads such a class's
``dataclasses`` fields). Instances pickle and copy as plain objects do (the fleet sends them to its workers).
"""
from __future__ import annotations

from operator import attrgetter
from typing import TYPE_CHECKING, Any, Callable, ClassVar, TypeVar

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**_kw):
        return lambda f: f

T = TypeVar("T")


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __reduce__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""A field's default (or default factory) when it has none."""


class FrozenInstanceError(AttributeError):
    """An assignment to a field of a frozen record."""


class Field:
    """One field of a record: its name, annotation (as written), default or default factory, and flags."""
    __slots__ = ("name", "type", "default", "default_factory", "init", "repr", "compare", "metadata")

    def __init__(self, default: Any, default_factory: Any, init: bool, repr: bool, compare: bool,
                 metadata: Any) -> None:
        self.name = ""
        self.type: Any = None
        self.default = default
        self.default_factory = default_factory
        self.init = init
        self.repr = repr
        self.compare = compare
        self.metadata = {} if metadata is None else metadata

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, default={self.default!r}, default_factory={self.default_factory!r})"


def field(*, default: Any = MISSING, default_factory: Callable[[], Any] | Any = MISSING, init: bool = True,
          repr: bool = True, compare: bool = True, metadata: Any = None) -> Any:
    """A field with a default, a default factory, or flags (``dataclasses.field``'s arguments of those names)."""
    if default is not MISSING and default_factory is not MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return Field(default, default_factory, init, repr, compare, metadata)


def fields(class_or_instance: Any) -> tuple[Field, ...]:
    """The record's fields in declaration order (its bases' first); also a dataclass's (a plugin's dataclass
    declared on top of a record), read once per class."""
    cls = class_or_instance if isinstance(class_or_instance, type) else type(class_or_instance)
    for c in cls.__mro__:
        own = c.__dict__.get("__record_fields__")
        if own is not None:
            return own
        dc = c.__dict__.get("__dataclass_fields__")
        if isinstance(dc, dict):
            found = _from_dataclass(dc)
            type.__setattr__(c, "__record_fields__", found)
            return found
    raise TypeError(f"fields() takes a record class or instance, not {cls.__name__}")


def _from_dataclass(dc: dict) -> tuple[Field, ...]:
    import dataclasses
    out = []
    for d in dc.values():
        if d._field_type is not dataclasses._FIELD:      # type: ignore[attr-defined]  # (a ClassVar or InitVar)
            continue
        f = Field(MISSING if d.default is dataclasses.MISSING else d.default,
                  MISSING if d.default_factory is dataclasses.MISSING else d.default_factory,
                  d.init, d.repr, bool(d.compare), d.metadata)
        f.name, f.type = d.name, d.type
        out.append(f)
    return tuple(out)


def replace(obj: T, /, **changes: Any) -> T:
    """A new record like ``obj`` with ``changes`` (a field of ``init=False`` cannot be changed)."""
    if isinstance(obj, type):
        raise TypeError("replace() takes a record instance, not a class")
    for f in fields(obj):
        if not f.init:
            if f.name in changes:
                raise ValueError(f"field {f.name} is declared with init=False, it cannot be specified with replace()")
        elif f.name not in changes:
            changes[f.name] = getattr(obj, f.name)
    return obj.__class__(**changes)


class _Params:
    """``__dataclass_params__``: what ``dataclasses`` reads of a base class (whether it is frozen)."""
    __slots__ = ("frozen", "unsafe_hash", "slots")
    init = repr = eq = match_args = True
    order = kw_only = weakref_slot = False

    def __init__(self, frozen: bool, unsafe_hash: bool, slots: bool) -> None:
        self.frozen, self.unsafe_hash, self.slots = frozen, unsafe_hash, slots


# ----------------------------------------------------------------- the shared methods
_in_repr: set = set()


def _repr(self) -> str:
    key = id(self)
    if key in _in_repr:
        return "..."
    _in_repr.add(key)
    try:
        parts = [f"{f.name}={getattr(self, f.name)!r}" for f in self.__record_fields__ if f.repr]
    finally:
        _in_repr.discard(key)
    return f"{self.__class__.__qualname__}({', '.join(parts)})"


def _eq(self, other):
    if other.__class__ is self.__class__:
        key = self.__record_key__
        return key(self) == key(other)
    return NotImplemented


def _hash(self) -> int:
    return hash(self.__record_key__(self))


def _key_of(names: tuple[str, ...]) -> Callable[[Any], tuple]:
    """The tuple of the compared fields' values (always a tuple, also for one field or none)."""
    if len(names) > 1:
        return attrgetter(*names)
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


def _frozen_guards(cls: type, names: frozenset) -> tuple[Callable, Callable]:
    def __setattr__(self, name, value):
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self, name):
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)
    return __setattr__, __delattr__


def _getstate(self):
    return [getattr(self, f.name) for f in self.__record_fields__]


def _setstate(self, state):
    for f, value in zip(self.__record_fields__, state):
        object.__setattr__(self, f.name, value)   # (a frozen record's own guard would refuse it)


class _DataclassFields:
    """``__dataclass_fields__`` made when first asked for: ``dataclasses.Field`` objects for the record's fields, so
    that ``dataclasses.fields``, ``replace``, ``asdict`` and ``is_dataclass`` (and orjson) take a record for a
    dataclass. Imports ``dataclasses`` then, not before."""

    def __get__(self, obj: Any, owner: type) -> dict:
        import dataclasses
        dc: Any = dataclasses
        out = {}
        for f in fields(owner):
            none = dc.MISSING
            d = dc.field(default=none if f.default is MISSING else f.default,
                         default_factory=none if f.default_factory is MISSING else f.default_factory,
                         init=f.init, repr=f.repr, compare=f.compare, metadata=f.metadata or None)
            d.name, d.type = f.name, f.type
            d._field_type = dc._FIELD             # (what dataclasses.fields looks for)
            out[f.name] = d
        type.__setattr__(owner, "__dataclass_fields__", out)
        return out


# ----------------------------------------------------------------- the decorator
def _is_classvar(annotation: Any) -> bool:
    if isinstance(annotation, str):
        return annotation.startswith(("ClassVar", "typing.ClassVar"))
    return annotation is ClassVar or getattr(annotation, "__origin__", None) is ClassVar


def _own_fields(cls: type) -> list[Field]:
    out = []
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        if _is_classvar(annotation):
            continue
        value = cls.__dict__.get(name, MISSING)
        f = value if isinstance(value, Field) else Field(value, MISSING, True, True, True, None)
        f.name, f.type = name, annotation
        d = f.default
        if d is not MISSING and type(d).__hash__ is None:
            raise ValueError(f"mutable default {type(d)} for field {name} is not allowed: use default_factory")
        out.append(f)
    return out


def _make_init(cls: type, flds: tuple[Field, ...], frozen: bool, slots: bool) -> Callable:
    """The compiled ``__init__`` of ``cls`` (dataclasses' form: defaults and factories as names of its globals)."""
    glob: dict[str, Any] = {"MISSING": MISSING, "_set": object.__setattr__}
    args, body = ["self"], []
    for f in flds:
        n = f.name
        if f.default_factory is not MISSING:
            glob[f"_f_{n}"] = f.default_factory
            if f.init:
                args.append(f"{n}=MISSING")
                value = f"_f_{n}() if {n} is MISSING else {n}"
            else:
                value = f"_f_{n}()"
        elif f.init:
            if f.default is not MISSING:
                glob[f"_d_{n}"] = f.default
                args.append(f"{n}=_d_{n}")
            else:
                args.append(n)
            value = n
        elif slots and f.default is not MISSING:
            glob[f"_d_{n}"] = f.default
            value = f"_d_{n}"
        else:
            continue                              # read from the class attribute that holds the default
        body.append(f"_set(self, {n!r}, {value})" if frozen else f"self.{n} = {value}")
    if hasattr(cls, "__post_init__"):
        body.append("self.__post_init__()")
    src = f"def __init__({', '.join(args)}):\n    " + ("\n    ".join(body) or "pass") + "\n"
    ns: dict[str, Any] = {}
    exec(src, glob, ns)                           # noqa: S102 - source made here from the class's field names
    fn = ns["__init__"]
    fn.__qualname__ = f"{cls.__qualname__}.__init__"
    fn.__module__ = cls.__module__
    return fn


def _lazy_init(cls: type, frozen: bool, slots: bool) -> Callable:
    """An ``__init__`` that compiles the real one, puts it on the class, and calls it."""
    def __init__(self, *args, **kwargs):
        real = _make_init(cls, fields(cls), frozen, slots)
        type.__setattr__(cls, "__init__", real)
        real(self, *args, **kwargs)
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


def _process(cls: type, frozen: bool, slots: bool, unsafe_hash: bool) -> type:
    inherited: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        own = base.__dict__.get("__record_own__")
        if own is not None:
            if base.__dict__.get("__record_frozen__") and not frozen:
                raise TypeError("cannot inherit non-frozen record from a frozen one")
            for f in own:
                inherited[f.name] = f
    own_fields = _own_fields(cls)
    for f in own_fields:
        inherited[f.name] = f
    flds = tuple(inherited.values())
    seen_default = False
    for f in flds:
        if f.init:
            if f.default is MISSING and f.default_factory is MISSING:
                if seen_default:
                    raise TypeError(f"non-default argument {f.name!r} follows default argument")
            else:
                seen_default = True
    names = tuple(f.name for f in flds)
    if slots:
        if "__slots__" in cls.__dict__:
            raise TypeError(f"{cls.__name__} already specifies __slots__")
        body = {k: v for k, v in cls.__dict__.items() if k not in names and k not in ("__dict__", "__weakref__")}
        body["__slots__"] = tuple(f.name for f in own_fields)
        cls = type(cls)(cls.__name__, cls.__bases__, body)
    else:
        for f in own_fields:                      # the class attribute is the default, or there is none
            if isinstance(cls.__dict__.get(f.name), Field):
                if f.default is MISSING:
                    type.__delattr__(cls, f.name)
                else:
                    type.__setattr__(cls, f.name, f.default)
    own_hash = cls.__dict__.get("__hash__", MISSING)
    explicit_hash = not (own_hash is MISSING or (own_hash is None and "__eq__" in cls.__dict__))

    def put(name: str, value: Any) -> None:
        if name not in cls.__dict__:
            type.__setattr__(cls, name, value)

    type.__setattr__(cls, "__record_fields__", flds)
    type.__setattr__(cls, "__record_own__", tuple(own_fields))
    type.__setattr__(cls, "__record_frozen__", frozen)
    type.__setattr__(cls, "__record_key__", staticmethod(_key_of(tuple(f.name for f in flds if f.compare))))
    type.__setattr__(cls, "__dataclass_fields__", _DataclassFields())
    type.__setattr__(cls, "__dataclass_params__", _Params(frozen, unsafe_hash, slots))
    put("__match_args__", tuple(f.name for f in flds if f.init))
    put("__init__", _lazy_init(cls, frozen, slots))
    put("__repr__", _repr)
    put("__eq__", _eq)
    if unsafe_hash:
        if explicit_hash:
            raise TypeError(f"cannot overwrite attribute __hash__ in class {cls.__name__}")
        type.__setattr__(cls, "__hash__", _hash)
    elif frozen:
        if not explicit_hash:
            type.__setattr__(cls, "__hash__", _hash)
    elif not explicit_hash:
        type.__setattr__(cls, "__hash__", None)
    if frozen:
        if "__setattr__" in cls.__dict__ or "__delattr__" in cls.__dict__:
            raise TypeError(f"cannot overwrite attribute __setattr__ or __delattr__ in class {cls.__name__}")
        setter, deleter = _frozen_guards(cls, frozenset(names))
        type.__setattr__(cls, "__setattr__", setter)
        type.__setattr__(cls, "__delattr__", deleter)
        if slots:
            put("__getstate__", _getstate)
            put("__setstate__", _setstate)
    return cls


@dataclass_transform(field_specifiers=(field,))
def record(cls: Any = None, /, *, frozen: bool = False, slots: bool = False, unsafe_hash: bool = False) -> Any:
    """``@record`` or ``@record(frozen=True, slots=True, unsafe_hash=True)``: see the module's text."""
    def wrap(c: type) -> type:
        return _process(c, frozen, slots, unsafe_hash)
    return wrap if cls is None else wrap(cls)
