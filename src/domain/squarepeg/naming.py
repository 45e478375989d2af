"""Resource names: RFC1123 label validation and `squarepeg-<image-slug>-<hex>` generation."""

from __future__ import annotations

import re

from pegboard.domain.errors import UsageError
from pegboard.domain.kubernetes.names import MAX_LABEL_LENGTH, is_rfc1123_label

__all__ = [
    "MAX_LABEL_LENGTH",
    "MAX_SLUG_LENGTH",
    "NAME_PREFIX",
    "generate_name",
    "image_slug",
    "is_rfc1123_label",
    "validate_name",
]

MAX_SLUG_LENGTH = 46  # "squarepeg-" + 46 + "-" + 6 hex = 63
NAME_PREFIX = "squarepeg"

_NOT_SLUG = re.compile(r"[^a-z0-9-]+")
_HEX6 = re.compile(r"[0-9a-f]{6}")


def validate_name(name: str, *, flag: str = "--name") -> str:
    """Return `name` unchanged when it is a valid RFC1123 label; raise UsageError otherwise."""
    if not is_rfc1123_label(name):
        raise UsageError(
            f"{flag} {name!r}: must be a lowercase RFC1123 label (a-z, 0-9 and '-', "
            f"starting and ending alphanumeric, at most {MAX_LABEL_LENGTH} characters)"
        )
    return name


def image_slug(image: str) -> str:
    """The repository's last path component, without registry host, tag and digest, as a label part.

    `registry.example.com:5000/Team/My_Tool.v2:1.0@sha256:...` -> `my-tool-v2`.
    """
    ref = image.split("@", 1)[0]
    parts = ref.split("/")
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        parts = parts[1:]
    last = parts[-1]
    if ":" in last:
        last = last.rsplit(":", 1)[0]
    slug = _NOT_SLUG.sub("-", last.lower()).strip("-")
    slug = slug[:MAX_SLUG_LENGTH].rstrip("-")
    return slug or "image"


def generate_name(image: str, *, random_hex: str) -> str:
    """`squarepeg-<image-slug>-<random_hex>`; `random_hex` is 6 lowercase hex chars passed in."""
    if not _HEX6.fullmatch(random_hex):
        raise ValueError(f"random_hex must be 6 lowercase hex characters, got {random_hex!r}")
    return f"{NAME_PREFIX}-{image_slug(image)}-{random_hex}"
