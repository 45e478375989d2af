"""RFC 6455 WebSocket, the server's side: the handshake's accept key, client frames parsed
incrementally (masking, fragmentation, control frames between fragments), frames written.

Only what an exec session needs: the caller owns the socket and its one I/O thread (TLS sockets
must not be read and written from two threads at once), feeds whatever it received into
`FrameParser.feed` and writes `frame(...)` bytes itself.
"""

from __future__ import annotations

import base64
import hashlib
import struct
from collections.abc import Iterable

OP_CONTINUATION = 0x0
OP_TEXT = 0x1
OP_BINARY = 0x2
OP_CLOSE = 0x8
OP_PING = 0x9
OP_PONG = 0xA
_CONTROL = (OP_CLOSE, OP_PING, OP_PONG)
_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455 section 1.3

CLOSE_NORMAL = 1000
CLOSE_PROTOCOL_ERROR = 1002
CLOSE_TOO_BIG = 1009
MAX_MESSAGE_BYTES = 64 << 20  # a client message larger than this closes the connection (1009)


class WebSocketProtocolError(Exception):
    """The client broke RFC 6455; `code` is the close code to answer with."""

    def __init__(self, message: str, code: int = CLOSE_PROTOCOL_ERROR) -> None:
        super().__init__(message)
        self.code = code


def accept_key(key: str) -> str:
    """Sec-WebSocket-Accept for a Sec-WebSocket-Key (RFC 6455 section 4.2.2, item 5.4)."""
    return base64.b64encode(hashlib.sha1(key.strip().encode() + _GUID).digest()).decode()


def is_upgrade_request(upgrade: str | None, connection: str | None) -> bool:
    """`Upgrade: websocket` with `Connection: Upgrade` (a token of a comma-separated list)."""
    tokens = {token.strip().lower() for token in (connection or "").split(",")}
    return (upgrade or "").strip().lower() == "websocket" and "upgrade" in tokens


def offered_protocols(headers: Iterable[str]) -> list[str]:
    """The Sec-WebSocket-Protocol values in the client's order (one or many headers, commas)."""
    return [part.strip() for value in headers for part in value.split(",") if part.strip()]


def frame(opcode: int, payload: bytes = b"") -> bytes:
    """One final, unmasked frame (servers never mask: RFC 6455 section 5.1)."""
    size = len(payload)
    if size < 126:
        header = struct.pack("!BB", 0x80 | opcode, size)
    elif size < 1 << 16:
        header = struct.pack("!BBH", 0x80 | opcode, 126, size)
    else:
        header = struct.pack("!BBQ", 0x80 | opcode, 127, size)
    return header + payload


def close_payload(code: int, reason: str = "") -> bytes:
    return struct.pack("!H", code) + reason.encode()[:123]


def _unmask(payload: bytes, mask: bytes) -> bytes:
    """XOR with the 4-byte key, as one big-integer operation (fast for large frames)."""
    size = len(payload)
    if not size:
        return b""
    key = (mask * (size // 4 + 1))[:size]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(key, "big")).to_bytes(size, "big")


class FrameParser:
    """Turns the client's bytes into messages: `(opcode, payload)`, data messages whole
    (fragments joined), control frames as they come (they may arrive between fragments)."""

    def __init__(self, *, max_message_bytes: int = MAX_MESSAGE_BYTES) -> None:
        self._buffer = bytearray()
        self._max = max_message_bytes
        self._fragment_op: int | None = None
        self._fragments: list[bytes] = []
        self._fragment_size = 0

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        self._buffer += data
        messages: list[tuple[int, bytes]] = []
        while (parsed := self._next_frame()) is not None:
            fin, opcode, payload = parsed
            message = self._assemble(fin, opcode, payload)
            if message is not None:
                messages.append(message)
        return messages

    def _next_frame(self) -> tuple[bool, int, bytes] | None:
        buffer = self._buffer
        if len(buffer) < 2:
            return None
        first, second = buffer[0], buffer[1]
        if first & 0x70:
            raise WebSocketProtocolError("reserved bits set without a negotiated extension")
        if not second & 0x80:
            raise WebSocketProtocolError("a client frame must be masked (RFC 6455 section 5.1)")
        opcode = first & 0x0F
        size = second & 0x7F
        offset = 2
        if size == 126:
            if len(buffer) < 4:
                return None
            size = struct.unpack_from("!H", buffer, 2)[0]
            offset = 4
        elif size == 127:
            if len(buffer) < 10:
                return None
            size = struct.unpack_from("!Q", buffer, 2)[0]
            offset = 10
        if opcode in _CONTROL and (size > 125 or not first & 0x80):
            raise WebSocketProtocolError("a control frame must be final and at most 125 bytes")
        if size > self._max:
            raise WebSocketProtocolError("message too big", CLOSE_TOO_BIG)
        if len(buffer) < offset + 4 + size:
            return None
        mask = bytes(buffer[offset : offset + 4])
        payload = _unmask(bytes(buffer[offset + 4 : offset + 4 + size]), mask)
        del buffer[: offset + 4 + size]
        return bool(first & 0x80), opcode, payload

    def _assemble(self, fin: bool, opcode: int, payload: bytes) -> tuple[int, bytes] | None:
        if opcode in _CONTROL:
            return opcode, payload
        if opcode in (OP_TEXT, OP_BINARY):
            if self._fragment_op is not None:
                raise WebSocketProtocolError("a new message began inside a fragmented one")
            if fin:
                return opcode, payload
            self._fragment_op, self._fragments, self._fragment_size = (
                opcode,
                [payload],
                len(payload),
            )
            return None
        if opcode == OP_CONTINUATION:
            if self._fragment_op is None:
                raise WebSocketProtocolError("a continuation frame without a message to continue")
            self._fragments.append(payload)
            self._fragment_size += len(payload)
            if self._fragment_size > self._max:
                raise WebSocketProtocolError("message too big", CLOSE_TOO_BIG)
            if not fin:
                return None
            message = (self._fragment_op, b"".join(self._fragments))
            self._fragment_op, self._fragments, self._fragment_size = None, [], 0
            return message
        raise WebSocketProtocolError(f"unknown opcode {opcode:#x}")
