"""RestApi builds each request as the official ApiClient does (the client's own auth hooks)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client import ApiClient, Configuration

from pegboard.adapters.kubernetes_rest import RestApi


def _configuration(**api_key: str) -> Any:
    configuration = type.__call__(Configuration)
    configuration.host = "https://127.0.0.1:6443"
    configuration.api_key = dict(api_key)
    return configuration


QUERIES = [
    [],
    [("labelSelector", "app.kubernetes.io/managed-by=squarepeg,squarepeg.io/run-id in (a,b)")],
    [("watch", True), ("timeoutSeconds", 300), ("fieldSelector", "metadata.name=p x")],
    [("follow", False), ("limitBytes", 1048576), ("sinceTime", "2026-12-02T01:02:03Z")],
    [("command", "sh"), ("command", "-c"), ("command", "echo 'hi' && exit 3")],
]


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("body", [None, {"metadata": {"name": "p"}, "spec": {"containers": []}}])
def test_requests_match_the_official_api_client(query: list[tuple[str, Any]], body: Any) -> None:
    configuration = _configuration(authorization="Bearer s3cret")
    args: dict[str, Any] = {
        "method": "POST" if body else "GET",
        "resource_path": "/api/v1/namespaces/team%20a/pods",
        "query_params": query,
        "body": body,
        "auth_settings": ["BearerToken"],
    }
    theirs = ApiClient(configuration).param_serialize(
        header_params={"Accept": "application/json"}, **{**args, "query_params": list(query)}
    )
    ours = RestApi(configuration).param_serialize(
        header_params={"Accept": "application/json"}, **args
    )
    assert ours == theirs


def test_the_loaders_refresh_hook_runs_for_every_request() -> None:
    # An exec plugin's or OIDC's token reaches each request through refresh_api_key_hook.
    tokens = iter(["Bearer one", "Bearer two"])
    configuration = _configuration(authorization="Bearer expired")  # as the loader leaves it

    def refresh(config: Any) -> None:
        config.api_key["authorization"] = next(tokens)

    configuration.refresh_api_key_hook = refresh
    api = RestApi(configuration)
    seen = [
        api.param_serialize(method="GET", resource_path="/api", auth_settings=["BearerToken"])[2]
        for _ in range(2)
    ]
    assert [headers["authorization"] for headers in seen] == ["Bearer one", "Bearer two"]


def test_no_auth_settings_send_no_credentials() -> None:
    api = RestApi(_configuration(authorization="Bearer s3cret"))
    _, url, headers, _, _ = api.param_serialize(method="GET", resource_path="/version")
    assert url == "https://127.0.0.1:6443/version"
    assert "authorization" not in headers
