"""Label and field selectors with the apiserver's grammar and matching rules (stdlib only)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pegboard.domain.errors import Invalid

_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_SET_TERM = re.compile(r"^\s*(\S+)\s+(in|notin)\s+\(([^)]*)\)\s*$")
_EQ_TERM = re.compile(r"^\s*([^!=\s]+)\s*(==|!=|=)\s*(\S*)\s*$")

# Field labels the apiserver accepts per resource (anything else is a 400 BadRequest).
POD_FIELDS = frozenset(
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
        "status.nominatedNodeName",
    }
)
JOB_FIELDS = frozenset({"metadata.name", "metadata.namespace", "status.successful"})
EVENT_FIELDS = frozenset(
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
        "type",
    }
)

Matcher = Callable[[Mapping[str, Any]], bool]


@dataclass(frozen=True)
class LabelRequirement:
    """One term of a label selector: key, operator and values."""

    key: str
    operator: str  # exists, !exists, =, !=, in, notin
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
        return not present or value not in self.values  # != and notin


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


def _bad(selector: str, why: str) -> Invalid:
    return Invalid(f"unable to parse requirement: {why} (selector {selector!r})", status=400)


def parse_label_selector(text: str | None) -> list[LabelRequirement]:
    """Parse `a=b,c!=d,e,!f,g in (h,i),j notin (k)`; Invalid (400) on bad syntax."""
    requirements: list[LabelRequirement] = []
    for term in _split_terms(text or ""):
        set_match = _SET_TERM.match(term)
        eq_match = _EQ_TERM.match(term)
        if set_match:
            key, op, raw = set_match.groups()
            values = frozenset(v.strip() for v in raw.split(",") if v.strip())
            requirement = LabelRequirement(key, op, values)
        elif eq_match:
            key, op, value = eq_match.groups()
            requirement = LabelRequirement(key, "!=" if op == "!=" else "=", frozenset({value}))
        elif term.startswith("!"):
            requirement = LabelRequirement(term[1:].strip(), "!exists")
        else:
            requirement = LabelRequirement(term, "exists")
        if not _KEY.match(requirement.key) or len(requirement.key.split("/")[-1]) > 63:
            raise _bad(text or "", f"invalid label key {requirement.key!r}")
        for value in requirement.values:
            if len(value) > 63 or not _VALUE.match(value):
                raise _bad(text or "", f"invalid label value {value!r}")
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


def field_matcher(text: str | None, supported: frozenset[str]) -> Matcher:
    """A predicate for `a=b,c!=d` over the supported field labels; Invalid (400) otherwise."""
    terms: list[tuple[str, bool, str]] = []
    for term in _split_terms(text or ""):
        match = _EQ_TERM.match(term)
        if not match:
            raise Invalid(f"invalid field selector: {term!r}", status=400)
        field, op, value = match.groups()
        if field not in supported:
            raise Invalid(f'field label not supported: "{field}"', status=400)
        terms.append((field, op == "!=", value))

    def matches(obj: Mapping[str, Any]) -> bool:
        return all((field_value(obj, f) == v) != negate for f, negate, v in terms)

    return matches
