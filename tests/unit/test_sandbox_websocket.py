"""The sandbox's RFC 6455 frame parser: masking, fragmentation, control frames between
fragments, and the violations that close the connection."""

from __future__ import annotations

import os
import struct

import pytest

from pegboard.adapters.sandboxes.kubernetes.websocket import (
    OP_BINARY,
    OP_CONTINUATION,
    OP_PING,
    OP_TEXT,
    FrameParser,
    WebSocketProtocolError,
    accept_key,
    frame,
    offered_protocols,
)


def client_frame(opcode: int, payload: bytes, *, fin: bool = True, mask: bool = True) -> bytes:
    """A frame as RFC 6455 section 5.2 lays it out (what any client library sends)."""
    first = (0x80 if fin else 0) | opcode
    size = len(payload)
    if size < 126:
        header = struct.pack("!BB", first, (0x80 if mask else 0) | size)
    elif size < 1 << 16:
        header = struct.pack("!BBH", first, (0x80 if mask else 0) | 126, size)
    else:
        header = struct.pack("!BBQ", first, (0x80 if mask else 0) | 127, size)
    if not mask:
        return header + payload
    key = os.urandom(4)
    return header + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def test_accept_key_is_the_rfc_example() -> None:
    # RFC 6455 section 1.3
    assert accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="


def test_offered_protocols_keep_the_clients_order() -> None:
    offered = offered_protocols(["v5.channel.k8s.io, v4.channel.k8s.io", "channel.k8s.io"])
    assert offered == ["v5.channel.k8s.io", "v4.channel.k8s.io", "channel.k8s.io"]


@pytest.mark.parametrize("size", [0, 1, 125, 126, 65535, 65536, 300_000])
def test_a_masked_frame_of_any_length_arrives_whole_even_byte_by_byte(size: int) -> None:
    payload = os.urandom(size)
    data = client_frame(OP_BINARY, payload)
    parser = FrameParser()
    if size < 200:
        messages = [m for i in range(len(data)) for m in parser.feed(data[i : i + 1])]
    else:
        messages = parser.feed(data[:7]) + parser.feed(data[7:])
    assert messages == [(OP_BINARY, payload)]


def test_fragments_join_and_a_ping_between_them_comes_first() -> None:
    parser = FrameParser()
    data = (
        client_frame(OP_TEXT, b"hel", fin=False)
        + client_frame(OP_PING, b"beat")
        + client_frame(OP_CONTINUATION, b"lo", fin=False)
        + client_frame(OP_CONTINUATION, b"!")
    )
    assert parser.feed(data) == [(OP_PING, b"beat"), (OP_TEXT, b"hello!")]


@pytest.mark.parametrize(
    "data",
    [
        client_frame(OP_BINARY, b"x", mask=False),
        client_frame(OP_CONTINUATION, b"x"),
        client_frame(OP_TEXT, b"a", fin=False) + client_frame(OP_TEXT, b"b"),
        client_frame(OP_PING, b"x" * 126),
        client_frame(OP_PING, b"x", fin=False),
        client_frame(0x3, b"x"),
    ],
    ids=["unmasked", "stray-continuation", "interleaved", "long-ping", "fragmented-ping", "opcode"],
)
def test_protocol_violations_are_refused(data: bytes) -> None:
    with pytest.raises(WebSocketProtocolError):
        FrameParser().feed(data)


def test_a_message_over_the_limit_closes_with_1009() -> None:
    parser = FrameParser(max_message_bytes=10)
    with pytest.raises(WebSocketProtocolError) as refused:
        parser.feed(
            client_frame(OP_BINARY, b"a", fin=False) + client_frame(OP_CONTINUATION, b"b" * 10)
        )
    assert refused.value.code == 1009


@pytest.mark.parametrize("size", [0, 125, 126, 70000])
def test_server_frames_are_final_and_unmasked(size: int) -> None:
    data = frame(OP_BINARY, b"z" * size)
    assert data[0] == 0x80 | OP_BINARY
    assert not data[1] & 0x80
    assert data.endswith(b"z" * size)
