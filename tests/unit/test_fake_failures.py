"""fail_next(operation, error, *, times=1, when=None) behaves the same on every fake."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pegboard.adapters.fakes import (
    FakeClock,
    FakeCluster,
    FakeFileSync,
    FakeGpuCloud,
    FakeHost,
    FakeShell,
)
from pegboard.domain.errors import NotFound, Transient
from pegboard.domain.ports.cluster import ResourceKind


@dataclass
class Case:
    """One fake, one of its operations, a call of it, and a second call `when` tells apart."""

    fake: Any
    operation: str
    call: Callable[[], object]
    other_call: Callable[[], object]
    matches: Callable[[Any], bool]  # true for `call`, false for `other_call`


def _cluster(_: Path) -> Case:
    cluster = FakeCluster(FakeClock())
    return Case(
        cluster,
        "read",
        lambda: cluster.read(ResourceKind.POD, "pod-a", namespace="default"),
        lambda: cluster.read(ResourceKind.POD, "pod-b", namespace="default"),
        lambda request: request.name == "pod-a",
    )


def _cloud(_: Path) -> Case:
    cloud = FakeGpuCloud(FakeClock())
    return Case(
        cloud,
        "get_pod",
        lambda: _ignore_not_found(lambda: cloud.get_pod("pod-a")),
        lambda: _ignore_not_found(lambda: cloud.get_pod("pod-b")),
        lambda call: call.args == ("pod-a",),
    )


def _shell(_: Path) -> Case:
    shell = FakeShell(FakeHost())
    return Case(
        shell,
        "run",
        lambda: shell.run("echo a", timeout=5),
        lambda: shell.run("echo b", timeout=5),
        lambda call: call.args == ("echo a",),
    )


def _sync(tmp_path: Path) -> Case:
    sync = FakeFileSync(FakeHost())
    (tmp_path / "a").write_text("a")
    (tmp_path / "b").write_text("b")
    return Case(
        sync,
        "push",
        lambda: sync.push(str(tmp_path / "a"), "/workspace/"),
        lambda: sync.push(str(tmp_path / "b"), "/workspace/"),
        lambda call: call.args[0].endswith("/a"),
    )


def _ignore_not_found(call: Callable[[], object]) -> None:
    try:
        call()
    except NotFound:
        pass  # the pod does not exist: the call got through to the fake


FAKES = pytest.mark.parametrize("make", [_cluster, _cloud, _shell, _sync], ids=lambda f: f.__name__)


@FAKES
def test_once_by_default(make: Callable[[Path], Case], tmp_path: Path) -> None:
    case = make(tmp_path)
    case.fake.fail_next(case.operation, Transient("boom"))
    with pytest.raises(Transient, match="boom"):
        case.call()
    case.call()


@FAKES
def test_times_and_order(make: Callable[[Path], Case], tmp_path: Path) -> None:
    case = make(tmp_path)
    case.fake.fail_next(case.operation, Transient("first"), times=2)
    case.fake.fail_next(case.operation, Transient("second"))
    for expected in ("first", "first", "second"):
        with pytest.raises(Transient, match=expected):
            case.call()
    case.call()


@FAKES
def test_when_picks_the_calls(make: Callable[[Path], Case], tmp_path: Path) -> None:
    case = make(tmp_path)
    case.fake.fail_next(case.operation, Transient("only a"), when=case.matches)
    case.other_call()  # not matched: goes through, the failure stays queued
    with pytest.raises(Transient, match="only a"):
        case.call()
    case.call()


@FAKES
def test_any_exception_and_unknown_operations(make: Callable[[Path], Case], tmp_path: Path) -> None:
    case = make(tmp_path)
    case.fake.fail_next(case.operation, KeyboardInterrupt())  # a Ctrl-C inside a port call
    with pytest.raises(KeyboardInterrupt):
        case.call()
    with pytest.raises(ValueError, match="unknown operation"):
        case.fake.fail_next("explode", Transient("x"))
    with pytest.raises(ValueError, match="times"):
        case.fake.fail_next(case.operation, Transient("x"), times=0)


def test_shell_and_sync_share_their_host_but_keep_to_their_port() -> None:
    host = FakeHost()
    with pytest.raises(ValueError, match="unknown operation 'push'"):
        FakeShell(host).fail_next("push", Transient("x"))
    with pytest.raises(ValueError, match="unknown operation 'run'"):
        FakeFileSync(host).fail_next("run", Transient("x"))
    host.fail_next("run", Transient("via the host"))
    with pytest.raises(Transient, match="via the host"):
        FakeShell(host).run("true", timeout=5)
