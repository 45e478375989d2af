"""Properties of the sweep's pacing (pure): Lease names, expiry, and the capped random pick."""

from __future__ import annotations

import random
import re

from hypothesis import given
from hypothesis import strategies as st

from pegboard.domain.kubernetes.labels import sanitize_label_value
from pegboard.domain.squarepeg.sweep_schedule import (
    lease_expired,
    new_sweep_lease,
    pick_deletes,
    sweep_lease_name,
    taken_lease,
)

DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
users = st.text(min_size=1, max_size=80).map(sanitize_label_value)


@given(users, users)
def test_lease_names_are_valid_and_one_per_user(a: str, b: str) -> None:
    for user in (a, b):
        name = sweep_lease_name(user)
        assert len(name) <= 253 and DNS_SUBDOMAIN.fullmatch(name), name
    assert (sweep_lease_name(a) == sweep_lease_name(b)) == (a == b)


@given(
    st.floats(1e9, 2e9),
    st.integers(1, 86400),
    st.floats(-100000, 100000),
)
def test_a_lease_is_due_exactly_when_its_interval_is_over(
    now: float, interval: int, later: float
) -> None:
    lease = new_sweep_lease(
        name="n", created_by="u", holder="h", now=now, interval_seconds=interval
    )
    # MicroTime keeps microseconds: the boundary may move by at most one of them.
    if later >= interval + 1e-5:
        assert lease_expired(lease, now=now + later)
    if later <= interval - 1e-5:
        assert not lease_expired(lease, now=now + later)
    taken = taken_lease(lease, holder="other", now=now + later, interval_seconds=interval)
    assert taken["spec"]["holderIdentity"] == "other"
    assert taken["spec"]["leaseTransitions"] == 1
    assert not lease_expired(taken, now=now + later + interval - 1e-3)


@given(st.lists(st.integers(), unique=True, max_size=300), st.integers(0, 400), st.integers())
def test_the_pick_is_a_capped_random_subset(items: list[int], cap: int, seed: int) -> None:
    chosen, left = pick_deletes(items, cap=cap, rng=random.Random(seed))
    assert len(chosen) == min(cap, len(items))
    assert left == len(items) - len(chosen)
    assert set(chosen) <= set(items) and len(set(chosen)) == len(chosen)
