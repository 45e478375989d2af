"""The labels squarepeg puts on every Pod/Job, label-value sanitising and `-l/--label` parsing."""

from __future__ import annotations

import re
from collections.abc import Iterable

from pegboard.domain.errors import UsageError

__all__ = [
    "CREATED_BY",
    "KEEP",
    "KEEP_VALUE",
    "MANAGED_BY",
    "MANAGED_BY_VALUE",
    "MAX_VALUE_LENGTH",
    "OWN_LABEL_KEYS",
    "RUNNER_ALIVE_UNTIL",
    "RUN_ID",
    "is_label_key",
    "is_label_value",
    "own_labels",
    "parse_user_labels",
    "sanitize_label_value",
]

MANAGED_BY = "app.kubernetes.io/managed-by"
RUN_ID = "squarepeg.io/run-id"
CREATED_BY = "squarepeg.io/created-by"
KEEP = "squarepeg.io/keep"
# Annotation (not a label: it changes every renewal, and selectors never need it): until when the
# runner that created the resource promises to be alive. See runner_heartbeat.py.
RUNNER_ALIVE_UNTIL = "squarepeg.io/runner-alive-until"

MANAGED_BY_VALUE = "squarepeg"
KEEP_VALUE = "true"
OWN_LABEL_KEYS = (MANAGED_BY, RUN_ID, CREATED_BY, KEEP)

MAX_VALUE_LENGTH = 63
_INVALID_VALUE_CHAR = re.compile(r"[^A-Za-z0-9_.-]")
_EDGE = "-_."
_VALUE = re.compile(r"([A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?)?")
_NAME_PART = re.compile(r"[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*")


def sanitize_label_value(raw: str) -> str:
    """Any string as a valid label value: `[A-Za-z0-9_.-]`, ≤ 63, alphanumeric ends, never empty.

    `Jane Doe@corp.example` -> `Jane-Doe-corp.example`; nothing usable -> `unknown`.
    """
    value = _INVALID_VALUE_CHAR.sub("-", raw).strip(_EDGE)
    # Truncation can expose a '-', '.' or '_' at the end: strip again afterwards.
    value = value[:MAX_VALUE_LENGTH].strip(_EDGE)
    return value or "unknown"


def is_label_value(value: str) -> bool:
    return len(value) <= MAX_VALUE_LENGTH and _VALUE.fullmatch(value) is not None


def is_label_key(key: str) -> bool:
    """A qualified name: optional DNS-subdomain prefix (≤ 253) and '/', then a name ≤ 63."""
    prefix, slash, name = key.rpartition("/")
    if slash and (len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        return False
    return len(name) <= MAX_VALUE_LENGTH and _NAME_PART.fullmatch(name) is not None


def own_labels(*, run_id: str, created_by: str, keep: bool) -> dict[str, str]:
    """squarepeg's own labels, in the order 0.4.1 emitted them; `created_by` is sanitised here."""
    labels = {
        MANAGED_BY: MANAGED_BY_VALUE,
        RUN_ID: sanitize_label_value(run_id),
        CREATED_BY: sanitize_label_value(created_by),
    }
    if keep:
        labels[KEEP] = KEEP_VALUE
    return labels


def parse_user_labels(raw: Iterable[str], *, flag: str = "--label") -> dict[str, str]:
    """`-l KEY=VALUE` (or bare `KEY`, an empty value, as docker does) -> validated labels."""
    labels: dict[str, str] = {}
    for item in raw:
        key, _, value = item.partition("=")
        if not is_label_key(key):
            raise UsageError(f"{flag} {item!r}: {key!r} is not a valid Kubernetes label key")
        if key in OWN_LABEL_KEYS:
            raise UsageError(f"{flag} {item!r}: {key} is set by squarepeg itself")
        if not is_label_value(value):
            raise UsageError(
                f"{flag} {item!r}: label values are at most 63 characters of A-Z, a-z, 0-9, "
                "'-', '_' and '.', starting and ending alphanumeric"
            )
        labels[key] = value
    return labels
