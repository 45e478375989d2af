"""wiring.client_side(): the plain seams, or the DI container once one exists."""

from __future__ import annotations

import re

from dependency_injector import providers

from pegboard.app.squarepeg import container as container_module
from pegboard.app.squarepeg.wiring import ClientSide, client_side


def test_client_side_has_the_containers_provider_names() -> None:
    seams = ClientSide({"LOGNAME": "jane", "HOME": "/h"})
    di = container_module.Container()
    for name in ("environ", "home", "cwd", "user_name", "run_id", "random_hex", "stdout",
                 "stderr", "read_document", "dump_yaml", "read_kubeconfig_namespace"):  # fmt: skip
        assert callable(getattr(seams, name)) and hasattr(di, name), name
    assert seams.user_name() == "jane" and seams.home() == "/h"
    assert re.fullmatch(r"[0-9a-f]{6}", seams.random_hex())
    assert "kind: Pod" in seams.dump_yaml()({"kind": "Pod"})


def test_client_side_prefers_an_existing_container(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(container_module, "_current", None)
    assert isinstance(client_side(), ClientSide)
    made = container_module.current_container()
    with made.environ.override(providers.Object({"LOGNAME": "pinned"})):
        seams = client_side()
        assert seams is made and seams.user_name() == "pinned"
