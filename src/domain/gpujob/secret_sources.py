"""Whether each secret's source is there, checked before any pod exists.

`validate` and both dry runs use this (0.8.4's validate let a missing source through, and only
`run` failed). Presence only: an environment variable is set, a local file exists; no value is
read here, so an offline dry run stays free of secret values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.gpujob.templates import RenderedSecret


@attrs.frozen
class MissingSecretSource:
    """One secret whose source is missing: its index in `secrets` and a one-line reason."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    index: int
    name: str
    message: str


def missing_secret_sources(
    secrets: Sequence[RenderedSecret],
    *,
    is_set: Callable[[str], bool],
    is_file: Callable[[str], bool],
) -> list[MissingSecretSource]:
    """Every missing source: each unset environment variable and each absent file."""
    missing: list[MissingSecretSource] = []
    for index, secret in enumerate(secrets):
        if secret.file is not None and not is_file(secret.file):
            missing.append(
                MissingSecretSource(
                    index, secret.name, f"secret {secret.name!r}: no such file {secret.file}"
                )
            )
        for _, variable in secret.env_keys:
            if not is_set(variable):
                missing.append(
                    MissingSecretSource(
                        index,
                        secret.name,
                        f"secret {secret.name!r}: environment variable {variable} is not set",
                    )
                )
    return missing


__all__ = ["MissingSecretSource", "missing_secret_sources"]
