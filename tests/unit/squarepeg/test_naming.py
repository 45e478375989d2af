"""Resource names: --name validation and generated squarepeg-<slug>-<hex> names."""

from __future__ import annotations

import pytest

from pegboard.domain.errors import UsageError
from pegboard.domain.squarepeg.naming import (
    generate_name,
    image_slug,
    is_rfc1123_label,
    validate_name,
)


@pytest.mark.parametrize("name", ["a", "job-1", "x" * 63, "0abc"])
def test_valid_names_are_used_verbatim(name: str) -> None:
    assert validate_name(name) == name


@pytest.mark.parametrize("name", ["", "A", "a.b", "-a", "a-", "x" * 64, "a_b", "a b"])
def test_invalid_names_are_rejected_naming_the_flag(name: str) -> None:
    with pytest.raises(UsageError, match=r"^--name"):
        validate_name(name)


@pytest.mark.parametrize(
    ("image", "slug"),
    [
        ("alpine", "alpine"),
        ("alpine:3.19", "alpine"),
        ("library/ubuntu:22.04", "ubuntu"),
        ("registry.example.com:5000/foo/bar:tag", "bar"),
        ("registry.example.com:5000/Team/My_Tool.v2:1.0@sha256:abc", "my-tool-v2"),
        ("localhost/thing", "thing"),
        ("localhost:5000/thing:1", "thing"),
        ("ghcr.io/org/img@sha256:deadbeef", "img"),
        ("___", "image"),
        ("a" * 80, "a" * 46),
        ("a" * 45 + "_b", "a" * 45),  # truncation never leaves a trailing '-'
    ],
)
def test_image_slug_strips_registry_tag_and_digest(image: str, slug: str) -> None:
    assert image_slug(image) == slug


def test_generated_name_has_prefix_slug_and_hex() -> None:
    assert generate_name("alpine:3", random_hex="a1b2c3") == "squarepeg-alpine-a1b2c3"


def test_generated_name_is_a_label_at_most_63() -> None:
    name = generate_name("x" * 200, random_hex="abcdef")
    assert len(name) == 63 and is_rfc1123_label(name)


def test_random_hex_must_be_six_hex_chars() -> None:
    with pytest.raises(ValueError):
        generate_name("alpine", random_hex="xyz")
