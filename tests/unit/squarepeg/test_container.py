"""The composition root: providers exist, resolve, never crash, and can be overridden."""

from __future__ import annotations

import re

import pytest
from dependency_injector import providers

from pegboard.app.squarepeg.container import Container, current_container, local_user_name


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


def test_current_container_is_one_per_process() -> None:
    assert current_container() is current_container()
