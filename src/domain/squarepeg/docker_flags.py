"""docker run flags beyond the basics, mapped onto Kubernetes fields, and the ones we refuse.

Each mapping is pure: strings in, plain-dict fragments out, UsageError naming the flag on bad input.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.errors import UsageError
from pegboard.domain.squarepeg.naming import is_rfc1123_label
from pegboard.domain.squarepeg.request import EnvFile

# An env name is printable ASCII without '=' and without spaces: what the apiserver would store
# and a container can see; a newline or space would be refused remotely or split the name.
_ENV_KEY_FORBIDDEN = re.compile(r"[^!-<>-~]")
_NUMERIC_ID = re.compile(r"\d{1,10}")
MAX_ID = 2**31 - 1  # runAsUser/runAsGroup: the largest id every container runtime accepts
_CAPABILITY = re.compile(r"[A-Z][A-Z0-9_]*")
_ARCHES = {"amd64", "arm64", "arm", "386", "ppc64le", "s390x", "riscv64", "mips64le", "loong64"}
_OSES = {"linux", "windows"}


@attrs.frozen
class RejectedFlag:
    """A docker flag with no faithful Kubernetes equivalent, and where to go instead."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    aliases: tuple[str, ...]
    takes_value: bool
    hint: str


REJECTED_FLAGS: tuple[RejectedFlag, ...] = (
    RejectedFlag(("--network", "--net"), True,
                 "pods share the cluster network; set kubernetes.spec.hostNetwork in config"),
    RejectedFlag(("--network-alias",), True, "use a Service for a stable name"),
    RejectedFlag(("-p", "--publish"), True,
                 "set kubernetes.spec.containers[name=main].ports in config and use a Service or "
                 "kubectl port-forward"),
    RejectedFlag(("-P", "--publish-all"), False,
                 "set kubernetes.spec.containers[name=main].ports in config"),
    RejectedFlag(("--expose",), True, "set kubernetes.spec.containers[name=main].ports in config"),
    RejectedFlag(("-d", "--detach"), False,
                 "squarepeg follows the run to the end; use --keep to leave the resource behind"),
    RejectedFlag(("--restart",), True,
                 "restartPolicy is always Never; use --mode job with job.spec.backoffLimit in config"),
    RejectedFlag(("--mount",), True, "use -v, or a volume under 'volumes' in config"),
    RejectedFlag(("--volumes-from",), True, "use a volume under 'volumes' in config"),
    RejectedFlag(("--link",), True, "set kubernetes.spec.hostAliases in config, or use a Service"),
    RejectedFlag(("--init",), False, "set kubernetes.spec.shareProcessNamespace: true in config"),
    RejectedFlag(("--pid",), True, "set kubernetes.spec.hostPID or shareProcessNamespace in config"),
    RejectedFlag(("--ipc",), True, "set kubernetes.spec.hostIPC in config"),
    RejectedFlag(("--uts",), True, "set kubernetes.spec.hostNetwork in config"),
    RejectedFlag(("--userns",), True, "set kubernetes.spec.hostUsers in config"),
    RejectedFlag(("--cgroupns",), True, "not configurable per pod in Kubernetes"),
    RejectedFlag(("--device",), True, "request a device-plugin resource via kubernetes.spec in config"),
    RejectedFlag(("--dns",), True, "set kubernetes.spec.dnsConfig.nameservers in config"),
    RejectedFlag(("--dns-search",), True, "set kubernetes.spec.dnsConfig.searches in config"),
    RejectedFlag(("--dns-option", "--dns-opt"), True,
                 "set kubernetes.spec.dnsConfig.options in config"),
    RejectedFlag(("--domainname",), True, "set kubernetes.spec.subdomain in config"),
    RejectedFlag(("--mac-address",), True, "not available for pods"),
    RejectedFlag(("--ip",), True, "pod IPs are assigned by the cluster network"),
    RejectedFlag(("--ip6",), True, "pod IPs are assigned by the cluster network"),
    RejectedFlag(("--sysctl",), True, "set kubernetes.spec.securityContext.sysctls in config"),
    RejectedFlag(("--group-add",), True,
                 "set kubernetes.spec.securityContext.supplementalGroups in config"),
    RejectedFlag(("--ulimit",), True, "not configurable per pod in Kubernetes"),
    RejectedFlag(("-c", "--cpu-shares"), True, "use --request-cpu"),
    RejectedFlag(("--cpuset-cpus",), True, "use --cpus / --request-cpu (or the CPU manager)"),
    RejectedFlag(("--cpuset-mems",), True, "not configurable per pod in Kubernetes"),
    RejectedFlag(("--cpu-period",), True, "use --cpus"),
    RejectedFlag(("--cpu-quota",), True, "use --cpus"),
    RejectedFlag(("--memory-reservation",), True, "use --request-memory"),
    RejectedFlag(("--memory-swap",), True, "swap is configured per node in Kubernetes"),
    RejectedFlag(("--memory-swappiness",), True, "swap is configured per node in Kubernetes"),
    RejectedFlag(("--kernel-memory",), True, "use -m / --limit-memory"),
    RejectedFlag(("--oom-kill-disable",), False, "not available for pods"),
    RejectedFlag(("--oom-score-adj",), True, "not available for pods"),
    RejectedFlag(("--pids-limit",), True, "configured per node in Kubernetes"),
    RejectedFlag(("--blkio-weight",), True, "not available for pods"),
    RejectedFlag(("--storage-opt",), True,
                 "set resources.limits.ephemeral-storage under kubernetes.spec.containers in config"),
    RejectedFlag(("--runtime",), True, "set kubernetes.spec.runtimeClassName in config"),
    RejectedFlag(("--isolation",), True, "not available for pods"),
    RejectedFlag(("--stop-signal",), True, "not configurable for pods"),
    RejectedFlag(("--stop-timeout",), True,
                 "set kubernetes.spec.terminationGracePeriodSeconds in config"),
    RejectedFlag(("--health-cmd",), True,
                 "set kubernetes.spec.containers[name=main].livenessProbe in config"),
    RejectedFlag(("--no-healthcheck",), False, "pods have no probes unless configured"),
    RejectedFlag(("--label-file",), True, "use -l/--label"),
    RejectedFlag(("--log-driver",), True, "logs always come from the Kubernetes log API"),
    RejectedFlag(("--log-opt",), True, "logs always come from the Kubernetes log API"),
    RejectedFlag(("-a", "--attach"), True, "stdout and stderr are always streamed"),
    RejectedFlag(("--sig-proxy",), True, "Ctrl-C is handled by squarepeg (two-stage interrupt)"),
    RejectedFlag(("--cidfile",), True, "the resource name is printed with --keep"),
    RejectedFlag(("--cgroup-parent",), True, "not available for pods"),
    RejectedFlag(("--annotation",), True, "set kubernetes.metadata.annotations in config"),
)  # fmt: skip


