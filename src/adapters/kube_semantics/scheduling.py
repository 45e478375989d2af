"""kube-scheduler's filters for one pod against nodes, and the FailedScheduling message.

Sources (kubernetes/kubernetes, pkg/scheduler):
- framework/types.go FitError.Error: `0/N nodes are available: ` then a histogram of the nodes'
  reasons, `"<count> <reason>"` sorted as strings and joined by `, `, a `.`, then the
  PostFilter (preemption) message and a `.`.
- The default profile's Filter order; a node's first failing plugin decides its reasons:
  NodeUnschedulable (`node(s) were unschedulable`), TaintToleration (`node(s) had untolerated
  taint {key: value}`: the first NoSchedule/NoExecute taint no toleration matches,
  component-helpers' FindMatchingUntoleratedTaint and v1 Toleration.ToleratesTaint),
  NodeAffinity (`node(s) didn't match Pod's node affinity/selector`: spec.nodeSelector and the
  required nodeSelectorTerms), NodeResourcesFit (`Too many pods`, `Insufficient <resource>` for
  each resource whose request exceeds allocatable minus what the node's pods request).
  The first three are UnschedulableAndUnresolvable, the last Unschedulable.
- framework/preemption/preemption.go via defaultpreemption: `preemption: 0/N nodes are
  available: ` with `Preemption is not helpful for scheduling` for unresolvable nodes and `No
  preemption victims found for incoming pod` where evicting lower-priority pods could not help
  (every pod here has priority 0, so there never are victims).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from pegboard.domain.squarepeg.quantities import parse_k8s_quantity

JsonObject = dict[str, Any]

_UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"


def quantity(raw: Any) -> Decimal:
    value = parse_k8s_quantity(str(raw))
    return value if value is not None else Decimal(0)


def pod_requests(pod: Mapping[str, Any]) -> dict[str, Decimal]:
    """resourcehelper.PodRequests: each container's requests (its limits where it states no
    request: the apiserver's defaulting), summed, and at least each init container's."""
    spec = pod.get("spec") or {}

    def container_requests(container: Mapping[str, Any]) -> dict[str, Decimal]:
        resources = container.get("resources") or {}
        merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        return {str(name): quantity(value) for name, value in merged.items()}

    total: dict[str, Decimal] = {}
    for container in spec.get("containers") or ():
        for name, value in container_requests(container).items():
            total[name] = total.get(name, Decimal(0)) + value
    for container in spec.get("initContainers") or ():
        for name, value in container_requests(container).items():
            total[name] = max(total.get(name, Decimal(0)), value)
    return total


def tolerates(tolerations: Iterable[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    """v1 Toleration.ToleratesTaint for any of the tolerations."""
    for toleration in tolerations:
        effect = toleration.get("effect") or ""
        if effect and effect != taint.get("effect"):
            continue
        key = toleration.get("key") or ""
        operator = toleration.get("operator") or "Equal"
        if key and key != taint.get("key"):
            continue
        if operator == "Exists":
            return True
        if (
            key
            and operator == "Equal"
            and (toleration.get("value") or "") == (taint.get("value") or "")
        ):
            return True
    return False


def _expression_matches(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator = expression.get("key", ""), expression.get("operator", "")
    values = [str(v) for v in expression.get("values") or ()]
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and values:
        try:
            have, bound = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > bound if operator == "Gt" else have < bound
    return False


def matches_affinity(pod: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """spec.nodeSelector (every pair) and requiredDuringSchedulingIgnoredDuringExecution (any
    term; a term's matchExpressions and matchFields all hold)."""
    spec = pod.get("spec") or {}
    labels: Mapping[str, str] = node["metadata"].get("labels") or {}
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        or {}
    ).get("nodeSelectorTerms")
    if not required:
        return True
    fields = {"metadata.name": node["metadata"]["name"]}
    for term in required:
        expressions = term.get("matchExpressions") or []
        field_expressions = term.get("matchFields") or []
        if not expressions and not field_expressions:
            continue  # an empty term matches no objects
        if all(_expression_matches(e, labels) for e in expressions) and all(
            _expression_matches(e, fields) for e in field_expressions
        ):
            return True
    return False


def node_reasons(
    pod: Mapping[str, Any], node: Mapping[str, Any], used: Mapping[str, Decimal], pod_count: int
) -> tuple[list[str], bool]:
    """Why the pod does not fit this node (empty: it fits), and whether it is resolvable by
    preemption (only a shortage of resources is)."""
    spec = pod.get("spec") or {}
    tolerations = spec.get("tolerations") or []
    node_spec = node.get("spec") or {}
    if node_spec.get("unschedulable") and not tolerates(
        tolerations, {"key": _UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}
    ):
        return ["node(s) were unschedulable"], False
    for taint in node_spec.get("taints") or ():
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tolerations, taint):
            return [
                f"node(s) had untolerated taint {{{taint.get('key', '')}: {taint.get('value') or ''}}}"
            ], False
    if not matches_affinity(pod, node):
        return ["node(s) didn't match Pod's node affinity/selector"], False
    allocatable = {
        str(name): quantity(value)
        for name, value in ((node.get("status") or {}).get("allocatable") or {}).items()
    }
    reasons = []
    if "pods" in allocatable and pod_count + 1 > allocatable["pods"]:
        reasons.append("Too many pods")
    for name, wanted in pod_requests(pod).items():
        if wanted <= 0 or name == "pods":
            continue
        if wanted > allocatable.get(name, Decimal(0)) - used.get(name, Decimal(0)):
            reasons.append(f"Insufficient {name}")
    return reasons, True


def fit_error_message(total_nodes: int, failures: Iterable[tuple[list[str], bool]]) -> str:
    """FitError.Error with the preemption PostFilter's message."""
    reasons: Counter[str] = Counter()
    preemption: Counter[str] = Counter()
    for node_failures, resolvable in failures:
        reasons.update(node_failures)
        preemption[NO_VICTIMS if resolvable else NOT_HELPFUL] += 1
    listing = ", ".join(sorted(f"{count} {reason}" for reason, count in reasons.items()))
    after = ", ".join(sorted(f"{count} {reason}" for reason, count in preemption.items()))
    return (
        f"0/{total_nodes} nodes are available: {listing}. "
        f"preemption: 0/{total_nodes} nodes are available: {after}."
    )
