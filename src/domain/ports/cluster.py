"""Cluster port: the subset of the Kubernetes API that squarepeg needs, in plain dicts.

Objects cross this port as the JSON the apiserver speaks (camelCase keys, plain dicts and lists),
never as typed client models, so a dry run prints exactly what was sent or returned.
Errors cross it as `pegboard.domain.errors.PortError` subclasses (NotFound, Conflict, Forbidden,
Invalid, Unauthorized, Transient/Unreachable) carrying the HTTP status and the Status message.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.errors import Invalid, PortError, Transient
from pegboard.domain.kubernetes.kinds import ResourceKind

__all__ = [
    "Cluster",
    "ClusterTarget",
    "ContainerNotRunning",
    "ExecInput",
    "ExecResult",
    "ExecTimedOut",
    "JsonObject",
    "ListPage",
    "LogStream",
    "LogStreamDropped",
    "OutputSink",
    "ResourceKind",
    "WatchEvent",
]

JsonObject = dict[str, Any]


@attrs.frozen
class ListPage:
    """One LIST answer: its items, the list's resourceVersion, and the token for the next page."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    items: list[JsonObject]
    resource_version: str
    continue_token: str | None = None  # metadata.continue; None when this was the last page


@attrs.frozen
class ClusterTarget:
    """Where the cluster adapter resolved to: a kubeconfig context (or `in-cluster`) and its namespace."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    context: str
    namespace: str | None


@attrs.frozen
class WatchEvent:
    """One watch event: ADDED, MODIFIED or DELETED, with the object as the apiserver sent it."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    type: str
    object: JsonObject


class LogStreamDropped(Transient):
    """The log stream broke mid-way (reset, timeout, proxy cut); the caller may reconnect."""


# What an exec'd command reads: all of it at once, or a stream of chunks taken lazily (a file:
# `iter(functools.partial(f.read, 1 << 16), b"")`), so a large input is never held whole.
ExecInput = bytes | Iterable[bytes] | None
# Where an exec'd command's output goes, chunk by chunk, in order, on the caller's thread.
OutputSink = Callable[[bytes], None]


class ExecTimedOut(PortError):
    """The exec'd command ran past its timeout; the connection was closed. Kubernetes does not
    kill a process whose exec connection ends: wrap it in `timeout` in the pod when it must die."""


class ContainerNotRunning(Invalid):
    """The pod exists but the container cannot be exec'd into: not started yet, terminated, in a
    completed pod, or no container of that name (the apiserver answers 400 Bad Request)."""