def rejected_flag_message(flag: RejectedFlag, *, as_typed: str) -> str:
    """One line naming the flag as the user typed it and the config key to use instead."""
    return f"{as_typed} is not supported by squarepeg: {flag.hint}"


def env_name_problem(key: object) -> str | None:
    """Why `key` cannot be an environment variable name, or None (shared with defaults.env)."""
    if not isinstance(key, str) or not key:
        return f"an environment variable name must be a non-empty string, got {key!r}"
    if _ENV_KEY_FORBIDDEN.search(key):
        return (
            "an environment variable name must be printable ASCII without '=' or spaces, "
            f"got {key!r}"
        )
    return None


def parse_env(
    raw: Iterable[str], *, environ: Mapping[str, str], flag: str = "-e"
) -> dict[str, str]:
    """`-e KEY=VALUE` or bare `-e KEY` (copied from the local environment; unset -> error)."""
    env: dict[str, str] = {}
    for item in raw:
        key, sep, value = item.partition("=")
        if not key or _ENV_KEY_FORBIDDEN.search(key):
            raise UsageError(f"{flag} {item!r}: expected KEY=VALUE or KEY")
        if not sep:
            if key not in environ:
                raise UsageError(f"{flag} {key}: {key} is not set in the local environment")
            value = environ[key]
        env[key] = value
    return env


