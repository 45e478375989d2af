"""Injected failures, the same on every fake that can fail:

    fake.fail_next(operation, error, *, times=1, when=None)

The next `times` calls of `operation` (a port method name) for which `when(call)` is true (or
every call, without `when`) raise `error`; other calls go through. `call` is what the fake
records for a call: FakeCluster's FakeRequest, or a FakeCall (operation and main arguments) for
the other fakes. Failures queued for one operation fire in the order they were added.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import ClassVar, Generic, Protocol, TypeVar

__all__ = [
    "FailsOnDemand",
    "FakeCall",
    "InjectedFailures",
]


class _Call(Protocol):
    @property
    def operation(self) -> str: ...


CallT = TypeVar("CallT", bound=_Call)


@dataclass(frozen=True)
class FakeCall:
    """One call of a fake's port method, as a `when` predicate sees it.

    args are the call's identifying arguments, in order: a pod id, a command, paths.
    """

    operation: str
    args: tuple[str, ...] = ()


@dataclass
class _Failure(Generic[CallT]):
    operation: str
    error: BaseException
    remaining: int
    when: Callable[[CallT], bool] | None


class InjectedFailures(Generic[CallT]):
    """The failures queued on one fake (thread-safe)."""

    def __init__(self, operations: Iterable[str]) -> None:
        self.operations = frozenset(operations)
        self._failures: list[_Failure[CallT]] = []
        self._lock = threading.Lock()

    def queue(self, failure: _Failure[CallT]) -> None:
        """Queue a failure (fail_next checked it)."""
        with self._lock:
            self._failures.append(failure)

    def raise_if_due(self, call: CallT) -> None:
        """Raise the first failure queued for this call, counting it down."""
        with self._lock:
            for failure in self._failures:
                if failure.operation == call.operation and (
                    failure.when is None or failure.when(call)
                ):
                    failure.remaining -= 1
                    if failure.remaining <= 0:
                        self._failures.remove(failure)
                    raise failure.error


class FailsOnDemand(Generic[CallT]):
    """The one fail_next of every fake (a mixin): the fake gives its queue in `_injected()`;
    `fail_operations`, when set, narrows it to the operations of the fake's own port (FakeShell
    and FakeFileSync share their FakeHost's queue)."""

    fail_operations: ClassVar[frozenset[str] | None] = None

    def _injected(self) -> InjectedFailures[CallT]:
        raise NotImplementedError

    def fail_next(
        self,
        operation: str,
        error: BaseException,
        *,
        times: int = 1,
        when: Callable[[CallT], bool] | None = None,
    ) -> None:
        """The next `times` calls of `operation` (a port method name) for which `when(call)` is
        true (every call, without `when`) raise `error`; see docs/testing-with-fakes.md."""
        injected = self._injected()
        known = injected.operations if self.fail_operations is None else self.fail_operations
        if operation not in known:
            raise ValueError(f"unknown operation {operation!r}; one of {sorted(known)}")
        if times < 1:
            raise ValueError(f"times must be at least 1, got {times}")
        injected.queue(_Failure(operation, error, times, when))
