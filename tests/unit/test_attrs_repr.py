"""attrs_repr reprs exactly as attrs' generated __repr__ does."""

from __future__ import annotations

import threading
from typing import Any

import attrs
import pytest

from pegboard.domain.attrs_repr import attrs_repr


def _twins(**fields: Any) -> tuple[type, type]:
    """The same attrs class twice: with attrs' own __repr__, and with attrs_repr."""

    def build(shared: bool) -> type:
        body: dict[str, Any] = dict(fields)
        if shared:
            body["__repr__"] = attrs_repr
        return attrs.define(type("Thing", (), body))

    return build(False), build(True)


CASES: list[tuple[dict[str, Any], tuple[Any, ...]]] = [
    ({}, ()),
    ({"a": attrs.field()}, (1,)),
    ({"a": attrs.field(), "b": attrs.field(default="x")}, ("it's", None)),
    ({"a": attrs.field(repr=False), "b": attrs.field()}, ("secret", [1, {"k": (2,)}])),
    ({"a": attrs.field(repr=lambda v: f"<{v}>"), "b": attrs.field(repr=len)}, (3, "four")),
    ({"a": attrs.field(), "b": attrs.field(init=False)}, (1,)),  # b never set: NOTHING
    ({"a": attrs.field(), "b": attrs.field(init=False, default=5)}, (1,)),
]


@pytest.mark.parametrize(("fields", "args"), CASES)
def test_the_same_text_as_attrs_generated_repr(
    fields: dict[str, Any], args: tuple[Any, ...]
) -> None:
    generated, shared = _twins(**fields)
    assert "__repr__" not in vars(generated) or vars(generated)["__repr__"] is not attrs_repr
    assert vars(shared)["__repr__"] is attrs_repr
    assert repr(shared(*args)) == repr(generated(*args))


def test_frozen_slotted_and_nested_classes() -> None:
    @attrs.frozen
    class Outer:
        @attrs.frozen
        class Inner:
            __repr__ = attrs_repr
            x: int

        inner: Inner
        items: tuple[Any, ...] = ()

    @attrs.frozen
    class Shared:
        __repr__ = attrs_repr
        inner: Outer.Inner
        items: tuple[Any, ...] = ()

    inner = Outer.Inner(1)
    assert repr(inner) == "Outer.Inner(x=1)"
    assert repr(Shared(inner, (inner,))) == repr(Outer(inner, (inner,))).replace(
        "Outer(", "Shared("
    )


def test_a_class_defined_in_a_function_drops_the_locals_prefix() -> None:
    generated, shared = _twins(a=attrs.field())
    shared.__qualname__ = generated.__qualname__ = "f.<locals>.Thing"
    assert repr(shared(1)) == repr(generated(1)) == "Thing(a=1)"


def test_an_object_inside_itself_is_shown_as_dots_like_attrs_does() -> None:
    generated, shared = _twins(a=attrs.field())

    def cycle(outer_cls: type, inner_cls: type) -> str:
        outer, inner = outer_cls([]), inner_cls([])
        outer.a.append(inner)
        inner.a.append(outer)
        return repr(outer)

    expected = cycle(generated, generated)
    assert expected == "Thing(a=[Thing(a=[...])])"
    assert cycle(shared, shared) == cycle(shared, generated) == cycle(generated, shared) == expected


def test_the_guard_is_per_thread() -> None:
    _, shared = _twins(a=attrs.field())
    started, release = threading.Event(), threading.Event()
    seen: list[str] = []

    def slow_repr(value: Any) -> str:
        if threading.current_thread() is not threading.main_thread():
            started.set()
            release.wait(10)
        return "slow"

    _, slow = _twins(a=attrs.field(repr=slow_repr))
    blocked = slow(1)
    outer = shared(blocked)
    thread = threading.Thread(target=lambda: seen.append(repr(outer)))
    thread.start()
    started.wait(10)
    seen.append(repr(outer))  # the other thread is inside repr(outer): not a recursion here
    release.set()
    thread.join(10)
    assert seen == ["Thing(a=Thing(a=slow))", "Thing(a=Thing(a=slow))"]


def test_an_object_met_twice_side_by_side_is_shown_twice() -> None:
    generated, shared = _twins(a=attrs.field())
    for cls in (generated, shared):
        leaf = cls(1)
        assert repr(cls([leaf, leaf])) == "Thing(a=[Thing(a=1), Thing(a=1)])"
        assert repr(leaf) == "Thing(a=1)"
