"""Users and RBAC: a token per user, each user bound to one Role's rules, 403s worded as the
apiserver words them, and SelfSubjectAccessReview (what `kubectl auth can-i` asks).

The sandbox's own token is the cluster admin (system:masters: everything). `add_user` issues
another token whose user may do only what its rules grant, in every namespace (a ClusterRole
bound with RoleBindings, as CI accounts usually are).

Sources (kubernetes/kubernetes):
- plugin/pkg/auth/authorizer/rbac/rbac.go RBACAuthorizer.Authorize and RuleAllows (verbs,
  apiGroups and resources match exactly or by `*`; a subresource is `resource/sub`); no
  matching rule is DecisionNoOpinion, which the apiserver turns into a 403.
- staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go
  forbiddenMessage: `User "u" cannot delete resource "pods" in API group "" in the namespace
  "ns"` (`at the cluster scope` without a namespace), wrapped by apierrors.NewForbidden into
  `pods "x" is forbidden: ...` (no name: `pods is forbidden: ...`).
- plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go: every authenticated user may read
  discovery and OpenAPI (system:discovery) and create selfsubjectaccessreviews
  (system:basic-user).
- staging/src/k8s.io/api/authorization/v1/types.go SelfSubjectAccessReview: spec.
  resourceAttributes {namespace, verb, group, resource, subresource, name}, status {allowed,
  reason}; SelfSubjectRulesReview (`kubectl auth can-i --list`): status.resourceRules,
  nonResourceRules, incomplete.
"""

from __future__ import annotations

import hmac
import secrets
import threading
from dataclasses import dataclass, field
from typing import Any

from pegboard.adapters.kube_semantics.status import StatusError

ADMIN_USER = "kubernetes-admin"
_VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "*")


@dataclass(frozen=True)
class Rule:
    """One PolicyRule: verbs on resources (`pods`, `pods/log`, `jobs.batch`, `*`)."""

    verbs: tuple[str, ...]
    resources: tuple[str, ...]  # qualified: resource[/subresource][.group]

    def allows(self, verb: str, group: str, resource: str) -> bool:
        if "*" not in self.verbs and verb not in self.verbs:
            return False
        for wanted in self.resources:
            if wanted == "*":
                return True
            name, _, wanted_group = _split(wanted)
            if wanted_group == group and (name == resource or name == "*"):
                return True
        return False

    def to_json(self) -> dict[str, Any]:
        groups = sorted({_split(r)[2] for r in self.resources if r != "*"} or {"*"})
        return {
            "verbs": list(self.verbs),
            "apiGroups": groups,
            "resources": sorted(_split(r)[0] for r in self.resources),
        }


def _split(qualified: str) -> tuple[str, str, str]:
    """`jobs.batch` -> (jobs, ., batch); `pods/log` -> (pods/log, "", ""); the group is what
    follows the first dot of the resource part (kubectl create role's --resource syntax)."""
    base, slash, sub = qualified.partition("/")
    resource, dot, group = base.partition(".")
    if slash:
        sub_name, _, sub_group = sub.partition(".")
        return f"{resource}/{sub_name}", dot, group or sub_group
    return resource, dot, group


def parse_rules(text: str) -> tuple[Rule, ...]:
    """`get,list,watch:pods,pods/log;create:jobs.batch` -> rules; ValueError naming the part."""
    rules = []
    for part in text.split(";"):
        part = part.strip()
        if not part:
            continue
        verbs, colon, resources = part.partition(":")
        verb_list = tuple(v.strip() for v in verbs.split(",") if v.strip())
        resource_list = tuple(r.strip() for r in resources.split(",") if r.strip())
        if not colon or not verb_list or not resource_list:
            raise ValueError(f"{part!r}: expected VERBS:RESOURCES, e.g. get,list:pods,pods/log")
        unknown = [v for v in verb_list if v not in _VERBS]
        if unknown:
            raise ValueError(f"{part!r}: unknown verb {unknown[0]!r} (one of {', '.join(_VERBS)})")
        rules.append(Rule(verb_list, resource_list))
    return tuple(rules)


@dataclass
class User:
    name: str
    token: str
    rules: tuple[Rule, ...] = ()
    admin: bool = False
    groups: list[str] = field(default_factory=lambda: ["system:authenticated"])

    def allows(self, verb: str, group: str, resource: str) -> bool:
        return self.admin or any(rule.allows(verb, group, resource) for rule in self.rules)


