"""`-v` for ports whose adapters do not report their calls (app/shared/traced_port.py): one
call-trace line per call, with arguments, outcome and duration."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from pegboard.adapters.fakes import FakeClock, FakeGpuCloud
from pegboard.app.shared import call_trace
from pegboard.app.shared.traced_port import traced
from pegboard.domain.errors import NotFound


class Trace:
    """The call-trace lines on stderr, as (what, outcome) pairs."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self.capsys = capsys

    def calls(self) -> list[tuple[str, str]]:
        err = self.capsys.readouterr().err
        return [(m[0], m[1]) for m in LINE.findall(err)]


LINE = re.compile(r"^runpod-deploy: (.*) -> (.*) in \d+ ms$", re.M)


@pytest.fixture
def trace(capsys: pytest.CaptureFixture[str]) -> Iterator[Trace]:
    call_trace.enable("runpod-deploy")
    yield Trace(capsys)
    call_trace.disable()


def test_calls_are_reported_with_arguments_and_outcome(trace: Trace) -> None:
    cloud = traced(FakeGpuCloud(FakeClock(), provider="runpod"), "runpod.cloud")
    assert cloud.provider == "runpod"  # a property passes through, unreported
    assert cloud.list_pods() == []
    with pytest.raises(NotFound):
        cloud.get_pod("pod-" + "x" * 100)
    listed, got = trace.calls()
    assert listed == ("runpod.cloud.list_pods()", "ok")
    assert re.fullmatch(r"runpod\.cloud\.get_pod\('pod-x+\.\.\.\)", got[0]) and got[1] == "NotFound"


def test_bytes_and_objects_are_never_shown(trace: Trace) -> None:
    """A secret reaches the pod as the bytes of a file: -v shows their size only."""

    class Shell:
        def write_file(self, path: str, data: bytes, *, mode: int, request: object = None) -> None:
            pass

    traced(Shell(), "shell").write_file("/w/env", b"TOKEN='s3cret'", mode=0o600, request=Shell())
    assert trace.calls() == [
        ("shell.write_file('/w/env', <14 bytes>, mode=384, request=<Shell>)", "ok")
    ]


def test_without_verbose_the_port_is_not_wrapped() -> None:
    call_trace.disable()
    cloud = FakeGpuCloud(FakeClock())
    assert traced(cloud, "cloud") is cloud


def test_the_line_reads_like_squarepegs(capsys: pytest.CaptureFixture[str]) -> None:
    call_trace.enable("runpod-deploy")
    try:
        traced(FakeGpuCloud(FakeClock(), provider="local"), "local.cloud").list_pods()
    finally:
        call_trace.disable()
    err = capsys.readouterr().err
    assert re.fullmatch(r"runpod-deploy: local\.cloud\.list_pods\(\) -> ok in \d+ ms\n", err)
