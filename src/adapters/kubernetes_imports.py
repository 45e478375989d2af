"""The official `kubernetes` client, imported for what one run uses and nothing else.

`import kubernetes.client` runs the package's `__init__`, which loads `kubernetes.config`
(both loaders), `dynamic` (kubernetes_validate and jsonschema), `stream` (websocket), `watch`,
`informer` and `leaderelection`, and `kubernetes.utils`' `__init__` loads create_from_yaml:
together ~0.1-0.2 s of every `squarepeg run` that a run never calls. The kubeconfig loader
module itself imports requests_oauthlib, oauthlib and (when installed) google.auth at its top,
another ~0.1 s, though only an OIDC refresh or the legacy gcp auth-provider calls them.

So:

- the three packages are entered with their `__init__` deferred (deferred_packages.py): their
  submodules import as usual, and the first access to anything else on the package runs the
  real `__init__`, so code that uses `kubernetes.watch` etc. through the package still works;
- `kube_config` (the official loader: exec plugins, OIDC, certificates, merging) is imported
  with its OIDC/GCP dependencies, and `ApiClient` (pydantic), bound to stand-ins that import the
  real module on first use.

The loader's code is the client's own: nothing here parses a kubeconfig.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from typing import Any

from .deferred_packages import enter_deferred

_DEFERRED_PACKAGES = ("kubernetes", "kubernetes.config", "kubernetes.utils")
_lock = threading.RLock()


def lean_kubernetes() -> None:
    """Make `import kubernetes.<submodule>` load only that submodule's own imports."""
    with _lock:
        for name in _DEFERRED_PACKAGES:
            enter_deferred(name)


class _DeferredModule(types.ModuleType):
    """Stands in for a module a loader imports at its top but uses only on rare paths: the
    first attribute access imports `load` (the real modules) and forwards to `name`'s."""

    def __init__(self, name: str, load: tuple[str, ...]) -> None:
        super().__init__(name)
        self._load = load

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        for module in self._load:
            importlib.import_module(module)
        return getattr(sys.modules[self.__name__], attribute)


class _DeferredCallable:
    """`from module import name` for a name that is only ever called."""

    def __init__(self, module: str, name: str) -> None:
        self._module = module
        self._name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(self._module), self._name)(*args, **kwargs)


class _DeferredFromImport(types.ModuleType):
    """A module a loader only takes callables from (`from requests_oauthlib import X`)."""

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        return _DeferredCallable(self.__name__, attribute)


def _stand_ins() -> dict[str, types.ModuleType]:
    """What kube_config's top-level imports of OIDC/GCP libraries bind to while it loads.
    A library already imported, or not installed, is left to the real import."""
    stand_ins: dict[str, types.ModuleType] = {}
    if "oauthlib.oauth2" not in sys.modules and importlib.util.find_spec("oauthlib"):
        oauthlib = _DeferredModule("oauthlib", ("oauthlib.oauth2",))
        stand_ins["oauthlib"] = oauthlib
        stand_ins["oauthlib.oauth2"] = oauthlib  # only `oauthlib` gets bound by `import a.b`
    if "requests_oauthlib" not in sys.modules and importlib.util.find_spec("requests_oauthlib"):
        stand_ins["requests_oauthlib"] = _DeferredFromImport("requests_oauthlib")
    if "google.auth" not in sys.modules and _installed("google.auth"):
        google = _DeferredModule("google", ("google.auth", "google.auth.transport.requests"))
        for name in ("google", "google.auth", "google.auth.transport.requests"):
            stand_ins[name] = google
    return stand_ins


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:  # its parent package is missing
        return False


def kube_config() -> Any:
    """The official `kubernetes.config.kube_config` module (untyped), imported lean."""
    with _lock:
        module = sys.modules.get("kubernetes.config.kube_config")
        if module is not None:
            return module
        lean_kubernetes()
        stand_ins = _stand_ins()
        shadowed = {name: sys.modules[name] for name in stand_ins if name in sys.modules}
        sys.modules.update(stand_ins)
        client = importlib.import_module("kubernetes.client")  # light: its exports are lazy
        # `from kubernetes.client import ApiClient` at the loader's top would import pydantic and
        # the response model (~60 ms); the loader only calls it (an OIDC refresh,
        # new_client_from_config), so it binds a stand-in that imports the real class then.
        api_client_placed = "ApiClient" not in client.__dict__
        if api_client_placed:
            client.__dict__["ApiClient"] = _DeferredCallable(
                "kubernetes.client.api_client", "ApiClient"
            )
        try:
            return importlib.import_module("kubernetes.config.kube_config")
        finally:
            if api_client_placed:
                del client.__dict__["ApiClient"]  # later imports get the real class
            for name in stand_ins:
                del sys.modules[name]
            sys.modules.update(shadowed)
