"""Secret masking: whole texts, multi-line values, and streams split at any byte."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from pegboard.domain.secret_masking import MASK, SecretMasker, mask_text, secret_values


def stream_through(masker: SecretMasker, chunks: list[bytes]) -> bytes:
    stream = masker.stream()
    return b"".join(stream.feed(chunk) for chunk in chunks) + stream.flush()


def test_every_occurrence_is_masked() -> None:
    assert mask_text("token=s3cr3t; again s3cr3t.", ["s3cr3t"]) == "token=***; again ***."


def test_longer_secret_wins_over_its_prefix() -> None:
    assert mask_text("key abcdef and abc", ["abc", "abcdef"]) == "key *** and ***"


def test_multi_line_values_are_masked_line_by_line() -> None:
    key = "-----BEGIN KEY-----\nMIIBVwIBADANBgkq\n-----END KEY-----\n"
    printed = "cat says: MIIBVwIBADANBgkq\n"
    assert mask_text(printed, [key]) == "cat says: ***\n"


def test_short_values_are_not_masked() -> None:
    assert secret_values(["1", "on", "  ", ""]) == ()
    assert mask_text("debug=1 on", ["1", "on"]) == "debug=1 on"


def test_a_secret_split_across_chunks_never_shows() -> None:
    masker = SecretMasker(["hunter2-token"])
    chunks = [b"log: hun", b"ter2-to", b"ken done\n"]
    assert stream_through(masker, chunks) == b"log: *** done\n"


def test_an_undecided_tail_is_released_once_it_cannot_be_a_secret() -> None:
    stream = SecretMasker(["hunter2-token"]).stream()
    assert stream.feed(b"a hunt") == b"a "
    assert stream.feed(b"ing trip\n") == b"hunting trip\n"
    assert stream.flush() == b""


def test_flush_emits_an_incomplete_prefix_unmasked() -> None:
    stream = SecretMasker(["hunter2-token"]).stream()
    assert stream.feed(b"ends with hunter") == b"ends with "
    assert stream.flush() == b"hunter"


def test_no_secrets_is_a_pass_through() -> None:
    stream = SecretMasker([]).stream()
    assert stream.feed(b"abc") == b"abc"
    assert mask_text("abc", []) == "abc"


_ALPHABET = "ab01\n-"  # small, so secrets overlap and recur often
_secret = st.text(alphabet=_ALPHABET, min_size=3, max_size=8).filter(lambda s: len(s.strip()) >= 3)


@given(
    secrets=st.lists(_secret, min_size=1, max_size=3),
    pieces=st.lists(st.text(alphabet=_ALPHABET + "xyz", max_size=10), max_size=8),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=10),
    data=st.data(),
)
def test_streaming_equals_masking_the_whole_output(
    secrets: list[str], pieces: list[str], cuts: list[int], data: st.DataObject
) -> None:
    # Build an output that contains the secrets, then split it at arbitrary byte positions.
    text = "".join(piece + data.draw(st.sampled_from(secrets)) for piece in pieces).encode()
    bounds = sorted({min(cut, len(text)) for cut in cuts} | {0, len(text)})
    chunks = [text[a:b] for a, b in itertools.pairwise(bounds)]
    masker = SecretMasker(secrets)
    streamed = stream_through(masker, chunks)
    assert streamed == masker.mask_bytes(text)
    for value in secret_values(secrets):
        assert value.encode() not in streamed
    assert MASK.encode() in streamed or not pieces  # every piece is followed by a secret
