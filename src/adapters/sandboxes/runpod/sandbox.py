"""RunPodSandbox: the RunPod API (REST v2 and GraphQL) on 127.0.0.1, plus `serve()` for a
foreground server.

    with RunPodSandbox() as sandbox:                      # pods answer an SSH banner only
        os.environ.update(sandbox.environ())              # RUNPOD_API_BASE_URL, RUNPOD_API_KEY
        sandbox.catalog.set_stock("NVIDIA RTX A4000", "EU-RO-1", None)
        sandbox.faults.create_5xx_after_pod_exists = 1

    RunPodSandbox(ssh=True, public_keys=[...])            # each pod is a real sshd (pod_ssh.py)

The real `runpod` SDK reaches it through RUNPOD_API_BASE_URL with the key as a bearer token:
1.x appends /graphql (runpod/api/graphql.py), 2.x the v2 paths such as /v2/pods
(runpod/api/rest.py `_build_url`), so one URL serves both.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
import tempfile
import threading
from pathlib import Path

from ..serving import Sandbox, serve_in_thread, serve_until_signalled, stop_serving
from .catalog import Catalog
from .faults import Faults
from .operations import RunPodApi
from .pods import BannerHosting, PodHosting, SandboxPod
from .server import ReceivedQuery, ReceivedRequest, RunPodHTTPServer


class RunPodSandbox(Sandbox):
    def __init__(
        self,
        *,
        port: int = 0,
        api_key: str | None = None,
        catalog: Catalog | None = None,
        faults: Faults | None = None,
        ssh: bool = False,
        public_keys: list[str] | None = None,
    ) -> None:
        self.api_key = api_key or "rp-sandbox-" + secrets.token_hex(12)
        self.catalog = catalog or Catalog()
        self.faults = faults or Faults()
        self.public_keys: list[str] = list(public_keys or [])
        self._port = port
        self._ssh = ssh
        self._workdir = Path(tempfile.mkdtemp(prefix="pegboard-runpod-sandbox-"))
        self._hosting: PodHosting | None = None
        self._server: RunPodHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.api: RunPodApi | None = None
        self.url = ""

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> RunPodSandbox:
        self._hosting = self._make_hosting()
        self.api = RunPodApi(
            catalog=self.catalog,
            faults=self.faults,
            hosting=self._hosting,
            workdir=self._workdir,
            public_keys=lambda: list(self.public_keys),
            set_public_keys=self._set_public_keys,
        )
        self._server = RunPodHTTPServer(("127.0.0.1", self._port), self.api, self.api_key)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = serve_in_thread(self._server, name="runpod-sandbox")
        return self

    def _set_public_keys(self, keys: list[str]) -> None:
        self.public_keys[:] = keys

    def stop(self) -> None:
        """Stop serving; every pod's sshd and session processes end; the workdir goes."""
        if self.api is not None:
            self.api.closed = True
        stop_serving(self._server, self._thread)
        self._thread = None
        if self.api is not None and self._hosting is not None:
            with self.api.lock:
                for pod in list(self.api.pods.values()):
                    self._hosting.stop(pod)
            self._hosting.close()
        shutil.rmtree(self._workdir, ignore_errors=True)

    def _make_hosting(self) -> PodHosting:
        if not self._ssh:
            return BannerHosting()
        from .pod_ssh import SshdHosting

        return SshdHosting(self._workdir / "ssh", trusted_keys=lambda: list(self.public_keys))

    # -- what clients need -------------------------------------------------------------------------
    def environ(self) -> dict[str, str]:
        """The variables that point the SDK (and runpod-deploy) at this sandbox."""
        return {"RUNPOD_API_BASE_URL": self.url, "RUNPOD_API_KEY": self.api_key}

    # -- inspection helpers for tests --------------------------------------------------------------
    @property
    def received(self) -> list[ReceivedQuery]:
        return list(self._server.received) if self._server else []

    @property
    def received_v2(self) -> list[ReceivedRequest]:
        """Every REST v2 request, in order (method, target, content type, body, status, op)."""
        return list(self._server.received_v2) if self._server else []

    def pods(self) -> list[SandboxPod]:
        assert self.api is not None, "start() the sandbox first"
        with self.api.lock:
            return list(self.api.pods.values())

    def pod(self, pod_id: str) -> SandboxPod | None:
        assert self.api is not None, "start() the sandbox first"
        with self.api.lock:
            return self.api.pods.get(pod_id)

    def volume_dir(self, pod_id: str) -> Path:
        """Where the pod's volume lives on this machine (the pod sees it at its mount path)."""
        pod = self.pod(pod_id)
        if pod is None:
            raise KeyError(pod_id)
        return pod.volume_dir


def default_public_keys(home: str | None = None) -> list[str]:
    """The user's public keys under ~/.ssh (what `ssh.key_path` configs usually name)."""
    ssh_dir = Path(home or os.path.expanduser("~")) / ".ssh"
    keys = []
    for name in ("id_ed25519.pub", "id_ecdsa.pub", "id_rsa.pub"):
        try:
            keys.append((ssh_dir / name).read_text().strip())
        except OSError:
            continue
    return [k for k in keys if k]


def serve(
    port: int = 0,
    *,
    api_key: str | None = None,
    public_key_files: list[str] | None = None,
    ssh: bool = True,
    faults: Faults | None = None,
) -> None:
    """Serve a sandbox in the foreground until SIGINT/SIGTERM.

    Prints the `export` lines for RUNPOD_API_BASE_URL and RUNPOD_API_KEY on stdout (so
    `eval "$(... sandbox)"` works) and a short note on stderr. Pods trust each key of
    `public_key_files` (default: the user's ~/.ssh/id_*.pub) and any PUBLIC_KEY a create passes.
    """
    keys = (
        [Path(p).expanduser().read_text().strip() for p in public_key_files]
        if public_key_files
        else default_public_keys()
    )
    sandbox = RunPodSandbox(port=port, api_key=api_key, ssh=ssh, public_keys=keys, faults=faults)

    def announce() -> None:
        for name, value in sandbox.environ().items():
            print(f"export {name}={value}", flush=True)
        print(
            f"runpod sandbox listening on {sandbox.url} (REST {sandbox.url}/v2, GraphQL "
            f"{sandbox.url}/graphql, fault knobs {sandbox.url}/sandbox/faults; "
            f"{len(keys)} trusted public key(s)); Ctrl-C stops it and deletes every pod",
            file=sys.stderr,
            flush=True,
        )

    serve_until_signalled(sandbox, announce)
