"""The public library API of squarepeg's client side: command line + config -> manifest.

    from pegboard.domain.squarepeg.render import render_manifest, resolve_run
    from pegboard.domain.squarepeg.request import RunRequest

    manifest = render_manifest(
        RunRequest(image="alpine", command=("echo", "hi"), cpus="0.5", memory="512m"),
        [{"namespace": "team"}],         # config layers (dicts), or a merged SquarepegConfig
        environ={}, user="jane", run_id="0b6f...-uuid", random_hex="a1b2c3",
    )

Everything that varies (environment, user name, randomness, working directory, the kubeconfig
namespace) is passed in, so the same inputs always give the same manifest. Pure: no I/O.
See docs/library.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from pegboard.domain.documents import SourceDocument
from pegboard.domain.errors import ConfigError, ConfigProblem, UsageError
from pegboard.domain.input_limits import MAX_CONFIG_NUMBER
from pegboard.domain.kubernetes import labels
from pegboard.domain.squarepeg import claims as claims_mod
from pegboard.domain.squarepeg import docker_flags, naming, quantities, validation
from pegboard.domain.squarepeg.config import RunMode, SecurityPreset, SquarepegConfig
from pegboard.domain.squarepeg.kube_references import escape_references
from pegboard.domain.squarepeg.layers import config_from_layers
from pegboard.domain.squarepeg.manifest import (
    ContainerParts,
    PodParts,
    build_job_manifest,
    build_pod_manifest,
)
from pegboard.domain.squarepeg.request import RunRequest
from pegboard.domain.squarepeg.resolved_run import OutputSettings, ResolvedRun, SweepSettings
from pegboard.domain.squarepeg.volumes import plan_volumes

__all__ = [
    "DEFAULT_CONTAINER_NAME",
    "PULL_POLICIES",
    "ConfigInput",
    "render_manifest",
    "resolve_run",
]

DEFAULT_CONTAINER_NAME = "main"
PULL_POLICIES = {"always": "Always", "missing": "IfNotPresent", "never": "Never"}
T = TypeVar("T")
ConfigInput = SquarepegConfig | Sequence[SourceDocument | Mapping[str, Any]]


def _config(
    config: ConfigInput, request: RunRequest, environ: Mapping[str, str]
) -> SquarepegConfig:
    if isinstance(config, SquarepegConfig):
        return config
    return config_from_layers(config, environ=environ, profile=request.profile)


def _from_config(path: str, convert: Callable[[], T]) -> T:
    """Run a converter on a config value, reporting a bad value as a ConfigError on `path`."""
    try:
        return convert()
    except UsageError as exc:
        raise ConfigError([ConfigProblem(source="config", path=path, message=str(exc))]) from None


def _flag_or_default(
    flag_value: str | None, default: str | None, path: str, convert: Callable[[str], T]
) -> T | None:
    """The flag's value converted, else the config default's (a bad one reported on `path`)."""
    if flag_value is not None:
        return convert(flag_value)
    if default is not None:
        configured = default
        return _from_config(path, lambda: convert(configured))
    return None


def _check_image(image: str) -> str:
    if not image.strip():
        raise UsageError("IMAGE must not be empty")
    if image.startswith("-"):
        raise UsageError(
            f"{image!r} looks like a flag, not an image; squarepeg options go before IMAGE"
        )
    if any(c.isspace() for c in image):
        raise UsageError(f"IMAGE {image!r} must not contain whitespace")
    return image


def _mode(request: RunRequest, config: SquarepegConfig) -> RunMode:
    if request.mode is None:
        return config.mode
    try:
        return RunMode(request.mode.lower())
    except ValueError:
        raise UsageError(f"--mode {request.mode!r}: expected pod or job") from None


def _env(
    request: RunRequest, config: SquarepegConfig, environ: Mapping[str, str]
) -> tuple[dict[str, str], frozenset[str]]:
    """(env, keys the command line set): defaults.env, then --env-file, then -e; later wins."""
    env = {key: _env_string(value) for key, value in config.defaults.env.items()}
    from_cli = docker_flags.parse_env_files(request.env_files, environ=environ)
    from_cli.update(docker_flags.parse_env(request.env, environ=environ))
    env.update(from_cli)
    return env, frozenset(from_cli)


def _env_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _resources(
    request: RunRequest, config: SquarepegConfig
) -> tuple[dict[str, Any], dict[str, Any], bool]:
    """(requests, limits, gpu wanted) from --cpus/-m/--gpus, then defaults, then --request-*/--limit-*."""
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    defaults = config.defaults
    cpu = _flag_or_default(
        request.cpus, defaults.cpus, "defaults.cpus", quantities.docker_cpus_to_k8s
    )
    memory = _flag_or_default(
        request.memory, defaults.memory, "defaults.memory", quantities.docker_memory_to_k8s
    )
    gpus = _flag_or_default(
        request.gpus, defaults.gpus, "defaults.gpus", quantities.docker_gpus_to_count
    )
    for section, cpu_flag, memory_flag, raw_cpu, raw_memory in (
        (
            requests,
            "--request-cpu",
            "--request-memory",
            request.request_cpu,
            request.request_memory,
        ),
        (limits, "--limit-cpu", "--limit-memory", request.limit_cpu, request.limit_memory),
    ):
        section_cpu = (
            cpu if raw_cpu is None else quantities.k8s_cpu_quantity(raw_cpu, flag=cpu_flag)
        )
        section_memory = (
            memory
            if raw_memory is None
            else quantities.k8s_memory_quantity(raw_memory, flag=memory_flag)
        )
        if section_cpu is not None:
            section["cpu"] = section_cpu
        if section_memory is not None:
            section["memory"] = section_memory
        if gpus is not None:
            section[defaults.gpu_resource] = gpus
    for resource in ("cpu", "memory"):
        request_value, limit_value = requests.get(resource), limits.get(resource)
        if request_value is None or limit_value is None:
            continue
        low = quantities.parse_k8s_quantity(request_value)
        high = quantities.parse_k8s_quantity(limit_value)
        if low is not None and high is not None and low > high:
            raise UsageError(
                f"the {resource} request {request_value} is above its limit {limit_value} "
                f"(--request-{resource} / --limit-{resource} / --cpus / -m)"
            )
    return requests, limits, bool(gpus)


def _security_context(request: RunRequest, config: SquarepegConfig) -> dict[str, Any]:
    context: dict[str, Any] = {}
    if request.user is not None:
        context.update(docker_flags.parse_user(request.user))
        if context["runAsUser"] != 0:
            # A numeric non-root user is what Pod Security `restricted` asks the pod to assert
            # (runAsNonRoot); docker has no flag for it, and it holds by construction here.
            context["runAsNonRoot"] = True
    context.update(docker_flags.parse_security_opts(request.security_opt))
    if request.read_only:
        context["readOnlyRootFilesystem"] = True
    if request.privileged:
        if not config.allow_privileged:
            raise UsageError(
                "--privileged is off; set 'allow_privileged: true' in config to allow "
                "privileged pods"
            )
        context["privileged"] = True
    capabilities: dict[str, list[str]] = {}
    if request.cap_add:
        capabilities["add"] = docker_flags.parse_capabilities(request.cap_add, flag="--cap-add")
    if request.cap_drop:
        capabilities["drop"] = docker_flags.parse_capabilities(request.cap_drop, flag="--cap-drop")
    if capabilities:
        context["capabilities"] = capabilities
    if config.security is SecurityPreset.RESTRICTED:
        _restricted(context)
    return context


def _restricted(context: dict[str, Any]) -> None:
    """Config `security: restricted`: what Pod Security Admission's `restricted` level checks
    (staging/src/k8s.io/pod-security-admission/policy: allowPrivilegeEscalation=false,
    capabilities.drop ["ALL"] and nothing added but NET_BIND_SERVICE, runAsNonRoot=true, not
    runAsUser 0, seccompProfile RuntimeDefault or Localhost). Flags that contradict it are a
    usage error naming both, never a pod the cluster refuses later."""
    where = "config 'security: restricted'"
    if context.get("privileged"):
        raise UsageError(f"--privileged contradicts {where} (restricted pods are unprivileged)")
    if context.get("runAsUser") == 0:
        raise UsageError(f"--user 0 contradicts {where}: run as a non-root UID, e.g. -u 1000")
    if context.get("allowPrivilegeEscalation") is True:
        raise UsageError(f"--security-opt no-new-privileges=false contradicts {where}")
    seccomp = (context.get("seccompProfile") or {}).get("type")
    if seccomp == "Unconfined":
        raise UsageError(f"--security-opt seccomp=unconfined contradicts {where}")
    capabilities = context.setdefault("capabilities", {})
    added = [c for c in capabilities.get("add") or () if c != "NET_BIND_SERVICE"]
    if added:
        raise UsageError(
            f"--cap-add {added[0]} contradicts {where} (only NET_BIND_SERVICE may be added)"
        )
    drop = capabilities.setdefault("drop", [])
    if "ALL" not in drop:
        drop.append("ALL")
    context["allowPrivilegeEscalation"] = False
    context["runAsNonRoot"] = True
    context.setdefault("seccompProfile", {"type": "RuntimeDefault"})


def _namespace(request: RunRequest, config: SquarepegConfig) -> str | None:
    """-n, else config `namespace`, else a namespace set in passthrough metadata (all explicit).

    Passthrough naming another namespace than -n/config is an error, never silently ignored.
    """
    if request.namespace is not None:
        naming.validate_name(request.namespace, flag="--namespace")
    explicit = request.namespace if request.namespace is not None else config.namespace
    origin = "-n" if request.namespace is not None else "config namespace"
    candidates = [
        ("kubernetes.metadata.namespace", config.kubernetes.metadata.get("namespace")),
        ("job.metadata.namespace", config.job.metadata.get("namespace")),
    ]
    for path, value in candidates:
        if value is None:
            continue
        if not isinstance(value, str) or not naming.is_rfc1123_label(value):
            raise ConfigError([ConfigProblem("config", path, f"{value!r} is not a namespace")])
        if explicit is None:
            explicit, origin = value, path
        elif value != explicit:
            raise ConfigError(
                [ConfigProblem("config", path, f"{value!r} disagrees with {origin} {explicit!r}")]
            )
    return explicit


def resolve_run(
    request: RunRequest,
    config_or_layers: ConfigInput = (),
    *,
    environ: Mapping[str, str],
    user: str,
    run_id: str,
    random_hex: str,
    cwd: str = "/",
    default_namespace: str | None = None,
) -> ResolvedRun:
    """Resolve a command line against a merged config into a ResolvedRun (manifest included).

    `user` is the local user name (sanitised here into the created-by label), `run_id` a UUID
    string, `random_hex` 6 lowercase hex chars for a generated name, `cwd` resolves `./x` host
    paths, `default_namespace` (e.g. the kubeconfig context's) is used only when neither -n,
    config nor passthrough name one. `config_or_layers` is a merged SquarepegConfig, or the
    config layers (plain dicts), merged here with `request.profile`.
    """
    config = _config(config_or_layers, request, environ)
    image = _check_image(request.image)
    if request.rm and request.keep:
        raise UsageError("--rm and --keep contradict each other")
    if request.dry_run and request.dry_run_server:
        raise UsageError("--dry-run and --dry-run-server are mutually exclusive")
    container_name = naming.validate_name(
        request.container_name or DEFAULT_CONTAINER_NAME, flag="--container-name"
    )
    mode = _mode(request, config)
    keep = request.keep or not config.cleanup
    timeout = request.timeout if request.timeout is not None else config.timeout
    if timeout <= 0 or timeout > MAX_CONFIG_NUMBER:
        raise UsageError(
            f"--timeout {timeout}: must be a positive number of seconds, "
            f"at most {MAX_CONFIG_NUMBER}"
        )
    if request.workdir is not None and not request.workdir.startswith("/"):
        raise UsageError(f"--workdir {request.workdir!r}: must be an absolute path")
    pull = None
    if request.pull is not None:
        pull = PULL_POLICIES.get(request.pull.lower())
        if pull is None:
            raise UsageError(f"--pull {request.pull!r}: expected always, missing or never")
    elif config.defaults.image_pull_policy is not None:
        pull = config.defaults.image_pull_policy.value

    if request.hostname == "":
        raise UsageError("--hostname must not be empty")
    if request.platform == "":
        raise UsageError("--platform must not be empty")
    env, cli_env_keys = _env(request, config, environ)
    volume_plan = plan_volumes(
        cli_volumes=request.volumes,
        configured=config.volumes,
        allow_host_path_mounts=config.allow_host_path_mounts,
        cwd=cwd,
        tmpfs=request.tmpfs,
        shm_size=request.shm_size,
    )
    requests, limits, wants_gpu = _resources(request, config)
    user_labels = labels.parse_user_labels(request.labels)
    created_by = labels.sanitize_label_value(user)
    all_labels = {
        **labels.own_labels(run_id=run_id, created_by=created_by, keep=keep),
        **user_labels,
    }
    explicit_namespace = _namespace(request, config)
    namespace = explicit_namespace if explicit_namespace is not None else default_namespace
    if request.name is not None:
        name = naming.validate_name(request.name)
    else:
        name = naming.generate_name(image, random_hex=random_hex)

    # What the user typed is what the container sees: the kubelet's $(VAR) / $$ expansion is
    # undone in advance, unless asked for (kube_references.py).
    expand = request.kube_expand or config.kube_expand

    def as_typed(text: str) -> str:
        return text if expand else escape_references(text)

    parts = PodParts(
        name=name,
        labels=all_labels,
        namespace=namespace,
        container=ContainerParts(
            name=container_name,
            image=image,
            command=[as_typed(request.entrypoint)] if request.entrypoint is not None else None,
            args=[as_typed(arg) for arg in request.command],
            working_dir=request.workdir if request.workdir is not None else config.defaults.workdir,
            env={key: as_typed(value) for key, value in env.items()},
            image_pull_policy=pull,
            tty=request.tty,
            stdin=request.interactive,
            requests=requests,
            limits=limits,
            volume_mounts=volume_plan.mounts,
            security_context=_security_context(request, config),
        ),
        runtime_class_name=config.defaults.gpu_runtime_class if wants_gpu else None,
        volumes=volume_plan.volumes,
        hostname=docker_flags.parse_hostname(request.hostname) if request.hostname else None,
        host_aliases=docker_flags.parse_add_hosts(request.add_hosts),
        node_selector=docker_flags.parse_platform(request.platform) if request.platform else {},
    )
    claimed = claims_mod.as_strings(
        claims_mod.claims_for(
            request,
            container_name=container_name,
            env_keys=cli_env_keys,
            cli_volume_names=volume_plan.cli_volume_names,
            user_label_keys=user_labels,
            gpu_resource=config.defaults.gpu_resource,
            keep=keep,
            namespace_explicit=namespace is not None,
        )
    )
    if mode is RunMode.JOB:
        manifest = build_job_manifest(parts, config.kubernetes, config.job, claims=claimed)
    else:
        manifest = build_pod_manifest(parts, config.kubernetes, claims=claimed)
    validation.check_manifest(manifest, container_name=container_name)
    return ResolvedRun(
        manifest=manifest,
        kind=mode.resource_kind,
        name=manifest["metadata"]["name"],
        namespace=manifest["metadata"].get("namespace"),
        context=request.context,
        container_name=container_name,
        run_id=all_labels[labels.RUN_ID],
        created_by=created_by,
        keep=keep,
        startup_timeout_seconds=timeout,
        lenient_tls=config.lenient_tls,
        output=OutputSettings(
            quiet=request.quiet or config.quiet, color=False if request.no_color else None
        ),
        sweep=SweepSettings(
            enabled=config.orphan_sweep,
            min_age_seconds=config.orphan_sweep_min_age,
            interval_seconds=config.orphan_sweep_interval,
        ),
    )


def render_manifest(
    request: RunRequest,
    config_or_layers: ConfigInput = (),
    *,
    environ: Mapping[str, str],
    user: str,
    run_id: str,
    random_hex: str,
    cwd: str = "/",
    default_namespace: str | None = None,
) -> dict[str, Any]:
    """Just the manifest `squarepeg run --dry-run` would print (see resolve_run)."""
    return resolve_run(
        request,
        config_or_layers,
        environ=environ,
        user=user,
        run_id=run_id,
        random_hex=random_hex,
        cwd=cwd,
        default_namespace=default_namespace,
    ).manifest
