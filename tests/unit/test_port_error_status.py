"""One mapping from an HTTP status to a PortError class: the adapters raise by it, the create
hints read a bare PortError by it."""

from __future__ import annotations

import pytest

from pegboard.adapters.kubernetes_errors import Gone, error_for_status
from pegboard.domain.errors import (
    Conflict,
    Forbidden,
    Invalid,
    NotFound,
    PortError,
    Transient,
    Unauthorized,
    error_kind,
    port_error_class,
)
from pegboard.domain.ports.cluster import ResourceKind
from pegboard.domain.squarepeg.create_errors import create_failure_message

STATUSES = [
    (400, Invalid),
    (401, Unauthorized),
    (403, Forbidden),
    (404, NotFound),
    (409, Conflict),
    (422, Invalid),
    (429, Transient),
    (500, Transient),
    (503, Transient),
    (418, PortError),
    (None, PortError),
]


@pytest.mark.parametrize(("status", "expected"), STATUSES)
def test_port_error_class(status: int | None, expected: type[PortError]) -> None:
    assert port_error_class(status) is expected
    assert error_kind(PortError("x", status=status)) is expected
    if status is not None:
        assert type(error_for_status(status, "x")) is expected


def test_a_typed_error_keeps_its_class_and_410_is_gone() -> None:
    assert error_kind(NotFound("x", status=500)) is NotFound
    assert isinstance(error_for_status(410, "too old"), Gone)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 503])
def test_create_hint_is_the_same_for_a_bare_port_error_and_its_class(status: int) -> None:
    def message(error: PortError) -> str:
        return create_failure_message(error, kind=ResourceKind.POD, name="p", namespace="ns")

    typed = port_error_class(status)("refused", status=status)
    assert message(PortError("refused", status=status)) == message(typed)
    assert "(" in message(typed)  # every one of these has a hint
