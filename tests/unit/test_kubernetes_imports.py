"""The lean import of the official client: a run loads what it uses, the rest stays reachable.

Each case runs in a fresh interpreter, since the test process has the client imported already.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_loading_the_kubeconfig_loader_skips_what_a_run_does_not_use() -> None:
    out = _run(
        """
        import sys
        from pegboard.adapters import kubernetes_imports
        kube_config = kubernetes_imports.kube_config()
        from kubernetes.client import ApiClient, Configuration
        from kubernetes.client.exceptions import ApiException
        from kubernetes.utils.keepalive import tcp_keepalive_socket_options
        unused = ["kubernetes.dynamic", "kubernetes.stream", "kubernetes.watch",
                  "kubernetes.informer", "kubernetes.leaderelection",
                  "kubernetes.config.incluster_config", "kubernetes.utils.create_from_yaml",
                  "requests_oauthlib", "oauthlib.oauth2", "google.auth"]
        print(sorted(name for name in unused if name in sys.modules))
        print(kube_config.KubeConfigLoader.__module__)
        """
    )
    assert out.splitlines() == ["[]", "kubernetes.config.kube_config"]


def test_the_loaders_oidc_dependencies_are_the_real_ones_on_first_use() -> None:
    out = _run(
        """
        import sys
        from pegboard.adapters import kubernetes_imports
        kube_config = kubernetes_imports.kube_config()
        error = kube_config.oauthlib.oauth2.rfc6749.errors.InvalidClientIdError
        import oauthlib.oauth2.rfc6749.errors as real
        print(error is real.InvalidClientIdError)
        import requests_oauthlib
        print(kube_config.OAuth2Session(client_id="x").__class__ is requests_oauthlib.OAuth2Session)
        print(type(sys.modules["oauthlib"]).__name__, "requests_oauthlib" in sys.modules)
        """
    )
    assert out.splitlines() == ["True", "True", "module True"]


def test_the_deferred_package_init_runs_on_first_use_of_the_package() -> None:
    out = _run(
        """
        from pegboard.adapters import kubernetes_imports
        kubernetes_imports.kube_config()
        import kubernetes
        import kubernetes.config
        print(kubernetes.__version__ != "", kubernetes.watch.Watch.__name__)
        print(callable(kubernetes.config.load_incluster_config))
        from kubernetes import utils
        print(callable(utils.create_from_yaml))
        """
    )
    assert out.splitlines() == ["True Watch", "True", "True"]


def test_an_already_imported_client_is_used_as_is() -> None:
    out = _run(
        """
        import kubernetes
        from pegboard.adapters import kubernetes_imports
        kube_config = kubernetes_imports.kube_config()
        import requests_oauthlib
        print(kube_config.OAuth2Session is requests_oauthlib.OAuth2Session)
        """
    )
    assert out == "True"


def test_the_loader_binds_api_client_without_importing_pydantic() -> None:
    out = _run(
        """
        import sys
        from pegboard.adapters import kubernetes_imports
        kube_config = kubernetes_imports.kube_config()
        print("pydantic" in sys.modules, "kubernetes.client.api_client" in sys.modules)
        from kubernetes.client import ApiClient, Configuration
        print(ApiClient.__module__)
        client = kube_config.ApiClient(configuration=Configuration())
        print(type(client) is ApiClient, "pydantic" in sys.modules)
        """
    )
    assert out.splitlines() == [
        "False False",
        "kubernetes.client.api_client",
        "True True",
    ]
