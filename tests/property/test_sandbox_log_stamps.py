"""The sandbox's rendering of a chunk's records, each with its own time (`stamped_parts`: the
date and clock once per second, the fraction's digits from tables), against the plain reading of
the kubelet's rendering: every record after the prefix of its own time, formatted alone. Any
step, any time (seconds and thousands of records crossed inside a chunk), a start inside the
chunk (tail, since), the first record with or without its prefix, a final partial record."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pegboard.adapters.kube_semantics.logs import timestamp_prefix
from pegboard.adapters.sandboxes.kubernetes.logs import stamped_parts

NANOS = 1_000_000_000


def reference(
    records: list[bytes], ended: bool, first: int, step: int, first_prefix: bool
) -> bytes:
    out = b""
    for index, record in enumerate(records):
        newline = b"\n" if ended or index < len(records) - 1 else b""
        prefix = timestamp_prefix(first + index * step) if index or first_prefix else b""
        out += prefix + record + newline
    return out


@given(
    records=st.lists(
        st.binary(max_size=6).map(lambda b: b.replace(b"\n", b"\r")), min_size=1, max_size=2500
    ),
    ended=st.booleans(),
    step=st.sampled_from([0, 1, 10, 100, 1000]),
    second=st.integers(0, 4_000_000_000),
    # Near the end of a second or of a thousand steps, or anywhere.
    fraction=st.one_of(st.integers(NANOS - 2_000_000, NANOS - 1), st.integers(0, NANOS - 1)),
    before=st.integers(0, 2500),
    first_prefix=st.booleans(),
)
def test_each_record_gets_the_prefix_of_its_own_time(
    records: list[bytes],
    ended: bool,
    step: int,
    second: int,
    fraction: int,
    before: int,
    first_prefix: bool,
) -> None:
    if not ended and not records[-1]:
        records[-1] = b"p"  # a chunk ends with a newline or with a partial record's bytes
    chunk = b"\n".join(records) + (b"\n" if ended else b"")
    before = min(before, len(records) - 1)
    first = second * NANOS + fraction
    if step:
        first -= first % step  # the sandbox puts records on their step's grid
    stamps = (first, step, first + (len(records) - 1) * step)  # as the log stores them
    rest = chunk.split(b"\n", before)[-1] if before else chunk
    got = b"".join(
        bytes(part)
        for part in stamped_parts(rest, stamps, before=before, first_prefix=first_prefix)
    )
    expected = reference(records[before:], ended, first + before * step, step, first_prefix)
    assert got == expected
