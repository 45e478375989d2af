"""Pod and Job manifests as plain dicts, exactly as they are sent to the apiserver.

Key order follows squarepeg 0.4.1 so `--dry-run` output stays familiar:
- Pod: apiVersion, kind, metadata {name, labels, namespace}, spec {restartPolicy, containers,
  runtimeClassName, volumes, hostname, hostAliases, nodeSelector};
- container: name, image, command, args, workingDir, env, imagePullPolicy, tty, stdin, resources,
  volumeMounts, securityContext;
- Job: spec {backoffLimit: 0, completions: 1, parallelism: 1, ttlSecondsAfterFinished, template}.

Passthrough (`kubernetes.metadata`/`kubernetes.spec`) is Pod-shaped in both modes and is merged
with the claims; in Job mode it lands under `spec.template`. No dict is shared between two places
in a manifest, so YAML output never needs anchors or aliases.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.errors import ConfigError, ConfigProblem
from pegboard.domain.squarepeg.config import JobPassthrough, KubernetesPassthrough
from pegboard.domain.squarepeg.merge import copy_tree, deep_merge

RESTART_POLICY = "Never"
DEFAULT_TTL_SECONDS_AFTER_FINISHED = 86400
_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")


@attrs.frozen
class ContainerParts:
    """Everything squarepeg itself puts into its one container (None / empty: left out)."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    name: str
    image: str
    command: Sequence[str] | None = None
    args: Sequence[str] | None = None
    working_dir: str | None = None
    env: Mapping[str, str] = attrs.field(factory=dict)
    image_pull_policy: str | None = None
    tty: bool = False
    stdin: bool = False
    requests: Mapping[str, Any] = attrs.field(factory=dict)
    limits: Mapping[str, Any] = attrs.field(factory=dict)
    volume_mounts: Sequence[Mapping[str, Any]] = ()
    security_context: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class PodParts:
    """The Pod around the container (None / empty: left out)."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    name: str
    labels: Mapping[str, str]
    container: ContainerParts
    namespace: str | None = None
    runtime_class_name: str | None = None
    volumes: Sequence[Mapping[str, Any]] = ()
    hostname: str | None = None
    host_aliases: Sequence[Mapping[str, Any]] = ()
    node_selector: Mapping[str, str] = attrs.field(factory=dict)


def build_container(parts: ContainerParts) -> dict[str, Any]:
    container: dict[str, Any] = {"name": parts.name, "image": parts.image}
    if parts.command is not None:
        container["command"] = list(parts.command)
    if parts.args:
        container["args"] = list(parts.args)
    if parts.working_dir is not None:
        container["workingDir"] = parts.working_dir
    if parts.env:
        container["env"] = [{"name": k, "value": v} for k, v in parts.env.items()]
    if parts.image_pull_policy is not None:
        container["imagePullPolicy"] = parts.image_pull_policy
    if parts.tty:
        container["tty"] = True
    if parts.tty or parts.stdin:
        container["stdin"] = True
    resources: dict[str, Any] = {}
    if parts.requests:
        resources["requests"] = dict(parts.requests)
    if parts.limits:
        resources["limits"] = dict(parts.limits)
    if resources:
        container["resources"] = resources
    if parts.volume_mounts:
        container["volumeMounts"] = [dict(m) for m in parts.volume_mounts]
    if parts.security_context:
        container["securityContext"] = copy_tree(parts.security_context)
    return container


def build_pod(parts: PodParts) -> dict[str, Any]:
    """The Pod squarepeg generates before any passthrough."""
    metadata: dict[str, Any] = {"name": parts.name, "labels": dict(parts.labels)}
    if parts.namespace is not None:
        metadata["namespace"] = parts.namespace
    spec: dict[str, Any] = {
        "restartPolicy": RESTART_POLICY,
        "containers": [build_container(parts.container)],
    }
    if parts.runtime_class_name:
        spec["runtimeClassName"] = parts.runtime_class_name
    if parts.volumes:
        spec["volumes"] = [copy_tree(v) for v in parts.volumes]
    if parts.hostname is not None:
        spec["hostname"] = parts.hostname
    if parts.host_aliases:
        spec["hostAliases"] = [copy_tree(a) for a in parts.host_aliases]
    if parts.node_selector:
        spec["nodeSelector"] = dict(parts.node_selector)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _problem(path: str, message: str, source: str = "config") -> ConfigError:
    return ConfigError([ConfigProblem(source=source, path=path, message=message)])


def _check_pod_shaped(spec: Mapping[str, Any], *, where: str, container_name: str) -> None:
    """Container lists in passthrough must name every item, so they merge instead of replacing."""
    for key in _CONTAINER_LISTS:
        if key not in spec:
            continue
        items = spec[key]
        if not isinstance(items, list):
            raise _problem(f"{where}.{key}", "must be a list of containers")
        for index, item in enumerate(items):
            if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
                raise _problem(
                    f"{where}.{key}[{index}]",
                    f"every container needs a name; use name: {container_name} to change "
                    "squarepeg's container, another name to add a sidecar",
                )


def _check_containers(spec: Mapping[str, Any], *, where: str, container_name: str) -> None:
    for key in _CONTAINER_LISTS:
        for item in spec.get(key) or ():
            if not item.get("image"):
                raise _problem(
                    f"{where}.{key}[name={item.get('name')}]",
                    f"no image; squarepeg's own container is named {container_name!r}, "
                    "any other container needs its own image",
                )


def _stringify_env(spec: dict[str, Any]) -> None:
    """Env values must be strings for the apiserver; YAML gives ints and bools."""
    for key in _CONTAINER_LISTS:
        for container in spec.get(key) or ():
            for entry in container.get("env") or ():
                if not isinstance(entry, dict) or "value" not in entry:
                    continue
                value = entry["value"]
                if isinstance(value, bool):
                    entry["value"] = "true" if value else "false"
                elif value is not None and not isinstance(value, str):
                    entry["value"] = str(value)


def apply_pod_passthrough(
    pod_like: Mapping[str, Any],
    passthrough: KubernetesPassthrough,
    *,
    claims: frozenset[str],
    container_name: str,
    source: str = "kubernetes",
) -> dict[str, Any]:
    """Merge Pod-shaped passthrough ({metadata, spec}) over `pod_like` without touching claims."""
    _check_pod_shaped(passthrough.spec, where=f"{source}.spec", container_name=container_name)
    overlay: dict[str, Any] = {}
    if passthrough.metadata:
        overlay["metadata"] = passthrough.metadata
    if passthrough.spec:
        overlay["spec"] = passthrough.spec
    merged = deep_merge(pod_like, overlay, claims=claims, source=source)
    _check_containers(merged["spec"], where=f"{source}.spec", container_name=container_name)
    _stringify_env(merged["spec"])
    return merged


def build_pod_manifest(
    parts: PodParts, passthrough: KubernetesPassthrough, *, claims: frozenset[str]
) -> dict[str, Any]:
    """The Pod with passthrough applied."""
    return apply_pod_passthrough(
        build_pod(parts), passthrough, claims=claims, container_name=parts.container.name
    )


def build_job_manifest(
    parts: PodParts,
    passthrough: KubernetesPassthrough,
    job: JobPassthrough,
    *,
    claims: frozenset[str],
) -> dict[str, Any]:
    """The Job: Job metadata gets the labels and metadata passthrough; the pod goes to the template.

    Claims are Pod-relative; they protect the Job's metadata and the template's metadata and spec.
    `job.spec.template` is Pod-shaped and merged over the template (claims honoured);
    `job.metadata` is merged over the Job's metadata (claims honoured).
    """
    pod = build_pod(parts)
    container_name = parts.container.name
    template_passthrough = KubernetesPassthrough(
        metadata={k: v for k, v in passthrough.metadata.items() if k not in ("name", "namespace")},
        spec=passthrough.spec,
    )
    template = apply_pod_passthrough(
        {"metadata": {"labels": dict(parts.labels)}, "spec": pod["spec"]},
        template_passthrough,
        claims=claims,
        container_name=container_name,
    )
    job_spec_overlay = dict(job.spec)
    job_template = job_spec_overlay.pop("template", None)
    if job_template is not None:
        if not isinstance(job_template, Mapping) or set(job_template) - {"metadata", "spec"}:
            raise _problem("job.spec.template", "must be a mapping with metadata and/or spec")
        for key in ("metadata", "spec"):
            if not isinstance(job_template.get(key, {}), Mapping):
                raise _problem(f"job.spec.template.{key}", "must be a mapping")
        template = apply_pod_passthrough(
            template,
            KubernetesPassthrough(
                metadata=job_template.get("metadata", {}), spec=job_template.get("spec", {})
            ),
            claims=claims,
            container_name=container_name,
            source="job.spec.template",
        )
    template.setdefault("metadata", {}).pop("name", None)
    template["metadata"].pop("namespace", None)

    metadata = deep_merge(
        pod["metadata"], passthrough.metadata, claims=claims, path="/metadata", source="kubernetes"
    )
    metadata = deep_merge(metadata, job.metadata, claims=claims, path="/metadata", source="job")
    spec: dict[str, Any] = deep_merge(
        {
            "backoffLimit": 0,
            "completions": 1,
            "parallelism": 1,
            "ttlSecondsAfterFinished": DEFAULT_TTL_SECONDS_AFTER_FINISHED,
        },
        job_spec_overlay,
        source="job",
    )
    for key in ("completions", "parallelism"):
        if spec.get(key) != 1:
            raise _problem(
                f"job.spec.{key}",
                f"squarepeg follows exactly one pod, so {key} must be 1 (got {spec.get(key)!r})",
            )
    spec["template"] = template
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": spec}
