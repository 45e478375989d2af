"""attrs_repr, attrs_eq and attrs_hash behave exactly as the methods attrs generates."""

from __future__ import annotations

import threading
from typing import Any

import attrs
import pytest

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr


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


def _eq_twins(frozen: bool, **fields: Any) -> tuple[type, type]:
    """The same class with attrs' own __eq__/__hash__, and with attrs_eq (and attrs_hash)."""

    def build(shared: bool) -> type:
        body: dict[str, Any] = dict(fields)
        if shared:
            body["__eq__"] = attrs_eq
            if frozen:
                body["__hash__"] = attrs_hash
        return (attrs.frozen if frozen else attrs.define)(type("Thing", (), body))

    return build(False), build(True)


class _Odd:
    """An == that returns a non-bool, as numpy arrays do: attrs passes it on as it is."""

    def __init__(self, truth: bool) -> None:
        self.truth = truth

    def __eq__(self, other: object) -> Any:
        return _Truth(self.truth)

    __hash__ = object.__hash__


class _Truth:
    def __init__(self, value: bool) -> None:
        self.value = value

    def __bool__(self) -> bool:
        return self.value


EQ_FIELDS: list[dict[str, Any]] = [
    {},
    {"a": attrs.field(), "b": attrs.field(default=0)},
    {"a": attrs.field(eq=False), "b": attrs.field()},
    {"a": attrs.field(eq=str.lower), "b": attrs.field(hash=False)},
]
EQ_VALUES = [("x", 1), ("X", 1), ("x", 2), ("y", 1)]


@pytest.mark.parametrize("frozen", [True, False], ids=["frozen", "mutable"])
@pytest.mark.parametrize("fields", EQ_FIELDS, ids=["none", "plain", "eq-false", "eq-key"])
def test_eq_and_hash_as_attrs_generates_them(frozen: bool, fields: dict[str, Any]) -> None:
    generated, shared = _eq_twins(frozen, **fields)
    arity = len(fields)
    for left in EQ_VALUES:
        for right in EQ_VALUES:
            g1, g2 = generated(*left[:arity]), generated(*right[:arity])
            s1, s2 = shared(*left[:arity]), shared(*right[:arity])
            assert (s1 == s2, s1 != s2) == (g1 == g2, g1 != g2)
            if frozen and s1 == s2:
                assert hash(s1) == hash(s2)
        assert shared(*left[:arity]).__eq__(generated(*left[:arity])) is NotImplemented
        assert (shared(*left[:arity]) == left) is False
    if frozen:
        assert hash(shared(*EQ_VALUES[0][:arity])) == hash(shared(*EQ_VALUES[0][:arity]))
        assert len({shared(*v[:arity]) for v in EQ_VALUES}) == len(
            {generated(*v[:arity]) for v in EQ_VALUES}
        )
    else:
        assert generated.__hash__ is None and shared.__hash__ is None  # unhashable, as attrs has it


def test_a_subclass_is_never_equal_like_attrs() -> None:
    generated, shared = _eq_twins(True, a=attrs.field())
    sub_generated = attrs.frozen(type("Sub", (generated,), {}))
    sub_shared = attrs.frozen(type("Sub", (shared,), {}))
    assert (shared(1) == sub_shared(1)) == (generated(1) == sub_generated(1)) is False


def test_eq_passes_on_what_the_field_comparison_returns() -> None:
    generated, shared = _eq_twins(True, a=attrs.field(), b=attrs.field())
    for first, second in [(True, True), (True, False), (False, True)]:
        g = generated(_Odd(first), _Odd(second)) == generated(_Odd(first), _Odd(second))
        s = shared(_Odd(first), _Odd(second)) == shared(_Odd(first), _Odd(second))
        assert type(s) is type(g) is _Truth and s.value == g.value
