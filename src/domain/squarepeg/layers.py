"""Config layers -> one validated SquarepegConfig (interpolate, validate, merge, profile).

Layers come lowest precedence first; layer 0 is the built-in defaults document. Each layer is
interpolated and validated on its own (so problems name their file and line), then its top-level
keys are deep-merged over the layers below. A selected profile applies at its own layer's
precedence: right after that layer's top-level keys, so a higher layer's top-level key still wins
(squarepeg 0.4.1 applied it over everything, so a HOME-file profile beat a `--config` file).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.documents import SourceDocument
from pegboard.domain.errors import ConfigError, ConfigProblem
from pegboard.domain.squarepeg.config import (
    DEFAULT_GPU_RESOURCE,
    DEFAULT_GPU_RUNTIME_CLASS,
    DEFAULT_ORPHAN_SWEEP_INTERVAL_SECONDS,
    DEFAULT_ORPHAN_SWEEP_MIN_AGE_SECONDS,
    DEFAULT_TIMEOUT_SECONDS,
    SquarepegConfig,
)
from pegboard.domain.squarepeg.interpolation import interpolate_document
from pegboard.domain.squarepeg.merge import copy_tree, deep_merge

__all__ = [
    "BUILT_IN_SOURCE",
    "MERGED_SOURCE",
    "MergedConfig",
    "built_in_defaults",
    "config_from_layers",
    "merge_layers",
]

BUILT_IN_SOURCE = "<built-in defaults>"
MERGED_SOURCE = "<merged config>"
# Sections that may be left empty (null) in a file: they then add nothing, as in 0.4.1.
_SECTIONS = ("defaults", "volumes", "kubernetes", "job", "profiles")


@attrs.frozen
class MergedConfig:
    """The result of merging every layer."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    config: SquarepegConfig
    sources: tuple[str, ...]  # every document merged, lowest precedence first
    data: dict[str, Any]  # merged, interpolated, profile applied, no `profiles` (config show)
    profile: str | None = None


def built_in_defaults() -> SourceDocument:
    """Layer 0: the defaults squarepeg uses when no file sets a key (shown by `config show`)."""
    return SourceDocument(
        source=BUILT_IN_SOURCE,
        data={
            "mode": "pod",
            "cleanup": True,
            "timeout": DEFAULT_TIMEOUT_SECONDS,
            "quiet": False,
            "allow_host_path_mounts": False,
            "allow_privileged": False,
            "security": "default",
            "lenient_tls": False,
            "kube_expand": False,
            "orphan_sweep": True,
            "orphan_sweep_min_age": DEFAULT_ORPHAN_SWEEP_MIN_AGE_SECONDS,
            "orphan_sweep_interval": DEFAULT_ORPHAN_SWEEP_INTERVAL_SECONDS,
            "defaults": {
                "gpu_resource": DEFAULT_GPU_RESOURCE,
                "gpu_runtime_class": DEFAULT_GPU_RUNTIME_CLASS,
            },
        },
    )


def merge_layers(
    docs: Sequence[SourceDocument], *, environ: Mapping[str, str], profile: str | None
) -> MergedConfig:
    """Merge `docs` (lowest precedence first); one ConfigError lists every problem found."""
    if profile is None and list(docs) == [built_in_defaults()]:
        # No config file: the built-in defaults are SquarepegConfig()'s own (a test holds it),
        # so there is nothing to validate, and cattrs (~20 ms to import, ~5 ms to compile its
        # hooks) stays unloaded: most of a config-less `run --dry-run`'s validation cost.
        return MergedConfig(
            config=SquarepegConfig(),
            sources=(BUILT_IN_SOURCE,),
            data=_in_schema_order(copy_tree(docs[0].data)),
        )
    from pegboard.domain.squarepeg.config_validation import validate_document

    problems: list[ConfigProblem] = []
    prepared: list[SourceDocument] = []
    for doc in docs:
        try:
            interpolated = interpolate_document(doc, environ)
            validate_document(interpolated)
        except ConfigError as exc:
            problems.extend(exc.problems)
            continue
        prepared.append(interpolated)
    if problems:
        raise ConfigError(problems)

    merged: dict[str, Any] = {}
    all_profiles: dict[str, Any] = {}
    found_profile = False
    for doc in prepared:
        top = _without_empty_sections(doc.data)
        profiles = top.pop("profiles", {})
        merged = deep_merge(merged, top, source=doc.source)
        all_profiles = deep_merge(all_profiles, profiles, source=doc.source)
        if profile is not None and profile in profiles:
            found_profile = True
            body = _without_empty_sections(profiles[profile])
            merged = deep_merge(merged, body, source=f"{doc.source} (profile {profile})")

    if profile is not None and not found_profile:
        available = ", ".join(sorted(all_profiles)) or "none are defined"
        raise ConfigError(
            [
                ConfigProblem(
                    source="--profile",
                    path="",
                    message=f"unknown profile {profile!r}; available profiles: {available}",
                )
            ]
        )
    config = validate_document(
        SourceDocument(source=MERGED_SOURCE, data={**merged, "profiles": all_profiles})
    )
    return MergedConfig(
        config=config,
        sources=tuple(doc.source for doc in docs),
        data=_in_schema_order(merged),
        profile=profile,
    )


def _in_schema_order(data: dict[str, Any]) -> dict[str, Any]:
    """Top-level keys in the order the reference documents them (for `config show`)."""
    order = {name: index for index, name in enumerate(attrs.fields_dict(SquarepegConfig))}
    return dict(sorted(data.items(), key=lambda item: order.get(item[0], len(order))))


def _without_empty_sections(data: Mapping[str, Any]) -> dict[str, Any]:
    """A copy without null sections, so `defaults:` with every child commented out is a no-op."""
    copied: dict[str, Any] = copy_tree(data)
    for key in _SECTIONS:
        if key in copied and copied[key] is None:
            del copied[key]
    return copied


def config_from_layers(
    layers: Sequence[SourceDocument | Mapping[str, Any]],
    *,
    environ: Mapping[str, str],
    profile: str | None = None,
) -> SquarepegConfig:
    """Config layers (lowest precedence first; SourceDocuments or plain mappings) -> the merged
    config: the built-in defaults first, each layer interpolated with `environ` and validated.
    The one merge entry point of the library (render.py's resolve_run uses it too)."""
    docs = [built_in_defaults()]
    for index, layer in enumerate(layers, start=1):
        if isinstance(layer, SourceDocument):
            docs.append(layer)
        else:
            docs.append(SourceDocument(source=f"<layer {index}>", data=copy_tree(layer)))
    return merge_layers(docs, environ=environ, profile=profile).config