class Users:
    """The tokens the sandbox accepts, and who each one is."""

    def __init__(self, admin_token: str) -> None:
        self._lock = threading.Lock()
        self._users = [User(ADMIN_USER, admin_token, admin=True, groups=["system:masters"])]

    def add(self, name: str, rules: tuple[Rule, ...], token: str | None = None) -> User:
        if not name or any(c.isspace() for c in name):
            raise ValueError(f"user name {name!r}: must be non-empty, without spaces")
        with self._lock:
            if any(u.name == name for u in self._users):
                raise ValueError(f"user {name!r} exists already")
            user = User(name, token or secrets.token_urlsafe(24), rules)
            self._users.append(user)
            return user

    def all(self) -> list[User]:
        return list(self._users)

    def authenticate(self, authorization: str) -> User:
        """The user a `Bearer <token>` header names; 401 for anything else."""
        for user in list(self._users):
            if hmac.compare_digest(authorization.encode(), f"Bearer {user.token}".encode()):
                return user
        raise StatusError(401, "Unauthorized", reason="Unauthorized")

    def to_json(self) -> list[dict[str, Any]]:
        return [
            {"name": u.name, "admin": u.admin, "rules": [r.to_json() for r in u.rules]}
            for u in self._users
        ]


def forbidden(
    user: User,
    verb: str,
    *,
    group: str,
    resource: str,
    subresource: str | None,
    namespace: str | None,
    name: str | None,
) -> StatusError:
    """The 403 the apiserver answers when no rule allows the request."""
    qualified = f"{resource}.{group}" if group else resource
    full = f"{resource}/{subresource}" if subresource else resource
    scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    why = f'User "{user.name}" cannot {verb} resource "{full}" in API group "{group}" {scope}'
    message = (
        f'{qualified} "{name}" is forbidden: {why}' if name else f"{qualified} is forbidden: {why}"
    )
    details: dict[str, Any] = {"name": name or ""}
    if group:
        details["group"] = group
    details["kind"] = resource
    return StatusError(403, message, details=details)


def authorize(
    user: User,
    verb: str,
    *,
    group: str,
    resource: str,
    subresource: str | None = None,
    namespace: str | None = None,
    name: str | None = None,
) -> None:
    full = f"{resource}/{subresource}" if subresource else resource
    if not user.allows(verb, group, full):
        raise forbidden(
            user,
            verb,
            group=group,
            resource=resource,
            subresource=subresource,
            namespace=namespace,
            name=name,
        )


_DISCOVERY_RULES = [
    {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
     "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
]  # fmt: skip
_NON_RESOURCE_RULES = [
    {"verbs": ["get"], "nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz",
                                           "/livez", "/openapi", "/openapi/*", "/readyz", "/version"]},
]  # fmt: skip


def rules_review(user: User, body: Any) -> dict[str, Any]:
    """Answer a SelfSubjectRulesReview: the user's rules, plus what every user may do."""
    spec = body.get("spec") if isinstance(body, dict) and isinstance(body.get("spec"), dict) else {}
    if user.admin:
        rules: list[dict[str, Any]] = [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]
    else:
        rules = [*_DISCOVERY_RULES, *(rule.to_json() for rule in user.rules)]
    return {
        "kind": "SelfSubjectRulesReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {"creationTimestamp": None},
        "spec": spec,
        "status": {
            "resourceRules": rules,
            "nonResourceRules": _NON_RESOURCE_RULES,
            "incomplete": False,
        },
    }


def access_review(user: User, body: Any) -> dict[str, Any]:
    """Answer a SelfSubjectAccessReview create (never stored)."""
    if not isinstance(body, dict) or not isinstance(body.get("spec"), dict):
        raise StatusError(
            422,
            'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: '
            'Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes '
            "must be specified",
            reason="Invalid",
        )
    spec = body["spec"]
    attributes = spec.get("resourceAttributes")
    if isinstance(attributes, dict):
        resource = str(attributes.get("resource") or "")
        sub = str(attributes.get("subresource") or "")
        full = f"{resource}/{sub}" if sub else resource
        allowed = user.allows(
            str(attributes.get("verb") or ""), str(attributes.get("group") or ""), full
        )
    else:  # nonResourceAttributes: discovery-like paths are open to every user
        allowed = True
    status: dict[str, Any] = {"allowed": allowed}
    if allowed and not user.admin:
        status["reason"] = (
            f'RBAC: allowed by ClusterRoleBinding "{user.name}" of ClusterRole "{user.name}" to User "{user.name}"'
        )
    return {
        "kind": "SelfSubjectAccessReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {"creationTimestamp": None},
        "spec": spec,
        "status": status,
    }
