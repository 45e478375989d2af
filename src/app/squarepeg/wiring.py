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

from pegboard.app.shared.seams import (
    current_stderr,
    current_stdout,
    dump_yaml,
    home_dir,
    local_user_name,
    read_config_text,
    read_yaml_document,
    system_clock,
)
from pegboard.app.shared.seams import random_hex as new_random_hex

__all__ = [
    "build_system_clock",
    "current_stderr",
    "current_stdout",
    "dump_yaml",
    "home_dir",
    "local_user_name",
    "new_random_hex",
    "read_config_text",
    "read_yaml_document",
]

build_system_clock = system_clock


def new_run_id() -> str:
    return str(uuid.uuid4())


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
