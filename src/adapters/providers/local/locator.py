"""The local provider's locator: where its pods (directories) are."""

from __future__ import annotations

import attrs


@attrs.frozen
class LocalLocator:
    """Where the local provider's pods are: `pods_root` (None: this process's default)."""

    pods_root: str | None = None
