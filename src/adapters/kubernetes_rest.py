"""The official client's REST layer with the two ApiClient calls KubernetesCluster makes.

`kubernetes.client.ApiClient` imports pydantic, its response model, dateutil and
`multiprocessing.pool` (~60-70 ms of a trivial `squarepeg run`) for the typed (de)serialisation
of the generated API classes. KubernetesCluster never uses it: it sends JSON dicts and reads
raw responses. `RestApi` is what ApiClient's `param_serialize` and `call_api` do for such
requests, on the client's own parts:

- auth from the Configuration's own `auth_settings()`, so the official kubeconfig loader's
  hooks (exec plugins, OIDC refresh, token files: `refresh_api_key_hook`) run on every request
  exactly as they would under ApiClient;
- `rest.RESTClientObject` sends: its urllib3 pool, TLS and client certificates, proxies, and its
  body encoding by Content-Type;
- the client's default User-Agent, and query values quoted as ApiClient quotes them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote


class RestApi:
    """One connection pool to the cluster of `configuration` (a kubernetes Configuration)."""

    def __init__(self, configuration: Any) -> None:
        import kubernetes.client
        from kubernetes.client import rest

        self.configuration = configuration
        self.rest_client = rest.RESTClientObject(configuration)
        # ApiClient's default header (api_client.py: `self.user_agent = ...`)
        self.default_headers = {
            "User-Agent": f"OpenAPI-Generator/{kubernetes.client.__version__}/python"
        }

    def param_serialize(
        self,
        *,
        method: str,
        resource_path: str,
        query_params: Sequence[tuple[str, Any]] | None = None,
        header_params: Mapping[str, str] | None = None,
        body: Any = None,
        auth_settings: Sequence[str] | None = None,
    ) -> tuple[str, str, dict[str, str], Any, None]:
        """(method, url, headers, body, post_params), as ApiClient.param_serialize returns them."""
        headers = {**(header_params or {}), **self.default_headers}
        query = list(query_params or [])
        settings = self.configuration.auth_settings() if auth_settings else {}
        for name in auth_settings or ():
            if (setting := settings.get(name)) is not None:
                _apply_auth(setting, headers, query)
        url = self.configuration.host + resource_path
        if query:
            url += "?" + "&".join(f"{key}={quote(_query_text(value))}" for key, value in query)
        return method, url, headers, body, None

    def call_api(
        self,
        method: str,
        url: str,
        header_params: Mapping[str, str] | None = None,
        body: Any = None,
        post_params: Any = None,
        _request_timeout: Any = None,
    ) -> Any:
        """The client's RESTResponse (`.response` is the urllib3 response, unread when the
        configuration asks for it); ApiException as ApiClient.call_api raises it."""
        return self.rest_client.request(  # type: ignore[no-untyped-call]
            method,
            url,
            headers=dict(header_params or {}),
            body=body,
            post_params=post_params,
            _request_timeout=_request_timeout,
        )


def _query_text(value: Any) -> str:
    # ApiClient.parameters_to_url_query: booleans as true/false, everything else as str()
    return str(value).lower() if isinstance(value, bool) else str(value)


def _apply_auth(setting: Mapping[str, Any], headers: dict[str, str], query: list[Any]) -> None:
    # ApiClient._apply_auth_params for the places the Configuration's settings use
    if setting["in"] == "header":
        headers[setting["key"]] = setting["value"]
    elif setting["in"] == "query":
        query.append((setting["key"], setting["value"]))
    else:
        raise ValueError(f"authentication in {setting['in']!r} is not supported")
