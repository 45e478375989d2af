"""The kubernetes provider's Backend as `run` builds it from a config, on the Kubernetes API
sandbox: context and namespace resolved as squarepeg resolves them (the kubeconfig's current
context and its namespace, else `default`), an unknown context or a missing permission refused
in one line before anything is created, and the locator a pointer records."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pegboard.adapters.providers import discover_registry
from pegboard.adapters.providers.kubernetes import KubernetesLocator
from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox
from pegboard.domain.errors import UsageError
from pegboard.domain.gpujob.provider_plugin import BuildContext
from pegboard.domain.ports.backend import Backend


@pytest.fixture(scope="module")
def sandbox() -> Iterator[KubernetesSandbox]:
    with KubernetesSandbox() as running:
        yield running


def build(
    sandbox: KubernetesSandbox, tmp_path: Path, kubeconfig: Path | None = None, **where: Any
) -> Backend:
    context = BuildContext(
        environ={"KUBECONFIG": str(kubeconfig or sandbox.kubeconfig_path)},
        home=str(tmp_path),
        state_dir=tmp_path / "state",
        data_dir=tmp_path / "data",
        user_name="Jane Doe",
    )
    return discover_registry()["kubernetes"].build(context, KubernetesLocator(**where))


def test_the_current_context_and_its_namespace_are_resolved_and_recorded(
    sandbox: KubernetesSandbox, tmp_path: Path
) -> None:
    config = yaml.safe_load(Path(sandbox.kubeconfig_path).read_text())
    for entry in config["contexts"]:
        entry["context"]["namespace"] = "team-a"
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    backend = build(sandbox, tmp_path, kubeconfig)
    try:
        assert backend.locator.context == config["current-context"]
        assert backend.locator.namespace == "team-a"
        assert backend.cloud.provider == "kubernetes" and backend.recycle_keeps_running
        backend.check_usable()  # the sandbox's user may do everything
    finally:
        backend.close()
    explicit = build(sandbox, tmp_path, kubeconfig, namespace="team-b")
    try:
        assert explicit.locator.namespace == "team-b"
    finally:
        explicit.close()
    plain = build(sandbox, tmp_path)
    try:
        assert plain.locator.namespace == "default"
    finally:
        plain.close()


def test_an_unknown_context_is_one_line_naming_the_key_and_the_contexts(
    sandbox: KubernetesSandbox, tmp_path: Path
) -> None:
    with pytest.raises(UsageError) as caught:
        build(sandbox, tmp_path, context="nope")
    message = str(caught.value)
    assert message.startswith("kubernetes.context: ") and "nope" in message
    assert "\n" not in message and sandbox.context in message


def test_a_missing_exec_permission_is_refused_before_anything_is_created(
    sandbox: KubernetesSandbox, tmp_path: Path
) -> None:
    context = sandbox.add_user(
        "viewer", "get,list,create,delete:pods;create:persistentvolumeclaims"
    )
    backend = build(sandbox, tmp_path, context=context)
    try:
        with pytest.raises(
            UsageError, match=r"missing permission in namespace 'default': create pods/exec"
        ):
            backend.check_usable()
    finally:
        backend.close()
