"""The local provider's locator: where its pods (directories) are."""

from __future__ import annotations

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr


@attrs.frozen
class LocalLocator:
    """Where the local provider's pods are: `pods_root` (None: this process's default)."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    pods_root: str | None = None
