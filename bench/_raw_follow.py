"""The fastest client of one pod's log a bench can offer: a raw HTTP/1.1 reader, stdlib only.

Run as its own process by bench/squarepeg_run.py (the sandbox shares the bench's interpreter),
with every import done and both connections open before the pod exists:

    python bench/_raw_follow.py HOST PORT TOKEN NAMESPACE POD CONTAINER live|backlog

It watches the pod by name (one request, as `squarepeg run` does) and prints `ready` once the
watch is open; the bench then creates the pod. `live`: the moment the watch shows the container
running (or already terminated), the follow request goes out, the same query squarepeg sends
(`container`, `follow=true`, `timestamps=true`), so it overlaps the writing as squarepeg's does.
`backlog`: the request goes out once the pod has ended, all output already in the log (what a
follow of a finished container costs the sandbox to serve). The body is read with `recv_into`
into one 4 MiB buffer and discarded; only the chunked framing is parsed (a few bytes per HTTP
chunk, never a pass over the data). Prints: body bytes, time.time() when the request was sent,
time.time() when the last chunk ended.
"""

from __future__ import annotations

import json
import socket
import sys
import time
from urllib.parse import quote

BUFFER_BYTES = 4 << 20


class Chunked:
    """The chunked framing of one response body, parsed off a stream of buffers."""

    def __init__(self) -> None:
        self.left = 0  # bytes of the current chunk's data (and its CRLF) still to come
        self.size_line = b""  # a chunk-size line cut by a read
        self.done = False
        self.body = 0  # data bytes so far

    def feed(self, view: memoryview, keep: list[bytes] | None = None) -> None:
        pos, end = 0, len(view)
        while pos < end and not self.done:
            if self.left:
                take = min(self.left, end - pos)
                if keep is not None:
                    keep.append(bytes(view[pos : pos + min(take, max(0, self.left - 2))]))
                self.left -= take
                pos += take
                continue
            line = self.size_line + bytes(view[pos : min(end, pos + 64)])
            stop = line.find(b"\r\n")
            if stop < 0:
                self.size_line, pos = line, min(end, pos + 64)
                continue
            pos += stop + 2 - len(self.size_line)
            self.size_line = b""
            size = int(line[:stop].split(b";")[0], 16)
            if size == 0:
                self.done = True  # the last chunk: no trailers are sent
                return
            self.body += size
            self.left = size + 2


def request(sock: socket.socket, host: str, token: str, target: str) -> None:
    sock.sendall(
        f"GET {target} HTTP/1.1\r\nHost: {host}\r\nAccept-Encoding: identity\r\n"
        f"Accept: application/json\r\nAuthorization: Bearer {token}\r\n\r\n".encode()
    )


def headers(sock: socket.socket, buffer: bytearray) -> memoryview:
    """Read the status line and headers; what came after them, as a view of `buffer`."""
    view, got = memoryview(buffer), 0
    while True:
        n = sock.recv_into(view[got:])
        if not n:
            raise SystemExit("the sandbox closed the connection before its headers")
        got += n
        end = buffer.find(b"\r\n\r\n", 0, got)
        if end >= 0:
            head = bytes(buffer[:end]).lower()
            if not head.startswith(b"http/1.1 200") or b"transfer-encoding: chunked" not in head:
                raise SystemExit(f"unexpected answer: {bytes(buffer[:end])!r}")
            return view[end + 4 : got]


def main() -> None:
    host, port, token, namespace, pod, container, mode = sys.argv[1:8]
    address = (host, int(port))
    watch_sock = socket.create_connection(address)
    log_sock = socket.create_connection(address)
    buffer = bytearray(BUFFER_BYTES)
    view = memoryview(buffer)
    base = f"/api/v1/namespaces/{quote(namespace)}/pods"
    request(
        watch_sock,
        host,
        token,
        f"{base}?watch=true&timeoutSeconds=300&fieldSelector="
        + quote(f"metadata.name={pod}", safe=""),
    )
    framing, text = Chunked(), b""
    rest = headers(watch_sock, buffer)
    print("ready", flush=True)

    def wanted(obj: dict) -> bool:  # type: ignore[type-arg]
        status = obj.get("status") or {}
        if mode == "backlog":
            return status.get("phase") in ("Succeeded", "Failed")
        for entry in status.get("containerStatuses") or ():
            if entry.get("name") == container and {"running", "terminated"} & set(entry["state"]):
                return True
        return False

    while True:
        pieces: list[bytes] = []
        framing.feed(rest, pieces)
        text += b"".join(pieces)
        *lines, text = text.split(b"\n")
        if any(line and wanted(json.loads(line)["object"]) for line in lines):
            break
        if framing.done:
            raise SystemExit("the watch ended before the container ran")
        n = watch_sock.recv_into(view)
        if not n:
            raise SystemExit("the watch's connection closed before the container ran")
        rest = view[:n]
    target = f"{base}/{quote(pod)}/log?container={quote(container)}&follow=true&timestamps=true"
    request(log_sock, host, token, target)
    sent = time.time()
    framing = Chunked()
    framing.feed(headers(log_sock, buffer))
    recv_into = log_sock.recv_into
    while not framing.done:
        n = recv_into(view)
        if not n:
            raise SystemExit("the log's connection closed before its last chunk")
        framing.feed(view[:n])
    ended = time.time()
    watch_sock.close()
    log_sock.close()
    print(framing.body, sent, ended, flush=True)


if __name__ == "__main__":
    main()
