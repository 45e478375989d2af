"""HangupsAreNormal: what a sandbox server does with a request that raised."""

from __future__ import annotations

import logging
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from pegboard.adapters.sandboxes.kubernetes.server import SandboxHTTPServer
from pegboard.adapters.sandboxes.runpod.server import RunPodHTTPServer
from pegboard.adapters.sandboxes.serving import HangupsAreNormal


class _Server(HangupsAreNormal, ThreadingHTTPServer):
    pass


def _fail_with(server: _Server, error: BaseException) -> None:
    try:
        raise error
    except BaseException:
        server.handle_error(None, ("127.0.0.1", 4242))


@pytest.fixture
def server() -> _Server:
    return _Server(("127.0.0.1", 0), BaseHTTPRequestHandler, bind_and_activate=False)


@pytest.mark.parametrize("error", [BrokenPipeError(), ConnectionResetError(), TimeoutError()])
def test_a_client_hanging_up_is_neither_printed_nor_logged(
    server: _Server,
    error: BaseException,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.DEBUG):
        _fail_with(server, error)
    assert capsys.readouterr().err == ""
    assert caplog.records == []


def test_any_other_error_is_logged_with_its_traceback_not_printed(
    server: _Server, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR):
        _fail_with(server, ValueError("a bug in a handler"))
    assert capsys.readouterr().err == ""  # socketserver's own handle_error prints it here
    (record,) = caplog.records
    assert "_Server: error while serving ('127.0.0.1', 4242)" in record.getMessage()
    assert record.exc_info is not None and isinstance(record.exc_info[1], ValueError)


def test_both_sandbox_servers_take_it() -> None:
    assert issubclass(RunPodHTTPServer, HangupsAreNormal)
    assert issubclass(SandboxHTTPServer, HangupsAreNormal)