def parse_env_files(files: Iterable[EnvFile], *, environ: Mapping[str, str]) -> dict[str, str]:
    """docker `--env-file`: KEY=VALUE lines taken literally; '#' comments and blanks skipped;
    a bare KEY copies the local value and is left out when unset (as docker does)."""
    env: dict[str, str] = {}
    for env_file in files:
        for number, line in enumerate(env_file.lines, start=1):
            text = line.rstrip("\r\n")
            if not text.strip() or text.lstrip().startswith("#"):
                continue
            key, sep, value = text.partition("=")
            key = key.lstrip()
            if not key or _ENV_KEY_FORBIDDEN.search(key) or key != key.rstrip():
                raise UsageError(
                    f"--env-file {env_file.path}:{number}: expected KEY=VALUE or KEY, got {text!r}"
                )
            if sep:
                env[key] = value
            elif key in environ:
                env[key] = environ[key]
    return env


def parse_user(raw: str) -> dict[str, int]:
    """`-u UID[:GID]` -> securityContext runAsUser/runAsGroup; names cannot be resolved remotely."""
    user, sep, group = raw.partition(":")
    if not user.isdigit() or (sep and not group.isdigit()):
        raise UsageError(
            f"--user {raw!r}: Kubernetes needs a numeric UID[:GID] (e.g. --user 1000:1000); "
            "user and group names cannot be looked up in the image"
        )
    for part in (user, group) if sep else (user,):
        if not _NUMERIC_ID.fullmatch(part) or int(part) > MAX_ID:
            raise UsageError(f"--user {raw!r}: ids must be at most {MAX_ID}")
    context = {"runAsUser": int(user)}
    if sep:
        context["runAsGroup"] = int(group)
    return context


_SECURITY_OPT_HELP = (
    "supported: no-new-privileges[:true|false], seccomp=runtime/default|unconfined|"
    "localhost/PATH, apparmor=runtime/default|unconfined|PROFILE, "
    "label=user:U|role:R|type:T|level:L"
)


def parse_security_opts(raw: Iterable[str]) -> dict[str, Any]:
    """docker `--security-opt` values -> container securityContext fields.

    no-new-privileges -> allowPrivilegeEscalation: false; seccomp= -> seccompProfile
    (RuntimeDefault, Unconfined, Localhost + localhostProfile: a path relative to the kubelet's
    seccomp directory, since a profile file cannot travel with the pod); apparmor= ->
    appArmorProfile; label= -> seLinuxOptions."""
    context: dict[str, Any] = {}
    for item in raw:
        key, _, value = item.partition("=")
        if item == "no-new-privileges" or item.startswith(
            ("no-new-privileges:", "no-new-privileges=")
        ):
            setting = item[len("no-new-privileges") + 1 :] or "true"
            if setting.lower() not in ("true", "false"):
                raise UsageError(f"--security-opt {item!r}: no-new-privileges takes true or false")
            context["allowPrivilegeEscalation"] = setting.lower() == "false"
        elif key == "seccomp" and value:
            context["seccompProfile"] = _profile(item, value, flag="seccomp")
        elif key == "apparmor" and value:
            context["appArmorProfile"] = _profile(item, value, flag="apparmor")
        elif key == "label" and value:
            option, colon, setting = value.partition(":")
            fields = {"user": "user", "role": "role", "type": "type", "level": "level"}
            if option not in fields or not colon or not setting:
                raise UsageError(
                    f"--security-opt {item!r}: Kubernetes takes label=user:U, role:R, type:T or "
                    "level:L (SELinux labelling cannot be disabled per pod)"
                )
            context.setdefault("seLinuxOptions", {})[fields[option]] = setting
        else:
            raise UsageError(f"--security-opt {item!r}: not understood; {_SECURITY_OPT_HELP}")
    return context


