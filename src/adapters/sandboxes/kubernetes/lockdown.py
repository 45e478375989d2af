"""Setting a sandbox up like a locked-down cluster before anything connects: Namespaces (with
Pod Security labels), ResourceQuotas and LimitRanges from documents, and `pod_security` as a
shortcut for the labels. Each object goes through the same validation and defaults as when
kubectl sends it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from pegboard.adapters.kube_semantics.resources import LIMIT_RANGES, NAMESPACES, RESOURCE_QUOTAS
from pegboard.adapters.kube_semantics.status import StatusError
from pegboard.adapters.kube_semantics.validation import validate
from pegboard.domain.errors import UsageError

from .admission import prepare_policy_object
from .admission.pod_security import LABEL_PREFIX, LEVELS
from .namespaces import Namespaces, check_namespace_object
from .store import JsonObject, Store, deep_copy

KINDS = ("Namespace", "ResourceQuota", "LimitRange")


def label_namespace(
    store: Store, namespaces: Namespaces, name: str, labels: Mapping[str, str]
) -> None:
    """Merge `labels` into a namespace (created when it does not exist yet)."""
    if namespaces.find(name) is None:
        namespaces.create({"metadata": {"name": name, "labels": dict(labels)}}, dry_run=False)
        return
    namespaces.materialize(name)

    def merge(obj: JsonObject) -> None:
        obj["metadata"].setdefault("labels", {}).update(labels)

    preview = deep_copy(namespaces.get(name))
    merge(preview)
    check_namespace_object(preview)
    store.update(NAMESPACES, "", name, merge)


def pod_security_labels(level: str) -> dict[str, str]:
    """`restricted` -> enforce and warn at restricted:latest (what most shared clusters set)."""
    if level not in LEVELS:
        raise UsageError(f"pod security level {level!r}: must be one of {', '.join(LEVELS)}")
    return {f"{LABEL_PREFIX}enforce": level, f"{LABEL_PREFIX}warn": level}


def read_documents(path: Path) -> list[Any]:
    """The YAML (or JSON) documents of a file, for `squarepeg sandbox --apply FILE`."""
    try:
        return list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
    except OSError as exc:
        raise UsageError(f"--apply {path}: cannot read it: {exc.strerror or exc}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        reason = " ".join(str(exc).split())
        raise UsageError(f"--apply {path}: not YAML: {reason}") from None


def apply_documents(
    store: Store, namespaces: Namespaces, documents: Iterable[Any], *, source: str
) -> None:
    """Create each Namespace (or merge its labels), ResourceQuota and LimitRange; UsageError
    naming `source` and the document for anything else or anything the apiserver would refuse."""
    for index, document in enumerate(documents, 1):
        where = f"{source}: document {index}"
        if document is None:
            continue
        if not isinstance(document, dict) or document.get("kind") not in KINDS:
            kind = document.get("kind") if isinstance(document, dict) else type(document).__name__
            raise UsageError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}")
        meta: dict[str, Any] = document.get("metadata") or {}
        if not isinstance(meta, dict):
            raise UsageError(f"{where}: metadata must be a mapping")
        try:
            if document["kind"] == "Namespace":
                label_namespace(
                    store, namespaces, str(meta.get("name") or ""), meta.get("labels") or {}
                )
                continue
            resource = RESOURCE_QUOTAS if document["kind"] == "ResourceQuota" else LIMIT_RANGES
            namespace = str(meta.get("namespace") or "default")
            validate(resource, document)
            if namespaces.find(namespace) is None:
                namespaces.create({"metadata": {"name": namespace}}, dry_run=False)
            obj = store.prepare_new(resource, document, namespace)
            prepare_policy_object(resource.kind, obj)
            store.create(resource, obj)
        except StatusError as exc:
            raise UsageError(f"{where}: {exc.message}") from None
