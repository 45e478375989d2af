"""KubernetesSandbox: the whole emulator in-process, plus `serve()` for a foreground server."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import ssl
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pegboard.adapters.kube_semantics.kubetime import format_rfc3339
from pegboard.domain.errors import UsageError

from ..serving import Sandbox, serve_in_thread, serve_until_signalled, stop_serving
from . import container_fs
from .events import record_event
from .faults import Faults
from .garbage import delete_with_policy
from .jobs import JobController
from .kubeconfig import write_kubeconfig
from .kubelet import Kubelet
from .lockdown import apply_documents, label_namespace, pod_security_labels, read_documents
from .rbac import Rule, User, parse_rules
from .reaper import SCRATCH_PREFIX, Reaper, hold_scratch_lock, sweep_abandoned_scratch
from .scheduler import Scheduler
from .server import ApiState, Deletion, RecordedRequest, SandboxHTTPServer, keep_freed_memory
from .stats import ServerStats
from .store import EVENTS, JOBS, PODS, JsonObject, Store
from .tls import LoopbackTls, make_loopback_tls


class KubernetesSandbox(Sandbox):
    """A loopback Kubernetes API with a simulated kubelet and Job controller.

    Use as a context manager (or `start()`/`stop()`); then point a client at `kubeconfig_path`
    or at `url` with `Authorization: Bearer <token>`. It serves HTTPS with a CA made on start
    (in the kubeconfig as certificate-authority-data; `client_ssl_context()` trusts it);
    `tls=False` serves plain HTTP, which kubectl will not send a token over.
    """

    def __init__(
        self,
        *,
        port: int = 0,
        token: str | None = None,
        kubeconfig_path: str | Path | None = None,
        namespace: str = "default",
        context: str = "pegboard-sandbox",
        faults: Faults | None = None,
        history_limit: int = 100_000,
        kill_grace_seconds: float = 1.0,
        tls: bool = True,
        users: Sequence[tuple[str, str]] = (),
        pod_security: Mapping[str, str] | None = None,
        objects: Iterable[Any] = (),
        kubelet: dict[str, Any] | None = None,
        nodes: Iterable[Mapping[str, Any]] = (),
        isolate_volumes: bool = True,
    ) -> None:
        """`isolate_volumes`: a container's volumeMounts are its own directories at their
        mountPaths (a private mount namespace; needs root and util-linux, else containers see
        the host's filesystem and `volume_isolation` says why). `nodes`: the cluster's nodes, each a Node document or `{name, labels, capacity,
        allocatable, taints, unschedulable}` (taints as dicts or `key=value:Effect`); then pods
        are scheduled onto them (nodeSelector, affinity, tolerations, requests incl. extended
        resources such as nvidia.com/gpu) and stay Pending with FailedScheduling when none fits.
        Without nodes, one node fits every pod.
        `users`: (name, rules) pairs, each a token and a kubeconfig context `NAME@CONTEXT`
        allowed only what its rules say (`get,list,watch,create,delete:pods;get:pods/log`).
        `pod_security`: namespace -> level (enforce and warn labels). `objects`: Namespace,
        ResourceQuota, LimitRange and Node documents created before serving."""
        self.token = token or secrets.token_urlsafe(24)
        self.tls = tls
        self.faults = faults or Faults()
        # The simulated kubelet's settings (log rendering, rotation): reset() keeps them.
        if kubelet:
            self.faults.configure_kubelet(kubelet)
        self.namespace = namespace
        self.context = context
        self._port = port
        self._kubeconfig_arg = Path(kubeconfig_path) if kubeconfig_path else None
        self._kill_grace = kill_grace_seconds
        self._workdir = Path()
        self._reaper: Reaper | None = None
        self._scratch_lock = -1
        self._tls: LoopbackTls | None = None
        self.kubeconfig_path = self._kubeconfig_arg or Path()
        self.store = Store(history_limit=history_limit)
        self.scheduler = Scheduler(self.store, lambda: format_rfc3339(time.time_ns()))
        objects = list(objects)
        declared = [o for o in objects if isinstance(o, Mapping) and o.get("kind") == "Node"]
        objects = [o for o in objects if o not in declared]
        self.scheduler.add_nodes([*nodes, *declared])
        self.kubelet = Kubelet(
            self.store,
            self.faults,
            Path(),
            kill_grace_seconds=kill_grace_seconds,
            track_group=self._track_group,
            forget_group=self._forget_group,
            scheduler=self.scheduler,
            isolate_volumes=isolate_volumes,
        )
        self._state = ApiState(
            store=self.store,
            kubelet=self.kubelet,
            faults=self.faults,
            token=self.token,
            scheduler=self.scheduler,
        )
        self.jobs_controller = JobController(
            self.store, self._ttl_delete, admit=self._state.admission.admit_pod_and
        )
        self._server: SandboxHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.url = ""
        self._state.on_users_changed = self._users_changed
        for name, rules in users:
            self._add_user(name, rules)
        for namespace, level in (pod_security or {}).items():
            self.label_namespace(namespace, pod_security_labels(level))
        apply_documents(self.store, self._state.namespaces, objects, source="objects")

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> KubernetesSandbox:
        """Bind, make the CA, write the kubeconfig, serve. UsageError (one line) when the port is
        taken or the kubeconfig path is not ours to write."""
        sweep_abandoned_scratch()
        self._workdir = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX))
        try:
            self._scratch_lock = hold_scratch_lock(self._workdir)
            self._reaper = Reaper(self._workdir)
            self.kubelet.set_scratch_root(self._workdir / "pods")
            self.kubeconfig_path = self._kubeconfig_arg or self._workdir / "kubeconfig"
            self._tls = make_loopback_tls(self._workdir / "tls") if self.tls else None
            try:
                self._server = SandboxHTTPServer(
                    ("127.0.0.1", self._port),
                    self._state,
                    ssl_context=self._tls.server_context() if self._tls else None,
                )
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    raise UsageError(
                        f"port {self._port} on 127.0.0.1 is already in use "
                        "(choose another with --port, or 0 for any free port)"
                    ) from None
                raise UsageError(f"cannot listen on 127.0.0.1:{self._port}: {exc}") from None
            port = self._server.server_address[1]
            self._state.port = port
            self.url = f"{'https' if self._tls else 'http'}://127.0.0.1:{port}"
            self._write_kubeconfig()
        except BaseException:
            self.stop()
            raise
        self._thread = serve_in_thread(self._server, name="k8s-sandbox")
        return self

    def stop(self) -> None:
        """Stop serving, end every stream, kill every container; never blocks for long."""
        self._state.stopping.set()
        self.store.stop()
        self.jobs_controller.stop()
        self.kubelet.stop()
        stop_serving(self._server, self._thread)
        self._server = None
        self._thread = None
        if self._reaper is not None:
            self._reaper.close()
            self._reaper = None
        if self._workdir != Path():
            shutil.rmtree(self._workdir, ignore_errors=True)
        if self._scratch_lock >= 0:
            with contextlib.suppress(OSError):
                os.close(self._scratch_lock)
            self._scratch_lock = -1

    def _write_kubeconfig(self) -> None:
        write_kubeconfig(
            self.kubeconfig_path,
            self.url,
            self.token,
            self.context,
            self.namespace,
            ca_pem=self._tls.ca_pem if self._tls else None,
            extra_users=[(u.name, u.token) for u in self._state.users.all() if not u.admin],
        )

    def _users_changed(self) -> None:
        if self.url:
            self._write_kubeconfig()

    # -- locking it down -------------------------------------------------------------------------

    def _add_user(self, name: str, rules: str | Sequence[Rule]) -> User:
        try:
            parsed = parse_rules(rules) if isinstance(rules, str) else tuple(rules)
            return self._state.users.add(name, parsed)
        except ValueError as exc:
            raise UsageError(f"user {name!r}: {exc}") from None

    def add_user(self, name: str, rules: str | Sequence[Rule]) -> str:
        """A user allowed only `rules`; its context `NAME@CONTEXT` is added to the kubeconfig.
        Returns the context name."""
        self._add_user(name, rules)
        if self.url:
            self._write_kubeconfig()
        return self.user_context(name)

    def user_context(self, name: str) -> str:
        return f"{name}@{self.context}"

    def user_token(self, name: str) -> str:
        return next(u.token for u in self._state.users.all() if u.name == name)

    def label_namespace(self, namespace: str, labels: Mapping[str, str]) -> None:
        """Merge labels into a namespace (created if needed), e.g. pod-security.kubernetes.io/*."""
        label_namespace(self.store, self._state.namespaces, namespace, labels)

    def apply(self, *documents: Any) -> None:
        """Create Namespaces, ResourceQuotas and LimitRanges as kubectl would."""
        apply_documents(self.store, self._state.namespaces, documents, source="apply")

    @property
    def volume_isolation(self) -> str | None:
        """None when containers get their own mounts, else why they share the host's files."""
        if self.kubelet.isolates_volumes:
            return None
        return container_fs.isolation_unavailable() or "turned off (isolate_volumes=False)"

    def add_nodes(self, *nodes: Mapping[str, Any]) -> list[JsonObject]:
        """Declare more nodes (see `nodes=`); pods waiting for room are tried again."""
        return self.scheduler.add_nodes(nodes)

    def remove_node(self, name: str) -> None:
        self.scheduler.remove_node(name)

    def nodes(self) -> list[JsonObject]:
        """The nodes GET /api/v1/nodes lists."""
        return self.scheduler.nodes()

    def client_ssl_context(self) -> ssl.SSLContext:
        """An SSL context trusting this sandbox's CA (for raw HTTPS requests)."""
        if self._tls is None:
            raise RuntimeError("this sandbox serves plain HTTP (tls=False) or has not started")
        return self._tls.client_context()

    @property
    def ca_pem(self) -> bytes | None:
        """The CA certificate (PEM) that signed the server's, or None for plain HTTP."""
        return self._tls.ca_pem if self._tls else None

    def _track_group(self, pgid: int) -> None:
        if self._reaper is not None:
            self._reaper.track(pgid)

    def _forget_group(self, pgid: int) -> None:
        if self._reaper is not None:
            self._reaper.forget(pgid)

    # -- inspection helpers for tests -------------------------------------------------------------

    @property
    def port(self) -> int:
        return self._state.port

    @property
    def requests(self) -> list[RecordedRequest]:
        return self._state.requests

    @property
    def stats(self) -> ServerStats:
        """Counts of what the server did (requests, LIST bytes, objects scanned, deletes, ...)."""
        return self._state.stats

    @property
    def deletions(self) -> list[Deletion]:
        return self._state.deletions

    def connection_count(self) -> int:
        """Distinct TCP connections that sent at least one API request."""
        return len({request.connection_id for request in self._state.requests})

    def pods(self, namespace: str | None = "default") -> list[JsonObject]:
        return self.store.list(PODS, namespace)[0]

    def jobs(self, namespace: str | None = "default") -> list[JsonObject]:
        return self.store.list(JOBS, namespace)[0]

    def events(self, namespace: str | None = "default") -> list[JsonObject]:
        return self.store.list(EVENTS, namespace)[0]

    def pod(self, name: str, namespace: str = "default") -> JsonObject | None:
        return self.store.find(PODS, namespace, name)

    def log_bytes(
        self, name: str, container: str | None = None, namespace: str = "default"
    ) -> bytes:
        """The raw output a pod's container produced so far (b"" when it has not started)."""
        pod = self.pod(name, namespace)
        if pod is None:
            return b""
        log = self.kubelet.container_log(
            pod["metadata"]["uid"], container or pod["spec"]["containers"][0]["name"]
        )
        return log.content() if log else b""

    def add_event(
        self,
        namespace: str,
        name: str,
        reason: str,
        message: str,
        *,
        type: str = "Warning",
        kind: str = "Pod",
        component: str = "kubelet",
    ) -> JsonObject:
        """Record an Event about object `name` (which need not exist)."""
        resource = JOBS if kind == "Job" else PODS
        involved: dict[str, Any] = self.store.find(resource, namespace, name) or {
            "kind": kind,
            "apiVersion": resource.api_version,
            "metadata": {"name": name, "namespace": namespace},
        }
        return record_event(
            self.store, involved, reason=reason, message=message, type=type, component=component
        )

    def compact_history(self) -> None:
        """Forget the change history: a watch from any older resourceVersion now gets 410 Gone."""
        self.store.compact()

    def _ttl_delete(self, namespace: str, name: str) -> None:
        delete_with_policy(self.store, JOBS, namespace, name, "Background")


def serve(
    port: int = 0,
    kubeconfig_path: str | Path | None = None,
    *,
    token: str | None = None,
    tls: bool = True,
    users: Sequence[tuple[str, str]] = (),
    pod_security: Mapping[str, str] | None = None,
    objects: Iterable[Any] = (),
    object_files: Sequence[str | Path] = (),
    kubelet: dict[str, Any] | None = None,
    nodes: Iterable[Mapping[str, Any]] = (),
) -> None:
    """Run a sandbox in the foreground until SIGINT/SIGTERM; URL and kubeconfig go to stderr.
    `object_files`: YAML files of Namespaces, ResourceQuotas and LimitRanges to create first.
    `kubelet`: knobs of the simulated kubelet (Faults fields: log rendering, log rotation).

    UsageError (one line) when the port is taken, the kubeconfig path is refused, or a user,
    level or object is not valid."""
    keep_freed_memory()  # this process is the sandbox's own
    sandbox = KubernetesSandbox(
        port=port,
        kubeconfig_path=kubeconfig_path,
        token=token,
        tls=tls,
        users=users,
        pod_security=pod_security,
        objects=[*objects, *(doc for path in object_files for doc in read_documents(Path(path)))],
        kubelet=kubelet,
        nodes=nodes,
    )

    def announce() -> None:
        print(f"kubernetes sandbox listening on {sandbox.url}", file=sys.stderr)
        print(f"kubeconfig: {sandbox.kubeconfig_path}", file=sys.stderr)
        for name, _ in users:
            print(f"user {name}: --context {sandbox.user_context(name)}", file=sys.stderr)
        print(
            f"try: KUBECONFIG={sandbox.kubeconfig_path} kubectl get pods",
            file=sys.stderr,
            flush=True,
        )

    serve_until_signalled(sandbox, announce)
