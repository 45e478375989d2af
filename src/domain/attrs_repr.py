"""`attrs_repr`: the `__repr__` attrs generates, as one shared function.

attrs writes each class's `__repr__` as Python source and compiles it when the class is built,
at import: on a `squarepeg run --dry-run` that was ~26M of ~380M instructions (~7%), the largest
compile left at start-up. A class that sets `__repr__ = attrs_repr` in its body gets none
generated (attrs' `auto_detect` leaves a class's own `__repr__` alone) and reprs exactly as
attrs' would: `Name(field=value!r, ...)` with the class's `__qualname__` after its last `>.`,
fields with `repr=False` left out, a field's own `repr=` callable used, a field not yet set
(`init=False`, no default) shown as `NOTHING`, and `...` for an object met again inside its own
repr (attrs' recursion guard; per thread here through a context variable, as attrs' is through a
thread-local). tests/unit/test_attrs_repr.py holds it to attrs' generated repr.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

import attrs

__all__ = ["attrs_repr"]

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
