"""`attrs_repr`, `attrs_eq`, `attrs_hash`: the methods attrs generates, as shared functions.

attrs writes each class's `__repr__`, `__eq__` and `__hash__` as Python source and compiles it
when the class is built, at import: on a `squarepeg run --dry-run` the repr scripts alone were
~31M of ~395M instructions (~8%), the largest compile left at start-up. A class that sets them
in its body gets none generated (attrs' `auto_detect` leaves a class's own methods alone):

    @attrs.frozen
    class Value:
        __repr__ = attrs_repr
        __eq__ = attrs_eq
        __hash__ = attrs_hash  # frozen classes only: a mutable one stays unhashable, as attrs has it

and behaves as attrs' own would. `attrs_repr`: `Name(field=value!r, ...)` with the class's
`__qualname__` after its last `>.`, fields with `repr=False` left out, a field's own `repr=`
callable used, a field not yet set (`init=False`, no default) shown as `NOTHING`, and `...` for
an object met again inside its own repr (attrs' recursion guard; per thread here through a
context variable, as attrs' is through a thread-local). `attrs_eq`: `NotImplemented` unless the
other object is of the very same class, else the fields with `eq=True` compared in order (through
their `eq_key`), the first falsy comparison or the last one returned. `attrs_hash`: a hash of the
class and the fields with `hash=True`, or `hash=None` and `eq=True` (through their `eq_key`).
tests/unit/test_attrs_methods.py holds them to attrs' generated methods.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

import attrs

__all__ = ["attrs_eq", "attrs_hash", "attrs_repr"]

_REPRING: ContextVar[set[int] | None] = ContextVar("pegboard_attrs_repring", default=None)


def attrs_repr(self: Any) -> str:
    """What attrs' generated `__repr__` returns for `self` (an instance of an attrs class)."""
    repring = _REPRING.get()
    if repring is None:
        repring = set()
        _REPRING.set(repring)
    elif id(self) in repring:
        return "..."
    repring.add(id(self))
    try:
        cls = self.__class__
        parts = []
        for field in cls.__attrs_attrs__:
            if field.repr is False:
                continue
            value = (
                getattr(self, field.name)
                if field.init
                else getattr(self, field.name, attrs.NOTHING)
            )
            parts.append(
                f"{field.name}={value!r}"
                if field.repr is True
                else f"{field.name}={field.repr(value)}"
            )
        return f"{cls.__qualname__.rsplit('>.', 1)[-1]}({', '.join(parts)})"
    finally:
        repring.discard(id(self))


def attrs_eq(self: Any, other: object) -> Any:
    """What attrs' generated `__eq__` returns for `self == other`."""
    fields = self.__attrs_attrs__
    if other.__class__ is not self.__class__:
        return NotImplemented
    result: Any = True
    for field in fields:
        if not field.eq:
            continue
        mine, theirs = getattr(self, field.name), getattr(other, field.name)
        if field.eq_key is not None:
            mine, theirs = field.eq_key(mine), field.eq_key(theirs)
        result = mine == theirs
        if not result:
            return result
    return result


def attrs_hash(self: Any) -> int:
    """A hash consistent with `attrs_eq`, over the fields attrs' generated `__hash__` uses."""
    values: list[Any] = [self.__class__]
    for field in self.__class__.__attrs_attrs__:
        if field.hash is True or (field.hash is None and field.eq is True):
            value = getattr(self, field.name)
            values.append(value if field.eq_key is None else field.eq_key(value))
    return hash(tuple(values))
