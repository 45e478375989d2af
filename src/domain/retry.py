"""One retry policy for every wait on something remote (pure): bounded, exponential, capped.

`Backoff` says how long to wait before attempt 1, 2, ...: `first_delay * factor**(n-1)`, capped
at `max_delay`, passed through `jitter` (the app hands in a random one; the default adds none,
so the domain stays deterministic). `RetryBudget` counts attempts within one *outage*: it ends as
soon as the thing works again (`recovered()`), which resets the budget, so a stream cut every few
hours never exhausts it while a dead server does. Used by the log pump's reconnects, the pod
watch's renewals, and runpod-deploy's ready wait and monitor.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr

Jitter = Callable[[float], float]


def no_jitter(delay: float) -> float:
    return delay


@attrs.frozen
class Backoff:
    """Delays before attempt 1, 2, ...; at most `attempts_per_outage` attempts an outage."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    first_delay: float = 0.2
    factor: float = 2.0
    max_delay: float = 5.0
    attempts_per_outage: int = 6
    jitter: Jitter = attrs.field(default=no_jitter, eq=False)

    def delay(self, attempt: int) -> float:
        """The wait before attempt `attempt` (1-based): never negative, never above max_delay."""
        base = min(self.max_delay, self.first_delay * self.factor ** max(0, attempt - 1))
        return float(min(self.max_delay, max(0.0, self.jitter(base))))


@attrs.define
class RetryBudget:
    """Counts attempts within the current outage."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq

    policy: Backoff = Backoff()
    attempts: int = 0

    def next_delay(self) -> float | None:
        """Seconds to wait before the next attempt, or None once this outage's budget is spent."""
        if self.attempts >= self.policy.attempts_per_outage:
            return None
        self.attempts += 1
        return self.policy.delay(self.attempts)

    def recovered(self) -> None:
        """It worked again: the outage is over, the budget is whole."""
        self.attempts = 0
