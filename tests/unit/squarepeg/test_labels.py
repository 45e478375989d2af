"""Label keys, label-value sanitising and -l/--label parsing."""

from __future__ import annotations

import pytest

from pegboard.domain.errors import UsageError
from pegboard.domain.kubernetes import labels
from pegboard.domain.kubernetes.labels import (
    is_label_value,
    own_labels,
    parse_user_labels,
    sanitize_label_value,
)


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("jane", "jane"),
        ("Jane Doe@corp.example", "Jane-Doe-corp.example"),
        ("", "unknown"),
        ("@@@", "unknown"),
        ("-._x._-", "x"),
        ("a" * 62 + "-b", "a" * 62),  # cut at 63 leaves a trailing '-': stripped
        ("a" * 62 + ".bcd", "a" * 62),
        ("é", "unknown"),
    ],
)
def test_sanitize(raw: str, value: str) -> None:
    assert sanitize_label_value(raw) == value
    assert is_label_value(sanitize_label_value(raw))


def test_own_labels_in_order_with_keep_only_when_kept() -> None:
    assert list(own_labels(run_id="r", created_by="me", keep=False)) == [
        labels.MANAGED_BY,
        labels.RUN_ID,
        labels.CREATED_BY,
    ]
    kept = own_labels(run_id="r", created_by="me", keep=True)
    assert kept[labels.KEEP] == "true"
    assert kept[labels.MANAGED_BY] == "squarepeg"


def test_user_labels() -> None:
    assert parse_user_labels(["team=ml", "example.com/tier=gold", "flag"]) == {
        "team": "ml",
        "example.com/tier": "gold",
        "flag": "",
    }


@pytest.mark.parametrize(
    "raw",
    ["=x", "bad key=x", "k=bad value", "k=" + "v" * 64, "Example.COM/x=1", "squarepeg.io/keep=no"],
)
def test_bad_user_labels_name_the_flag(raw: str) -> None:
    with pytest.raises(UsageError, match=r"^--label"):
        parse_user_labels([raw])
