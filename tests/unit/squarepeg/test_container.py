"""The composition root: providers exist, resolve, never crash, and can be overridden."""

from __future__ import annotations

import re

import pytest
from dependency_injector import providers

from pegboard.app.shared.seams import local_user_name
from pegboard.app.squarepeg.container import Container
from pegboard.app.squarepeg.seams import local_seams


def test_providers_resolve() -> None:
    container = Container()
    assert re.fullmatch(r"[0-9a-f]{6}", container.random_hex())
    assert re.fullmatch(r"[0-9a-f-]{36}", container.run_id())
    assert container.run_id() != container.run_id()
    assert isinstance(container.user_name(), str) and container.user_name()
    assert container.stdout().write and container.stderr().write
    assert "kind: Pod" in container.dump_yaml()({"kind": "Pod"})
    container.check_dependencies()


def test_user_name_prefers_the_environment() -> None:
    assert local_user_name({"USER": "u", "LOGNAME": "l"}) == "l"
    assert local_user_name({"USERNAME": "w"}) == "w"


def test_user_name_without_passwd_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    import pwd

    def missing(uid: int) -> object:
        raise KeyError(uid)

    monkeypatch.setattr(pwd, "getpwuid", missing)
    assert re.fullmatch(r"uid-\d+", local_user_name({}))


def test_overrides_reach_dependents() -> None:
    container = Container()
    with container.environ.override(providers.Object({"LOGNAME": "pinned", "HOME": "/h"})):
        assert container.user_name() == "pinned"
        assert container.home() == "/h"


def test_cluster_is_a_factory_that_honours_each_calls_arguments(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A Singleton would build the first cluster and ignore every later context (the old bug)."""
    from pegboard.app.squarepeg import seams

    built: list[tuple[str | None, bool]] = []

    def fake_build(*, context: str | None = None, lenient_tls: bool = False) -> object:
        built.append((context, lenient_tls))
        return object()

    container = Container()
    with container.cluster.override(providers.Factory(fake_build)):
        ports = container.cluster_ports()
        first = ports.open_cluster(context="a", lenient_tls=False)
        second = ports.open_cluster(context="b", lenient_tls=True)
    assert first is not second
    assert built == [("a", False), ("b", True)]
    assert seams.build_kubernetes_cluster.__annotations__["return"] == "Cluster"


def test_plain_seams_and_the_containers_are_the_same_shape() -> None:
    """Client-side commands use local_seams(); the others the container's: one Seams type."""
    plain = local_seams({"LOGNAME": "jane", "HOME": "/h"})
    container = Container()
    with container.environ.override(providers.Object({"LOGNAME": "jane", "HOME": "/h"})):
        injected = container.seams()
    assert type(plain) is type(injected)
    assert (plain.user_name, plain.home) == (injected.user_name, injected.home) == ("jane", "/h")
    assert re.fullmatch(r"[0-9a-f]{6}", plain.random_hex)
    assert "kind: Pod" in plain.dump_yaml({"kind": "Pod"})
