"""Claim-aware deep merge, used for config layers, profiles and manifest passthrough.

Rules (docs/squarepeg/config-reference.md, "Merge rules"):
- mappings merge key by key;
- "named lists" (non-empty, every item a mapping with a `name`) merge by name: matching names are
  deep-merged, new names are appended, base order is kept; an overlay item whose name occurs more
  than once in the list so far is ambiguous (ConfigError);
- an empty overlay list clears the base list, named or not (squarepeg 0.4.1 could not clear a
  named list);
- any other list, a scalar, a type mismatch or null: the overlay replaces the base.

Claims protect what the command line set. A claim is a path such as
`/spec/containers/[name=main]/env/[name=FOO]` (keys joined by `/`, named-list items as
`[name=X]`). At a claimed path the base value is kept (or stays absent) whatever the overlay says.
A replacement that would drop or alter a claimed value below it is handled like this:
- `[]` over a named list keeps the claimed items (in base order) and drops the rest;
- any other replacement (a list without names, a scalar, null) raises ConfigError naming the claim,
  because there is no way to honour both the overlay and the claim.

The function is pure: inputs are never mutated and the result shares no dict or list with them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pegboard.domain.errors import ConfigError, ConfigProblem

__all__ = [
    "copy_tree",
    "deep_merge",
    "is_named_list",
    "item_path",
]


def deep_merge(
    base: Mapping[str, Any],
    overlay: Mapping[str, Any],
    *,
    claims: frozenset[str] = frozenset(),
    path: str = "",
    source: str = "config",
) -> dict[str, Any]:
    """Merge `overlay` over `base` (both mappings); `path` is where `base` sits in claim terms."""
    if path in claims:
        kept: dict[str, Any] = copy_tree(base)
        return kept
    return _Merger(claims=claims, source=source).merge_mappings(base, overlay, path)


def copy_tree(value: Any) -> Any:
    """A copy that shares no dict or list with `value` (scalars are immutable and shared)."""
    if isinstance(value, Mapping):
        return {key: copy_tree(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [copy_tree(item) for item in value]
    return value


def is_named_list(value: Any) -> bool:
    """A non-empty list whose items are all mappings carrying a `name` key."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(item, Mapping) and "name" in item for item in value)
    )


def item_path(path: str, name: Any) -> str:
    """The claim path of the named-list item `name` under the list at `path`."""
    return f"{path}/[name={name}]"


class _Merger:
    def __init__(self, *, claims: frozenset[str], source: str) -> None:
        self.claims = claims
        self.source = source
        # Every proper prefix of every claim: a path in here has a claim somewhere below it.
        self.above_claims: frozenset[str] = frozenset(
            claim[:index] for claim in claims for index in _slash_positions(claim)
        )

    def merge_mappings(
        self, base: Mapping[str, Any], overlay: Mapping[str, Any], path: str
    ) -> dict[str, Any]:
        merged = {key: copy_tree(value) for key, value in base.items()}
        for key, value in overlay.items():
            child = f"{path}/{key}"
            if child in self.claims:
                continue  # keep the base value, or keep it absent
            if key in base:
                merged[key] = self.merge_values(base[key], value, child)
            else:
                merged[key] = self.without_claims(value, child)
        return merged

    def merge_values(self, base: Any, overlay: Any, path: str) -> Any:
        if isinstance(base, Mapping) and isinstance(overlay, Mapping):
            return self.merge_mappings(base, overlay, path)
        if is_named_list(base) and is_named_list(overlay):
            return self.merge_named_lists(base, overlay, path)
        if is_named_list(base) and overlay == []:
            # Clear, except what the command line set.
            return [
                copy_tree(item)
                for item in base
                if any(True for _ in self.claimed_within(item, item_path(path, item["name"])))
            ]
        if path in self.above_claims:
            held = next(self.claimed_within(base, path), None)
            if held is not None:
                raise ConfigError(
                    [
                        ConfigProblem(
                            source=self.source,
                            path=path,
                            message=(
                                f"cannot replace this {_describe(base)} with "
                                f"{_describe(overlay)}: it holds {held}, which the command line "
                                "set; give list items a `name` so they merge instead"
                            ),
                        )
                    ]
                )
        return self.without_claims(overlay, path)

    def merge_named_lists(self, base: list[Any], overlay: list[Any], path: str) -> list[Any]:
        merged: list[dict[str, Any]] = [copy_tree(item) for item in base]
        for item in overlay:
            name = item["name"]
            child = item_path(path, name)
            matches = [index for index, existing in enumerate(merged) if existing["name"] == name]
            if len(matches) > 1:
                raise ConfigError(
                    [
                        ConfigProblem(
                            source=self.source,
                            path=path,
                            message=(
                                f"ambiguous: {len(matches)} items are named {name!r}, so the "
                                "overlay item with that name cannot be merged into one of them"
                            ),
                        )
                    ]
                )
            if child in self.claims:
                continue
            if matches:
                merged[matches[0]] = self.merge_mappings(merged[matches[0]], item, child)
            else:
                merged.append(self.without_claims(item, child))
        return merged

    def without_claims(self, value: Any, path: str) -> Any:
        """A copy of an overlay-only value with every claimed path left out (it was absent)."""
        if path not in self.above_claims:
            return copy_tree(value)
        if isinstance(value, Mapping):
            return {
                key: self.without_claims(item, f"{path}/{key}")
                for key, item in value.items()
                if f"{path}/{key}" not in self.claims
            }
        if is_named_list(value):
            return [
                self.without_claims(item, item_path(path, item["name"]))
                for item in value
                if item_path(path, item["name"]) not in self.claims
            ]
        return copy_tree(value)

    def claimed_within(self, value: Any, path: str) -> Iterator[str]:
        """Claims at or below `path` that point at a value present in `value`."""
        if path in self.claims:
            yield path
            return
        if path not in self.above_claims:
            return
        if isinstance(value, Mapping):
            for key, item in value.items():
                yield from self.claimed_within(item, f"{path}/{key}")
        elif is_named_list(value):
            for item in value:
                yield from self.claimed_within(item, item_path(path, item["name"]))


def _slash_positions(claim: str) -> Iterator[int]:
    for index, char in enumerate(claim):
        if char == "/":
            yield index


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, list):
        if not value:
            return "an empty list"
        return "a named list" if is_named_list(value) else "a list without names"
    if isinstance(value, Mapping):
        return "a mapping"
    return f"a {type(value).__name__}"
