"""Label and field selectors with the apiserver's grammar, checks and matching rules.

Label selectors: `a=b`, `a==b`, `a!=b`, `a`, `!a`, `a in (x,y)`, `a notin (x)`, `a>1`, `a<1`;
keys and values are checked like label keys and values. Field selectors: `=`, `==`, `!=` on the
field labels the resource supports; anything else is a 400, as from a real apiserver.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .resources import EVENTS, JOBS, LEASES, PODS, Resource
from .status import StatusError

_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_SET_TERM = re.compile(r"^\s*([^\s!=<>(),]+)\s+(in|notin)\s*\(([^)]*)\)\s*$")
_LABEL_OP_TERM = re.compile(r"^\s*([^\s!=<>(),]+)\s*(==|!=|=|<|>)\s*([^\s!=<>(),]*)\s*$")
_EXISTS_TERM = re.compile(r"^\s*(!?)\s*([^\s!=<>(),]+)\s*$")
_FIELD_TERM = re.compile(r"^\s*([^\s!=]+)\s*(==|!=|=)\s*(.*?)\s*$")

# Field labels the apiserver accepts per resource (anything else is a 400 BadRequest).
SUPPORTED_FIELDS: dict[Resource, frozenset[str]] = {
    PODS: frozenset(
        {
            "metadata.name",
            "metadata.namespace",
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
        }
    ),
    JOBS: frozenset({"metadata.name", "metadata.namespace", "status.successful"}),
    EVENTS: frozenset(
        {
            "metadata.name",
            "metadata.namespace",
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        }
    ),
    LEASES: frozenset({"metadata.name", "metadata.namespace"}),
}

Matcher = Callable[[Mapping[str, Any]], bool]


@dataclass(frozen=True)
class LabelRequirement:
    """One term of a label selector: key, operator and values."""

    key: str
    operator: str  # exists, !exists, =, !=, in, notin, gt, lt
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.operator == "exists":
            return present
        if self.operator == "!exists":
            return not present
        if self.operator in ("=", "in"):
            return present and value in self.values
        if self.operator in ("gt", "lt"):
            number = _integer(value)
            bound = int(next(iter(self.values)))
            if number is None:
                return False
            return number > bound if self.operator == "gt" else number < bound
        return not present or value not in self.values  # != and notin


def _integer(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _split_terms(text: str) -> list[str]:
    """Split on commas outside parentheses (`a in (x,y),b` is two terms)."""
    terms: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            terms.append("".join(current))
            current = []
        else:
            current.append(char)
    terms.append("".join(current))
    return [t for t in (term.strip() for term in terms) if t]


def _bad(selector: str, why: str) -> StatusError:
    return StatusError(400, f"unable to parse requirement: {why} (selector {selector!r})")


def _requirement(term: str, selector: str) -> LabelRequirement:
    if match := _SET_TERM.match(term):
        key, op, raw = match.groups()
        values = frozenset(v.strip() for v in raw.split(",") if v.strip())
        return LabelRequirement(key, op, values)
    if match := _LABEL_OP_TERM.match(term):
        key, op, value = match.groups()
        if op in ("<", ">"):
            if _integer(value) is None:
                raise _bad(
                    selector, f"for 'Gt', 'Lt' operators, the value must be an integer: {value!r}"
                )
            return LabelRequirement(key, "gt" if op == ">" else "lt", frozenset({value}))
        return LabelRequirement(key, "!=" if op == "!=" else "=", frozenset({value}))
    if match := _EXISTS_TERM.match(term):
        negate, key = match.groups()
        return LabelRequirement(key, "!exists" if negate else "exists")
    raise _bad(selector, f"cannot understand {term!r}")


def parse_label_selector(text: str | None) -> list[LabelRequirement]:
    """Parse a label selector; StatusError 400 on bad syntax, keys or values."""
    selector = text or ""
    requirements: list[LabelRequirement] = []
    for term in _split_terms(selector):
        requirement = _requirement(term, selector)
        if not _KEY.match(requirement.key) or len(requirement.key.split("/")[-1]) > 63:
            raise _bad(selector, f"invalid label key {requirement.key!r}")
        if requirement.operator not in ("gt", "lt"):
            for value in requirement.values:
                if len(value) > 63 or not _VALUE.match(value):
                    raise _bad(selector, f"invalid label value {value!r}")
        requirements.append(requirement)
    return requirements


def label_matcher(text: str | None) -> Matcher:
    """A predicate on an object's metadata.labels; parses eagerly so errors surface at the call."""
    requirements = parse_label_selector(text)

    def matches(obj: Mapping[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(r.matches(labels) for r in requirements)

    return matches


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The string the apiserver compares for a field label; missing fields read as ''."""
    current: Any = obj
    for part in path.split("."):
        if not isinstance(current, Mapping):
            return ""
        current = current.get(part)
    if current is None:
        return ""
    if isinstance(current, bool):
        return "true" if current else "false"
    return str(current)


def field_matcher(text: str | None, resource: Resource) -> Matcher:
    """A predicate for `a=b,c!=d` over the resource's field labels; StatusError 400 otherwise."""
    terms: list[tuple[str, bool, str]] = []
    supported = SUPPORTED_FIELDS.get(resource, frozenset())
    for term in _split_terms(text or ""):
        match = _FIELD_TERM.match(term)
        if not match:
            raise StatusError(400, f"invalid selector: '{text}'; can't understand '{term}'")
        field, op, value = match.groups()
        if field not in supported:
            raise StatusError(400, f"field label not supported: {field}")
        terms.append((field, op == "!=", value))

    def matches(obj: Mapping[str, Any]) -> bool:
        return all((field_value(obj, f) == v) != negate for f, negate, v in terms)

    return matches


def required_field_value(text: str | None, field: str) -> str | None:
    """The value a field selector requires `field` to equal (an `=` or `==` term), else None.

    The apiserver's RequiresExactMatch: a LIST or watch whose selector pins `metadata.name`
    reads that one object's key (registry Store.ListPredicate / WatchPredicate), not the
    namespace. Assumes `text` already passed field_matcher (bad terms are skipped here)."""
    for term in _split_terms(text or ""):
        match = _FIELD_TERM.match(term)
        if match and match[1] == field and match[2] in ("=", "=="):
            return str(match[3])
    return None


def selector_matcher(
    resource: Resource, label_selector: str | None, field_selector: str | None
) -> Matcher:
    """Both selectors of a list or watch request, parsed up front."""
    by_label = label_matcher(label_selector)
    by_field = field_matcher(field_selector, resource)
    return lambda obj: by_label(obj) and by_field(obj)
