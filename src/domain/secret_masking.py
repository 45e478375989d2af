"""Mask secret values (`***`) in anything we print or record, as CI systems do in their logs.

A job's output reaches us in chunks, and a secret may be split across two of them: `stream()`
holds back only the few bytes that could still become a secret and releases them as soon as
they cannot, so the masked stream is always byte-for-byte `mask_bytes` of the whole output.

Which values count: each secret value, and each line of a multi-line value (a key file, a
JSON credential), stripped; values shorter than MIN_SECRET_LENGTH are not masked (masking
"1" or "on" would garble every log line without hiding anything). When two secrets overlap,
the leftmost match wins and the longer one first at the same position.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MASK = "***"
MIN_SECRET_LENGTH = 3


def secret_values(raw: Iterable[str]) -> tuple[str, ...]:
    """The strings to mask for these raw secret values (whole values and their lines)."""
    found: set[str] = set()
    for value in raw:
        for candidate in (value, value.strip(), *value.splitlines()):
            candidate = candidate.strip("\r")
            if len(candidate.strip()) >= MIN_SECRET_LENGTH:
                found.add(candidate)
                found.add(candidate.strip())
    return tuple(sorted(found, key=lambda s: (-len(s), s)))


class SecretMasker:
    """Masks a fixed set of secret values in text, bytes, and byte streams."""

    def __init__(self, raw_secrets: Iterable[str]) -> None:
        values = secret_values(raw_secrets)
        self._text = [v for v in values if v]
        self._bytes = sorted({v.encode() for v in self._text}, key=lambda b: (-len(b), b))
        self._text_re = _alternation_text(self._text)
        self._bytes_re = _alternation_bytes(self._bytes)
        self.longest = max((len(b) for b in self._bytes), default=0)

    def __bool__(self) -> bool:
        return bool(self._bytes)

    def mask_text(self, text: str) -> str:
        return self._text_re.sub(MASK, text) if self._text_re is not None else text

    def mask_bytes(self, data: bytes) -> bytes:
        return self._bytes_re.sub(MASK.encode(), data) if self._bytes_re is not None else data

    def stream(self) -> MaskingStream:
        """A fresh masker for one byte stream (keeps the undecided tail between chunks)."""
        return MaskingStream(self)

    def undecided_from(self, buffer: bytes) -> int:
        """The first index where a secret may start but the buffer ends before deciding it."""
        start = max(0, len(buffer) - self.longest + 1)
        for index in range(start, len(buffer)):
            tail = buffer[index:]
            if any(len(s) > len(tail) and s.startswith(tail) for s in self._bytes):
                return index
        return len(buffer)

    def matches(self, buffer: bytes) -> Iterable[re.Match[bytes]]:
        return self._bytes_re.finditer(buffer) if self._bytes_re is not None else ()


class MaskingStream:
    """feed() chunks, get back what is safe to show now; flush() at the end of the stream."""

    def __init__(self, masker: SecretMasker) -> None:
        self._masker = masker
        self._pending = b""

    def feed(self, chunk: bytes) -> bytes:
        if not self._masker:
            return chunk
        buffer = self._pending + chunk
        cut = self._masker.undecided_from(buffer)
        # A match that starts before the undecided point is final; emit it whole.
        for match in self._masker.matches(buffer):
            if match.start() >= cut:
                break
            cut = max(cut, match.end())
        self._pending = buffer[cut:]
        return self._masker.mask_bytes(buffer[:cut])

    def flush(self) -> bytes:
        rest, self._pending = self._pending, b""
        return self._masker.mask_bytes(rest)


def mask_text(text: str, raw_secrets: Iterable[str]) -> str:
    """`text` with every secret value replaced by ***."""
    return SecretMasker(raw_secrets).mask_text(text)


def _alternation_text(values: list[str]) -> re.Pattern[str] | None:
    return re.compile("|".join(re.escape(v) for v in values)) if values else None


def _alternation_bytes(values: list[bytes]) -> re.Pattern[bytes] | None:
    return re.compile(b"|".join(re.escape(v) for v in values)) if values else None
