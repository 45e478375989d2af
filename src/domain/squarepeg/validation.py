"""squarepeg's own checks on a finished manifest, beyond what the apiserver's schema says.

They catch what passthrough could break and what squarepeg depends on: restartPolicy Never,
known imagePullPolicy values, well-formed quantities, a DNS-1123 label as the resource name,
requests not above limits in squarepeg's container.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any

from pegboard.domain.errors import ConfigError, ConfigProblem
from pegboard.domain.squarepeg.config import ImagePullPolicy
from pegboard.domain.squarepeg.naming import is_rfc1123_label
from pegboard.domain.squarepeg.quantities import parse_k8s_quantity

__all__ = [
    "PULL_POLICIES",
    "RESTART_POLICIES",
    "check_manifest",
    "manifest_problems",
    "pod_spec_of",
]

RESTART_POLICIES = frozenset({"Never"})
PULL_POLICIES = frozenset(p.value for p in ImagePullPolicy)


def pod_spec_of(manifest: Mapping[str, Any]) -> Mapping[str, Any]:
    """The pod spec of a Pod, or of a Job's template."""
    if manifest.get("kind") == "Job":
        spec: Mapping[str, Any] = manifest["spec"]["template"]["spec"]
        return spec
    pod_spec: Mapping[str, Any] = manifest["spec"]
    return pod_spec


def _containers(spec: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or ():
            yield f"spec.{key}[name={container.get('name')}]", container


def _quantity(value: Any) -> Decimal | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = Decimal(str(value))
        return number if number.is_finite() else None  # .nan would raise when compared
    if isinstance(value, str):
        return parse_k8s_quantity(value)
    return None


def manifest_problems(manifest: Mapping[str, Any], *, container_name: str) -> list[str]:
    """Human-readable problems; empty when the manifest is fine."""
    problems: list[str] = []
    name = manifest.get("metadata", {}).get("name", "")
    if not isinstance(name, str) or not is_rfc1123_label(name):
        problems.append(f"metadata.name {name!r} is not a lowercase RFC1123 label (≤ 63 chars)")
    spec = pod_spec_of(manifest)
    if spec.get("restartPolicy") not in RESTART_POLICIES:
        problems.append(f"spec.restartPolicy must be Never, got {spec.get('restartPolicy')!r}")
    if not any(c.get("name") == container_name for c in spec.get("containers") or ()):
        problems.append(f"squarepeg's container {container_name!r} is missing")
    for where, container in _containers(spec):
        policy = container.get("imagePullPolicy")
        if policy is not None and policy not in PULL_POLICIES:
            problems.append(
                f"{where}.imagePullPolicy {policy!r} is not one of {', '.join(sorted(PULL_POLICIES))}"
            )
        resources = container.get("resources") or {}
        values: dict[str, dict[str, Decimal]] = {}
        for section in ("requests", "limits"):
            for resource, raw in (resources.get(section) or {}).items():
                parsed = _quantity(raw)
                if parsed is None or parsed < 0:
                    problems.append(
                        f"{where}.resources.{section}.{resource} {raw!r} is not a quantity"
                    )
                else:
                    values.setdefault(section, {})[resource] = parsed
        for resource, request in values.get("requests", {}).items():
            limit = values.get("limits", {}).get(resource)
            if limit is not None and request > limit:
                problems.append(
                    f"{where}.resources: request {resource} "
                    f"{resources['requests'][resource]} is above its limit "
                    f"{resources['limits'][resource]}"
                )
    return problems


def check_manifest(manifest: Mapping[str, Any], *, container_name: str) -> None:
    """Raise ConfigError listing every problem (the manifest mixes CLI and config values)."""
    problems = manifest_problems(manifest, container_name=container_name)
    if problems:
        raise ConfigError([ConfigProblem(source="manifest", path="", message=p) for p in problems])
