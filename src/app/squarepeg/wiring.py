"""The seams squarepeg takes from the outside world, as plain factory functions.

`container.py` composes these into the dependency-injector container, the composition root of
every command. Commands that never leave this machine (`run --dry-run`, `config show`) use
`client_side()` when no container exists yet: importing dependency-injector pulls in asyncio and
pydantic (~100 ms), more than a whole dry run may take. Both paths call the same functions.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Callable, Mapping
from typing import Any, TextIO


def local_user_name(environ: Mapping[str, str] | None = None) -> str:
    """The local user name, never raising: LOGNAME/USER/LNAME/USERNAME, then the passwd entry,
    then `uid-<n>` (OpenShift-style arbitrary UIDs have no passwd entry)."""
    env = os.environ if environ is None else environ
    for key in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        if env.get(key):
            return env[key]
    uid = os.getuid() if hasattr(os, "getuid") else None
    if uid is not None:
        try:
            import pwd

            return pwd.getpwuid(uid).pw_name
        except (KeyError, ImportError, OSError):
            return f"uid-{uid}"
    return "unknown"


def home_dir(environ: Mapping[str, str]) -> str:
    return environ.get("HOME") or os.path.expanduser("~")


def new_run_id() -> str:
    return str(uuid.uuid4())


def new_random_hex() -> str:
    return os.urandom(3).hex()  # what secrets.token_hex does, without importing secrets (~8 ms)


def current_stdout() -> TextIO:
    return sys.stdout


def current_stderr() -> TextIO:
    return sys.stderr


def read_config_text(path: Any) -> str:
    """A small user file (--vars-file, --env-file): bounded and strict UTF-8 (InputRejected)."""
    from pegboard.adapters.bounded_files import read_bounded_text
    from pegboard.domain.input_limits import MAX_CONFIG_BYTES

    return read_bounded_text(path, limit=MAX_CONFIG_BYTES)


def read_yaml_document(path: Any) -> Any:
    from pegboard.adapters.yaml_documents import read_yaml_document as read

    return read(path)


def dump_yaml(obj: Any) -> str:
    from pegboard.adapters.yaml_documents import dump_yaml as dump

    return dump(obj)


def read_kubeconfig_namespace(context: str | None, env: Mapping[str, str], home: str) -> str | None:
    """The kubeconfig context's namespace without importing kubernetes; None when unknown."""
    try:
        from pegboard.adapters.kubeconfig_file import read_kubeconfig_namespace as read
    except ImportError:
        return None
    try:
        found = read(context, env, home)
    except Exception:  # a dry run degrades gracefully: no namespace rather than a failure
        return None
    return found[1] if found else None


def build_kubernetes_cluster(*, context: str | None = None, lenient_tls: bool = False) -> Any:
    from pegboard.adapters.kubernetes_cluster import KubernetesCluster

    return KubernetesCluster(context=context, lenient_tls=lenient_tls)


def build_system_clock() -> Any:
    from pegboard.adapters.system_clock import SystemClock

    return SystemClock()


def serve_kubernetes_sandbox(port: int, kubeconfig_path: Any, *, token: str | None = None) -> None:
    from pegboard.adapters.sandboxes.kubernetes import serve

    serve(port, kubeconfig_path, token=token)


class ClientSide:
    """The providers of `Container` that client-side commands use, as plain methods.

    Same names and call shapes as the container's providers (`seams.environ()`,
    `seams.read_document()(path)`), so a command takes either.
    """

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._environ = os.environ if environ is None else environ

    def environ(self) -> Mapping[str, str]:
        return self._environ

    def home(self) -> str:
        return home_dir(self._environ)

    def cwd(self) -> str:
        return os.getcwd()

    def user_name(self) -> str:
        return local_user_name(self._environ)

    def run_id(self) -> str:
        return new_run_id()

    def random_hex(self) -> str:
        return new_random_hex()

    def stdout(self) -> TextIO:
        return current_stdout()

    def stderr(self) -> TextIO:
        return current_stderr()

    def read_document(self) -> Callable[[Any], Any]:
        return read_yaml_document

    def dump_yaml(self) -> Callable[[Any], str]:
        return dump_yaml

    def read_kubeconfig_namespace(self) -> Callable[[str | None, Mapping[str, str], str], Any]:
        return read_kubeconfig_namespace


def client_side() -> Any:
    """The DI container when this process already made one (tests override it), else ClientSide."""
    container_module = sys.modules.get("pegboard.app.squarepeg.container")
    existing = container_module.existing_container() if container_module else None
    return existing if existing is not None else ClientSide()
