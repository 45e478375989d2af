"""Credential resolution (kubeconfig, then in-cluster) and the light kubeconfig reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from pegboard.adapters.kubeconfig_file import kubeconfig_paths, read_kubeconfig_namespace
from pegboard.adapters.kubernetes_credentials import resolve_credentials
from pegboard.domain.errors import Unauthorized, UsageError
from pegboard.domain.ports.cluster import ClusterTarget

IN_CLUSTER_ENV = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}


def kubeconfig(
    path: Path, *, current: str | None, contexts: dict[str, str | None], server: str = "https://k"
) -> Path:
    lines = ["apiVersion: v1", "kind: Config"]
    if current is not None:
        lines.append(f"current-context: {current}")
    lines += ["clusters:"] + [
        f"- {{name: {name}, cluster: {{server: '{server}/{name}'}}}}" for name in contexts
    ]
    lines += ["users:", "- {name: u, user: {token: secret}}", "contexts:"]
    for name, namespace in contexts.items():
        ns = f", namespace: {namespace}" if namespace else ""
        lines.append(f"- {{name: {name}, context: {{cluster: {name}, user: u{ns}}}}}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def service_account(tmp_path: Path) -> Path:
    directory = tmp_path / "serviceaccount"
    directory.mkdir()
    (directory / "token").write_text("sa-token")
    (directory / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n")
    (directory / "namespace").write_text("team-a\n")
    return directory


def test_current_context_and_its_namespace(tmp_path: Path) -> None:
    config = kubeconfig(tmp_path / "config", current="dev", contexts={"dev": "apps", "prod": None})
    credentials = resolve_credentials(context=None, env={"KUBECONFIG": str(config)}, home=tmp_path)
    assert credentials.target == ClusterTarget("dev", "apps")
    assert credentials.configuration.host == "https://k/dev"


def test_explicit_context_without_namespace(tmp_path: Path) -> None:
    config = kubeconfig(tmp_path / "config", current="dev", contexts={"dev": "apps", "prod": None})
    credentials = resolve_credentials(
        context="prod", env={"KUBECONFIG": str(config)}, home=tmp_path
    )
    assert credentials.target == ClusterTarget("prod", None)


def test_default_location_is_home_kube_config(tmp_path: Path) -> None:
    (tmp_path / ".kube").mkdir()
    kubeconfig(tmp_path / ".kube" / "config", current="home", contexts={"home": "ns"})
    credentials = resolve_credentials(context=None, env={}, home=tmp_path)
    assert credentials.target == ClusterTarget("home", "ns")


def test_kubeconfig_path_list_merges_with_the_first_current_context_winning(
    tmp_path: Path,
) -> None:
    first = kubeconfig(tmp_path / "a", current="one", contexts={"one": "first"})
    second = kubeconfig(tmp_path / "b", current="two", contexts={"two": "second"})
    env = {"KUBECONFIG": f"{tmp_path / 'missing'}:{first}::{second}"}
    assert resolve_credentials(context=None, env=env, home=tmp_path).target.context == "one"
    assert resolve_credentials(context="two", env=env, home=tmp_path).target == ClusterTarget(
        "two", "second"
    )


def test_tilde_in_kubeconfig_uses_the_given_home(tmp_path: Path) -> None:
    kubeconfig(tmp_path / "cfg", current="c", contexts={"c": "n"})
    assert kubeconfig_paths({"KUBECONFIG": "~/cfg"}, tmp_path) == [tmp_path / "cfg"]
    credentials = resolve_credentials(context=None, env={"KUBECONFIG": "~/cfg"}, home=tmp_path)
    assert credentials.target == ClusterTarget("c", "n")


def test_an_unknown_context_is_a_usage_error_listing_the_known_ones(
    tmp_path: Path, service_account: Path
) -> None:
    config = kubeconfig(tmp_path / "config", current="dev", contexts={"dev": None, "prod": None})
    env = {"KUBECONFIG": str(config), **IN_CLUSTER_ENV}
    with pytest.raises(UsageError) as caught:
        resolve_credentials(
            context="nope", env=env, home=tmp_path, service_account_dir=service_account
        )
    assert str(caught.value) == f"--context nope: no such context in {config} (contexts: dev, prod)"


def test_explicit_context_that_fails_never_falls_back(
    tmp_path: Path, service_account: Path
) -> None:
    config = kubeconfig(tmp_path / "config", current="dev", contexts={"dev": None})
    text = config.read_text().replace("cluster: dev,", "cluster: gone,")
    config.write_text(text)
    env = {"KUBECONFIG": str(config), **IN_CLUSTER_ENV}
    with pytest.raises(Unauthorized, match="could not load kubeconfig context 'dev'") as caught:
        resolve_credentials(
            context="dev", env=env, home=tmp_path, service_account_dir=service_account
        )
    assert "in-cluster" not in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_malformed_kubeconfig_names_its_file_and_line(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text("apiVersion: v1\nclusters:\n- name: x\n  cluster: {server: [\n")
    with pytest.raises(Unauthorized) as caught:
        resolve_credentials(
            context=None,
            env={"KUBECONFIG": str(config)},
            home=tmp_path,
            service_account_dir=tmp_path / "none",
        )
    message = str(caught.value)
    assert message.startswith(f"bad kubeconfig: {config}:5: ")
    assert "point KUBECONFIG at another file" in message and "\n" not in message


def test_no_kubeconfig_outside_a_cluster_says_how_to_get_one(tmp_path: Path) -> None:
    with pytest.raises(Unauthorized) as caught:
        resolve_credentials(
            context=None, env={}, home=tmp_path, service_account_dir=tmp_path / "none"
        )
    message = str(caught.value)
    assert message.startswith(f"no cluster credentials: no kubeconfig at {tmp_path}/.kube/config")
    assert "point KUBECONFIG at a kubeconfig file" in message
    assert "squarepeg sandbox --kubeconfig PATH" in message
    assert "Service host/port" not in message  # no in-cluster jargon outside a cluster


def test_in_cluster_when_there_is_no_kubeconfig(tmp_path: Path, service_account: Path) -> None:
    credentials = resolve_credentials(
        context=None, env=dict(IN_CLUSTER_ENV), home=tmp_path, service_account_dir=service_account
    )
    assert credentials.target == ClusterTarget("in-cluster", "team-a")
    assert credentials.configuration.host == "https://10.96.0.1:443"


def test_in_cluster_when_the_kubeconfig_is_broken(tmp_path: Path, service_account: Path) -> None:
    (tmp_path / "config").write_text("clusters: [unclosed\n")
    env = {"KUBECONFIG": str(tmp_path / "config"), **IN_CLUSTER_ENV}
    credentials = resolve_credentials(
        context=None, env=env, home=tmp_path, service_account_dir=service_account
    )
    assert credentials.target.context == "in-cluster"


def test_both_failing_inside_a_pod_reports_both_reasons(tmp_path: Path) -> None:
    with pytest.raises(Unauthorized) as caught:
        resolve_credentials(
            context=None,
            env={"KUBERNETES_SERVICE_HOST": "10.96.0.1"},
            home=tmp_path,
            service_account_dir=tmp_path / "none",
        )
    message = str(caught.value)
    assert "kubeconfig: no kubeconfig at" in message
    assert "in-cluster: " in message
    assert "\n" not in message


def test_in_cluster_without_a_namespace_file(tmp_path: Path, service_account: Path) -> None:
    (service_account / "namespace").unlink()
    credentials = resolve_credentials(
        context=None, env=dict(IN_CLUSTER_ENV), home=tmp_path, service_account_dir=service_account
    )
    assert credentials.target == ClusterTarget("in-cluster", None)


# ---------------------------------------------------------------- read_kubeconfig_namespace


def test_light_reader_finds_context_and_namespace(tmp_path: Path) -> None:
    config = kubeconfig(tmp_path / "config", current="dev", contexts={"dev": "apps", "ci": None})
    env = {"KUBECONFIG": str(config)}
    assert read_kubeconfig_namespace(None, env, tmp_path) == ("dev", "apps")
    assert read_kubeconfig_namespace("ci", env, str(tmp_path)) == ("ci", None)
    assert read_kubeconfig_namespace("missing", env, tmp_path) is None


@pytest.mark.parametrize(
    "content", ["", "[a, list]", "contexts: {not: a list}\ncurrent-context: x\n", ": bad: yaml: ["]
)
def test_light_reader_degrades_to_none(tmp_path: Path, content: str) -> None:
    (tmp_path / "config").write_text(content)
    assert (
        read_kubeconfig_namespace(None, {"KUBECONFIG": str(tmp_path / "config")}, tmp_path) is None
    )


def test_light_reader_without_any_kubeconfig(tmp_path: Path) -> None:
    assert read_kubeconfig_namespace(None, {}, tmp_path) is None


def test_an_endless_kubeconfig_is_read_bounded(tmp_path: Path) -> None:
    huge = tmp_path / "config"
    with huge.open("wb") as handle:  # sparse: 200 MiB that were read whole before
        handle.truncate(200 * 1024 * 1024)
    assert read_kubeconfig_namespace(None, {"KUBECONFIG": str(huge)}, tmp_path) is None


# ---------------------------------------------------------------- transport reasons


def test_a_refused_connection_reads_without_urllib3_internals() -> None:
    import urllib3.exceptions as u3
    from urllib3.connection import HTTPSConnection

    from pegboard.adapters.kubernetes_errors import error_for_transport

    connection = HTTPSConnection("127.0.0.1", 1)
    refused = u3.NewConnectionError(
        connection, "Failed to establish a new connection: [Errno 111] Connection refused"
    )
    wrapped = u3.MaxRetryError(None, "/api/v1/namespaces/default/pods", refused)  # type: ignore[arg-type]
    error = error_for_transport(wrapped, host="https://127.0.0.1:1")
    assert (
        str(error) == "cannot reach the Kubernetes API at https://127.0.0.1:1: Connection refused"
    )
