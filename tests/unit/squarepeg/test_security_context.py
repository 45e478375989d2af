"""docker's --security-opt, -u and --cap-drop, and config `security: restricted`, as the
securityContext Pod Security `restricted` checks (the sandbox's admission agrees)."""

from __future__ import annotations

import pytest

from helpers.squarepeg_requests import container, manifest
from pegboard.adapters.sandboxes.kubernetes.admission.pod_security import LevelVersion, evaluate
from pegboard.domain.errors import ConfigError, UsageError

RESTRICTED = LevelVersion("restricted", "latest")


def test_docker_flags_make_a_restricted_pod() -> None:
    m = manifest(
        user="1000",
        cap_drop=("ALL",),
        security_opt=("no-new-privileges", "seccomp=runtime/default"),
    )
    assert container(m)["securityContext"] == {
        "runAsUser": 1000,
        "runAsNonRoot": True,
        "allowPrivilegeEscalation": False,
        "seccompProfile": {"type": "RuntimeDefault"},
        "capabilities": {"drop": ["ALL"]},
    }
    assert evaluate(RESTRICTED, m["spec"]) is None
    assert evaluate(RESTRICTED, manifest()["spec"]) is not None


def test_config_security_restricted_sets_it_all_and_keeps_flags() -> None:
    m = manifest(layers=[{"security": "Restricted"}])
    assert container(m)["securityContext"] == {
        "capabilities": {"drop": ["ALL"]},
        "allowPrivilegeEscalation": False,
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert evaluate(RESTRICTED, m["spec"]) is None
    tuned = manifest(
        user="1000:1000",
        cap_add=("NET_BIND_SERVICE",),
        security_opt=("seccomp=localhost/profiles/app.json",),
        layers=[{"security": "restricted"}],
    )
    context = container(tuned)["securityContext"]
    assert context["seccompProfile"] == {
        "type": "Localhost",
        "localhostProfile": "profiles/app.json",
    }
    assert context["capabilities"] == {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]}
    assert evaluate(RESTRICTED, tuned["spec"]) is None


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"user": "0"}, "--user 0 contradicts config 'security: restricted'"),
        ({"cap_add": ("SYS_ADMIN",)}, "--cap-add SYS_ADMIN contradicts"),
        ({"security_opt": ("seccomp=unconfined",)}, "seccomp=unconfined contradicts"),
        ({"security_opt": ("no-new-privileges=false",)}, "no-new-privileges=false contradicts"),
    ],
)
def test_flags_that_contradict_restricted_are_usage_errors(
    flags: dict[str, object], message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        manifest(layers=[{"security": "restricted"}], **flags)


@pytest.mark.parametrize(
    ("option", "field", "value"),
    [
        ("no-new-privileges:true", "allowPrivilegeEscalation", False),
        ("no-new-privileges=false", "allowPrivilegeEscalation", True),
        ("seccomp=unconfined", "seccompProfile", {"type": "Unconfined"}),
        ("apparmor=runtime/default", "appArmorProfile", {"type": "RuntimeDefault"}),
        (
            "apparmor=my-profile",
            "appArmorProfile",
            {"type": "Localhost", "localhostProfile": "my-profile"},
        ),
        ("label=type:spc_t", "seLinuxOptions", {"type": "spc_t"}),
    ],
)
def test_security_opt_values(option: str, field: str, value: object) -> None:
    assert container(manifest(security_opt=(option,)))["securityContext"][field] == value


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("seccomp=/etc/profile.json", "a profile file cannot travel with the pod"),
        ("no-new-privileges=maybe", "takes true or false"),
        ("label=disable", "SELinux labelling cannot be disabled"),
        ("systempaths=unconfined", "not understood; supported: no-new-privileges"),
    ],
)
def test_bad_security_opts_are_one_line_usage_errors(option: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        manifest(security_opt=(option,))


def test_unknown_security_preset_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="expected default or restricted"):
        manifest(layers=[{"security": "locked"}])
