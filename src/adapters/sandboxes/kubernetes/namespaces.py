"""Namespaces as API objects: created, labelled, listed and deleted as kubectl does.

A namespace exists when it is stored (`kubectl create namespace`), when it is one of the four a
cluster starts with, or when objects live in it: the sandbox keeps accepting objects in any
namespace (its tests and users rely on that), and such a namespace shows up as Active. Labelling
one that only exists implicitly stores it first, so its labels (Pod Security levels) stick.
"""

from __future__ import annotations

from typing import Any

from pegboard.adapters.kube_semantics.resources import NAMESPACES
from pegboard.adapters.kube_semantics.status import StatusError, not_found
from pegboard.adapters.kube_semantics.validation import dns_name_problems, label_problems

from .admission.pod_security import namespace_label_problems
from .store import RESOURCES, JsonObject, Store, deep_copy

# What kube-apiserver creates on start (pkg/controlplane/controller/systemnamespaces).
SYSTEM_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")
# staging/src/k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle/admission.go: deleting
# these is refused by NamespaceLifecycle (kube-apiserver passes default, kube-system, kube-public).
IMMORTAL_NAMESPACES = ("default", "kube-public", "kube-system")
_EPOCH = "2026-01-01T00:00:00Z"


def implicit_namespace(name: str) -> JsonObject:
    """A namespace that was never created explicitly, as the apiserver would show it."""
    return {
        "kind": "Namespace",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "uid": f"00000000-0000-0000-0000-{abs(hash(name)) % 10**12:012d}",
            "resourceVersion": "1",
            "creationTimestamp": _EPOCH,
            "labels": {"kubernetes.io/metadata.name": name},
        },
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


class Namespaces:
    """Namespace objects over the store (cluster-scoped: stored under namespace "")."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def find(self, name: str) -> JsonObject | None:
        stored = self._store.find(NAMESPACES, "", name)
        if stored is not None:
            return stored
        if name in SYSTEM_NAMESPACES or self._in_use(name):
            return implicit_namespace(name)
        return None

    def get(self, name: str) -> JsonObject:
        found = self.find(name)
        if found is None:
            raise not_found(NAMESPACES, name)
        return found

    def labels(self, name: str) -> dict[str, str]:
        stored = self._store.find(NAMESPACES, "", name)
        return dict((stored or {}).get("metadata", {}).get("labels") or {})

    def names(self) -> list[str]:
        stored = {obj["metadata"]["name"] for obj in self._store.list(NAMESPACES, "")[0]}
        used = {
            obj["metadata"].get("namespace", "")
            for obj in self._store.all_objects()
            if obj.get("kind") != "Namespace"
        }
        return sorted((stored | used | set(SYSTEM_NAMESPACES)) - {""})

    def all(self) -> list[JsonObject]:
        return [self.get(name) for name in self.names()]

    def materialize(self, name: str) -> None:
        """Store an implicit namespace, so a PATCH or PUT (`kubectl label`) has one to change."""
        if self._store.find(NAMESPACES, "", name) is not None:
            return
        found = self.get(name)
        obj = self._store.prepare_new(NAMESPACES, found, "")
        _cluster_scoped(obj)
        obj["metadata"]["creationTimestamp"] = found["metadata"]["creationTimestamp"]
        try:
            self._store.create(NAMESPACES, obj)
        except StatusError as exc:
            if exc.code != 409:  # created meanwhile: fine
                raise

    def create(self, body: JsonObject, *, dry_run: bool) -> JsonObject:
        check_namespace_object(body)
        name = str(body["metadata"].get("name") or "")
        if self.find(name) is not None:
            raise StatusError(
                409,
                f'namespaces "{name}" already exists',
                details={"name": name, "kind": "namespaces"},
            )
        obj = self._store.prepare_new(NAMESPACES, body, "")
        _cluster_scoped(obj)
        labels = obj["metadata"].setdefault("labels", {})
        labels["kubernetes.io/metadata.name"] = name  # set by the apiserver (namespace strategy)
        obj["spec"] = {"finalizers": ["kubernetes"]}
        obj["status"] = {"phase": "Active"}
        if dry_run:
            return obj
        return self._store.create(NAMESPACES, obj)

    def delete(self, name: str, *, dry_run: bool) -> JsonObject:
        """The namespace and everything in it. A real cluster shows it Terminating while its
        namespace controller empties it; here that happens before the answer."""
        found = self.get(name)
        if name in IMMORTAL_NAMESPACES:
            raise StatusError(
                403,
                f'namespaces "{name}" is forbidden: this namespace may not be deleted',
                details={"name": name, "kind": "namespaces"},
            )
        gone = deep_copy(found)
        gone["status"] = {"phase": "Terminating"}
        if dry_run:
            return gone
        for plural, bucket in self._store.namespaced_contents(name):
            for object_name in bucket:
                try:
                    self._store.remove(RESOURCES[plural], name, object_name)
                except StatusError:
                    pass
        if self._store.find(NAMESPACES, "", name) is not None:
            try:
                self._store.remove(NAMESPACES, "", name)
            except StatusError:
                pass
        return gone

    def _in_use(self, name: str) -> bool:
        return any(bucket for _, bucket in self._store.namespaced_contents(name))


def _cluster_scoped(obj: JsonObject) -> None:
    obj["metadata"].pop("namespace", None)


def check_namespace_object(obj: Any) -> None:
    """Validation of a Namespace create or update: the name is a DNS label, labels are valid,
    and the Pod Security labels name a level and version (ValidateNamespace of the PodSecurity
    admission, staging/src/k8s.io/pod-security-admission/admission/admission.go)."""
    from pegboard.adapters.kube_semantics.status import invalid

    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict):
        raise invalid("Namespace", "", [{"field": "metadata", "message": "Required value"}])
    name = str(meta.get("name") or "")
    causes = dns_name_problems("metadata.name", meta.get("name"), label=True)
    causes += label_problems("metadata.labels", meta.get("labels"))
    if causes:
        raise invalid("Namespace", name, causes)
    problems = namespace_label_problems(meta.get("labels") or {})
    if problems:
        # invalidResponse(newErr.Error()): a field.ErrorList's aggregate, 422 Invalid
        text = problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]"
        raise StatusError(422, text, reason="Invalid")