@attrs.frozen
class ExecResult:
    """The exit code of an exec'd command (0 for a Success status, the ExitCode cause of a
    NonZeroExitCode one) and its output, collected only for a stream that had no sink."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    exit_code: int
    stdout: bytes = b""
    stderr: bytes = b""


@runtime_checkable
class LogStream(Protocol):
    """Raw log bytes of one container, chunk by chunk, as the apiserver sends them.

    Iteration ends on a clean end of stream and raises LogStreamDropped on a broken one.
    `close()` may be called from another thread to unblock a reader.
    """

    def __iter__(self) -> Iterator[bytes]: ...

    def close(self) -> None: ...


@runtime_checkable
class Cluster(Protocol):
    """A Kubernetes cluster, reached through kubeconfig, in-cluster config, a sandbox or a fake."""

    def target(self) -> ClusterTarget:
        """Resolve credentials and report context and namespace; raises RunnerError when it cannot."""
        ...

    def create(
        self, manifest: Mapping[str, Any], *, namespace: str, dry_run: bool = False
    ) -> JsonObject:
        """Create a Pod or Job (kind taken from the manifest); returns the object the server returned."""
        ...

    def read(self, kind: ResourceKind, name: str, *, namespace: str) -> JsonObject | None:
        """The object, or None when it does not exist."""
        ...

    def list(
        self,
        kind: ResourceKind,
        *,
        namespace: str,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> builtins.list[JsonObject]:
        """Objects matching the selectors (filtered server-side)."""
        ...

    def list_page(
        self,
        kind: ResourceKind,
        *,
        namespace: str,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
    ) -> ListPage:
        """One page of a LIST, with the apiserver's own options: `limit` and `continue` page
        through etcd in key order; `resource_version="0"` with `resource_version_match=
        "NotOlderThan"` lets the apiserver answer from its watch cache (whole, `limit` ignored).
        An expired continue token is a Transient error (410 Gone): start the list again."""
        ...

    def watch(
        self,
        kind: ResourceKind,
        *,
        namespace: str,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout: float,
    ) -> Iterator[WatchEvent]:
        """Current matching objects as ADDED events, then changes, until `timeout` seconds pass.

        Implementations resume from the last resourceVersion when a watch connection ends early
        and re-list on 410 Gone, so the caller sees one continuous stream.
        """
        ...

    def stream_logs(
        self,
        pod: str,
        *,
        namespace: str,
        container: str,
        since_time: str | None = None,
        timestamps: bool = True,
        follow: bool = True,
        tail_lines: int | None = None,
    ) -> LogStream:
        """Open the container's log; with timestamps each line starts with an RFC3339Nano time and a space.

        `tail_lines` starts at the last N records (`tailLines`), e.g. to check where a log ends."""
        ...

    def list_events(
        self, *, namespace: str, involved_name: str, involved_uid: str | None = None
    ) -> builtins.list[JsonObject]:
        """Events about one object (by name, and uid when given)."""
        ...

    def watch_events(
        self,
        *,
        namespace: str,
        involved_name: str,
        involved_uid: str | None = None,
        timeout: float,
    ) -> Iterator[WatchEvent]:
        """Events about one object as a watch (fieldSelector on involvedObject): the current
        ones as ADDED, then each new or changed one, until `timeout` seconds pass."""
        ...

    def can_i(
        self, verb: str, resource: str, *, namespace: str, group: str = "", subresource: str = ""
    ) -> bool | None:
        """Whether these credentials may `verb` the resource in the namespace, as the cluster's
        authorizer answers a SelfSubjectAccessReview (`kubectl auth can-i`); None when it
        cannot tell (the review itself failed), so the caller goes on and meets the real answer."""
        ...

    def replace(
        self, kind: ResourceKind, name: str, obj: Mapping[str, Any], *, namespace: str
    ) -> JsonObject:
        """PUT the whole object; Conflict (409) when its metadata.resourceVersion is stale."""
        ...

    def patch(
        self, kind: ResourceKind, name: str, patch: Mapping[str, Any], *, namespace: str
    ) -> JsonObject:
        """Apply a JSON merge patch (RFC 7386, `application/merge-patch+json`); the object after it.

        Raises NotFound when the object does not exist.
        """
        ...

    def delete(
        self, kind: ResourceKind, name: str, *, namespace: str, propagation: str = "Background"
    ) -> bool:
        """Delete; True if it was deleted, False if it was already gone. Other failures raise."""
        ...

    def exec(
        self,
        pod: str,
        command: Sequence[str],
        *,
        namespace: str,
        container: str | None = None,
        stdin: ExecInput = None,
        on_stdout: OutputSink | None = None,
        on_stderr: OutputSink | None = None,
        timeout: float | None = None,
    ) -> ExecResult:
        """Run `command` (an argv: no shell unless it names one) in the pod's container, as
        `kubectl exec` does; no TTY, no resize. `container` None: the pod's only container.

        stdout and stderr arrive separately, each chunk passed to its sink as it comes, so
        output of any size passes in bounded memory; a stream with no sink is collected into
        the result (for small output). A non-zero exit is a result, not an error.

        stdin is sent as the command reads it. Whether the command then sees end-of-input
        depends on the connection: the exec protocol v5.channel.k8s.io can close stdin, v4
        cannot, so a command reading stdin must know where its input ends (`head -c N`, a tar
        archive) to work everywhere.

        Raises NotFound (no such pod), ContainerNotRunning, Forbidden (RBAC: `create
        pods/exec`), Unauthorized, Transient/Unreachable (the connection failed before the
        command's status arrived: it may have run), ExecTimedOut past `timeout` seconds.
        """
        ...
