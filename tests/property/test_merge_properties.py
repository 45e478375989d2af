"""deep_merge laws: identity, claims always win, named-list order, purity."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pegboard.domain.errors import ConfigError
from pegboard.domain.squarepeg.merge import deep_merge, is_named_list

KEYS = st.sampled_from(["a", "b", "c", "env", "name"])
NAMES = st.sampled_from(["x", "y", "z", "main"])
SCALARS = st.none() | st.booleans() | st.integers(-3, 3) | st.text(alphabet="ab", max_size=2)


def _named_list(children: st.SearchStrategy[Any]) -> st.SearchStrategy[list[dict[str, Any]]]:
    """A named list with unique names (so every claim path points at exactly one item)."""
    return st.lists(NAMES, unique=True, min_size=1, max_size=3).flatmap(
        lambda names: st.tuples(
            *(
                st.dictionaries(st.sampled_from(["v", "w", "env"]), children, max_size=2)
                for _ in names
            )
        ).map(lambda bodies: [{"name": n, **body} for n, body in zip(names, bodies)])
    )


VALUES = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(KEYS, children, max_size=3)
        | _named_list(children)
    ),
    max_leaves=8,
)
MAPPINGS = st.dictionaries(KEYS, VALUES, max_size=4)


def _paths(value: Any, path: str = "") -> list[str]:
    """Every claimable path present in `value`."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            child = f"{path}/{key}"
            found.append(child)
            found.extend(_paths(item, child))
    elif is_named_list(value):
        for item in value:
            child = f"{path}/[name={item['name']}]"
            found.append(child)
            found.extend(_paths(item, child))
    return found


def _lookup(value: Any, path: str) -> Any:
    for part in path.split("/")[1:]:
        if part.startswith("[name="):
            name = part[len("[name=") : -1]
            # as _paths wrote it: a generated `name: None` item is found as "[name=None]"
            value = next(item for item in value if str(item["name"]) == name)
        else:
            value = value[part]
    return value


@given(MAPPINGS)
def test_empty_mapping_is_an_identity(value: dict[str, Any]) -> None:
    assert deep_merge(value, {}) == value
    assert deep_merge({}, value) == value


@given(MAPPINGS, MAPPINGS, st.data())
def test_claimed_paths_keep_the_base_value_whatever_the_overlay(
    base: dict[str, Any], overlay: dict[str, Any], data: st.DataObject
) -> None:
    paths = _paths(base)
    claims = (
        frozenset(data.draw(st.lists(st.sampled_from(paths), max_size=3))) if paths else frozenset()
    )
    try:
        merged = deep_merge(base, overlay, claims=claims)
    except ConfigError:
        return  # refusing is allowed; silently overriding is not
    for claim in claims:
        assert _lookup(merged, claim) == _lookup(base, claim), claim


@given(_named_list(SCALARS), _named_list(SCALARS))
def test_named_list_merge_keeps_base_order_then_appends_new_names(
    base: list[dict[str, Any]], overlay: list[dict[str, Any]]
) -> None:
    merged = deep_merge({"l": base}, {"l": overlay})["l"]
    base_names = [item["name"] for item in base]
    new_names = [item["name"] for item in overlay if item["name"] not in base_names]
    assert [item["name"] for item in merged] == base_names + new_names


@given(MAPPINGS, MAPPINGS, st.data())
def test_inputs_are_never_mutated_or_shared(
    base: dict[str, Any], overlay: dict[str, Any], data: st.DataObject
) -> None:
    paths = _paths(base)
    claims = (
        frozenset(data.draw(st.lists(st.sampled_from(paths), max_size=2))) if paths else frozenset()
    )
    before = copy.deepcopy((base, overlay))
    try:
        merged = deep_merge(base, overlay, claims=claims)
    except ConfigError:
        assert (base, overlay) == before
        return
    assert (base, overlay) == before
    containers = {id(c) for c in _containers(base)} | {id(c) for c in _containers(overlay)}
    assert not containers & {id(c) for c in _containers(merged)}


def _containers(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [value, *(c for item in value.values() for c in _containers(item))]
    if isinstance(value, list):
        return [value, *(c for item in value for c in _containers(item))]
    return []