def _profile(item: str, value: str, *, flag: str) -> dict[str, str]:
    if value in ("unconfined", "Unconfined"):
        return {"type": "Unconfined"}
    if value in ("runtime/default", "RuntimeDefault", "default", "docker-default"):
        return {"type": "RuntimeDefault"}
    if value.startswith("localhost/") and len(value) > len("localhost/"):
        return {"type": "Localhost", "localhostProfile": value.removeprefix("localhost/")}
    if flag == "apparmor" and "/" not in value:
        return {"type": "Localhost", "localhostProfile": value}  # a profile loaded on the node
    raise UsageError(
        f"--security-opt {item!r}: a profile file cannot travel with the pod; install it on the "
        f"nodes and use {flag}=localhost/PATH (relative to the kubelet's {flag} directory), or "
        f"{flag}=runtime/default"
    )


def parse_capabilities(raw: Iterable[str], *, flag: str) -> list[str]:
    """`NET_ADMIN`, `cap_net_admin` or `ALL` -> Kubernetes capability names (no CAP_ prefix)."""
    result: list[str] = []
    for item in raw:
        for part in filter(None, (p.strip() for p in item.split(","))):
            name = part.upper().removeprefix("CAP_")
            if not _CAPABILITY.fullmatch(name):
                raise UsageError(f"{flag} {item!r}: not a capability name")
            if name not in result:
                result.append(name)
    return result


def parse_hostname(raw: str) -> str:
    if not is_rfc1123_label(raw):
        raise UsageError(f"--hostname {raw!r}: must be a lowercase RFC1123 label (≤ 63 chars)")
    return raw


def parse_add_hosts(raw: Iterable[str]) -> list[dict[str, Any]]:
    """`--add-host HOST:IP` (or HOST=IP) -> hostAliases, one entry per IP in first-seen order."""
    by_ip: dict[str, list[str]] = {}
    for item in raw:
        sep = "=" if "=" in item else ":"
        host, found, ip = item.partition(sep)
        ip = ip.strip("[]")
        if not found or not host or not ip:
            raise UsageError(f"--add-host {item!r}: expected HOST:IP")
        if ip == "host-gateway":
            raise UsageError(f"--add-host {item!r}: host-gateway has no meaning inside a cluster")
        try:
            ip = str(ipaddress.ip_address(ip))  # 999.1.1.1 and 1:2:3 are not addresses
        except ValueError:
            raise UsageError(f"--add-host {item!r}: {ip!r} is not an IP address") from None
        hosts = by_ip.setdefault(ip, [])
        if host not in hosts:
            hosts.append(host)
    return [{"ip": ip, "hostnames": hosts} for ip, hosts in by_ip.items()]


def parse_platform(raw: str) -> dict[str, str]:
    """`--platform linux/amd64` -> nodeSelector on kubernetes.io/os and kubernetes.io/arch."""
    parts = raw.lower().split("/")
    if len(parts) == 1 and parts[0] in _ARCHES:
        return {"kubernetes.io/arch": parts[0]}
    if len(parts) == 2 and parts[0] in _OSES and parts[1] in _ARCHES:
        return {"kubernetes.io/os": parts[0], "kubernetes.io/arch": parts[1]}
    if len(parts) == 3 and parts[0] in _OSES and parts[1] in _ARCHES:
        raise UsageError(
            f"--platform {raw!r}: variants cannot be selected by a node label; "
            f"use --platform {parts[0]}/{parts[1]}"
        )
    raise UsageError(f"--platform {raw!r}: expected OS/ARCH such as linux/amd64 or linux/arm64")
