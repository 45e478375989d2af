"""Checking a config (`runpod-deploy validate`): everything a run would check before a pod
exists, and no more.

Always: strict parse (every problem at once, with file:line), `--cost-cap-usd` /
`--max-runtime-minutes` overrides, the $HOME project_root guard, eager rendering of every
template with the given `--var`/`--vars-file`, the budget rule, every secret's source present
(environment variable set, file there), and a warning when a network volume is paired with
several datacenters (the run goes to the volume's). Opt-ins: `--check-local` (required_paths exist), `--scan-consumer`,
`--check-availability` and `--check-image-registry` (network; honest "skipped" when this
process has no provider access), `--all` for every opt-in.
Notes and warnings are logged (stderr); the CLI prints the verdict.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from pegboard.domain.documents import format_key_path
from pegboard.domain.errors import ConfigError, ConfigProblem, PegboardError
from pegboard.domain.gpujob.network_volume import several_datacenters_warning
from pegboard.domain.gpujob.secret_sources import missing_secret_sources
from pegboard.domain.gpujob.spec import DEFAULT_PROVIDER, PodSpec, SecretSpec
from pegboard.domain.gpujob.spec_validation import SpecProblems
from pegboard.domain.gpujob.templates import RenderedSecret

from .gpu_names import gpu_catalog, unknown_gpu_problems
from .job_loading import LoadedJob, load_job

if TYPE_CHECKING:  # annotations only: validate must not import the ports (startup)
    from pegboard.domain.documents import KeyPath, SourceDocument
    from pegboard.domain.gpujob.provider_registry import ProviderRegistry
    from pegboard.domain.ports.gpu_cloud import GpuCloud, GpuStock

    from .run_types import ReadDocument

logger = logging.getLogger(__name__)


@attrs.frozen
class ValidateRequest:
    """`runpod-deploy validate` flags (`--all` already spread over the opt-ins)."""

    config_path: Path
    cli_vars: Mapping[str, str] = attrs.field(factory=dict)
    cost_cap_usd: float | None = None
    max_runtime_minutes: int | None = None
    check_local: bool = False
    scan_consumer: bool = False
    check_availability: bool = False
    check_image_registry: bool = False


def check_config(
    request: ValidateRequest,
    *,
    read_document: ReadDocument,
    providers: ProviderRegistry,
    home: str,
    now: datetime,
    unique_suffix: str,
    environ: Mapping[str, str],
    gpu_cloud: Callable[[str], GpuCloud],
) -> LoadedJob:
    """Every check `validate` asked for; raises ConfigError/UsageError/PegboardError.

    Every problem at once: when the structure, a template or the budget is wrong, the secrets
    and the provider's access (its plugin's check_access: the SSH key of runpod and ssh) of the
    sections that did parse are checked too, in the same error. `gpu_cloud(provider)`: that
    provider's GpuCloud, for `--check-availability`."""
    try:
        loaded = load_job(
            config_path=request.config_path,
            read_document=read_document,
            providers=providers,
            cli_vars=request.cli_vars,
            home=home,
            environ=environ,
            now=now,
            unique_suffix=unique_suffix,
            cost_cap_usd=request.cost_cap_usd,
            max_runtime_minutes=request.max_runtime_minutes,
        )
    except SpecProblems as exc:
        document = read_document(request.config_path.expanduser().absolute())
        more = _section_problems(exc.sections, document, environ, home, providers)
        raise ConfigError(_sorted([*exc.problems, *more])) from None
    logger.info(loaded.budget.summary())
    problems = _secret_source_problems(loaded, environ)
    plugin = providers.plugin(str(loaded.spec.pod.provider))
    problems += _access_problems(plugin.check_access(loaded.spec.sections, home), loaded.document)
    if request.check_local:
        problems += _required_path_problems(loaded)
    if problems:
        raise ConfigError(problems)
    if request.check_local:
        logger.info("[check-local] %d required path(s) present", len(loaded.job.required_paths))
    warning = several_datacenters_warning(loaded.spec)
    if warning is not None:
        logger.warning("[validate] %s", warning)
    if request.scan_consumer:
        from .consumer_scan import scan_consumer

        for finding in scan_consumer(loaded.job):
            logger.warning("[scan-consumer] %s", finding)
    if request.check_availability:
        _check_availability(loaded, gpu_cloud, providers)
    if request.check_image_registry:
        logger.warning(
            "[check-image-registry] skipped: needs network access to the image registry, "
            "which this build does not use; pod.image was not checked"
        )
    return loaded


def _section_problems(
    sections: Mapping[str, Any],
    document: SourceDocument,
    environ: Mapping[str, str],
    home: str,
    providers: ProviderRegistry,
) -> list[ConfigProblem]:
    """What can still be checked when the config does not load: each secret's environment
    variable and (absolute, untemplated) file, and the provider's access (the SSH key), from
    the sections that parsed."""
    problems: list[ConfigProblem] = []
    secrets = sections.get("secrets")
    if isinstance(secrets, tuple):
        plain = [
            RenderedSecret(
                name=secret.name,
                destination=secret.destination,
                env=tuple(secret.env),
                file=secret.file,
                mode=secret.mode,
                var_name=secret.var_name,
            )
            for secret in secrets
            if isinstance(secret, SecretSpec)
        ]

        def is_file(path: str) -> bool:
            return "{" in path or not os.path.isabs(path) or os.path.isfile(path)

        problems += [
            ConfigProblem(
                source=document.source,
                line=document.line_of(("secrets", item.index)),
                path=f"secrets[{item.index}]",
                message=item.message,
            )
            for item in missing_secret_sources(
                plain, is_set=lambda name: name in environ, is_file=is_file
            )
        ]
    plugin = providers.get(_provider_of(sections.get("pod"), document))
    if plugin is not None:
        problems += _access_problems(plugin.check_access(sections, home), document)
    return problems


def _provider_of(pod: Any, document: SourceDocument) -> str:
    """The provider of a pod section that parsed, else the one the document names (the
    default when it names none)."""
    if isinstance(pod, PodSpec):
        return str(pod.provider)
    raw = document.data.get("pod")
    name = raw.get("provider", DEFAULT_PROVIDER) if isinstance(raw, Mapping) else DEFAULT_PROVIDER
    return name if isinstance(name, str) else ""


def _sorted(problems: list[ConfigProblem]) -> list[ConfigProblem]:
    return sorted(problems, key=lambda p: (p.line is None, p.line or 0))


def _access_problems(
    found: Sequence[tuple[KeyPath, str]], document: SourceDocument
) -> list[ConfigProblem]:
    """A plugin's access problems, each at its key's line (else its section's, when the
    config leaves the key to its default)."""
    problems = []
    for path, message in found:
        where = path
        while where and document.line_of(where) is None:
            where = where[:-1]
        problems.append(
            ConfigProblem(
                source=document.source,
                line=document.line_of(where) if where else None,
                path=format_key_path(path),
                message=message,
            )
        )
    return problems


def _required_path_problems(loaded: LoadedJob) -> list[ConfigProblem]:
    document = loaded.document
    problems = []
    for index, path in enumerate(loaded.job.required_paths):
        if not os.path.exists(path):
            key = ("local", "required_paths", index)
            problems.append(
                ConfigProblem(
                    source=document.source,
                    line=document.line_of(key),
                    path=f"local.required_paths[{index}]",
                    message=f"does not exist: {path}",
                )
            )
    return problems


def _secret_source_problems(loaded: LoadedJob, environ: Mapping[str, str]) -> list[ConfigProblem]:
    """Each secret's environment variable set and file present, as `run` will need them."""
    document = loaded.document
    missing = missing_secret_sources(
        loaded.job.secrets, is_set=lambda name: name in environ, is_file=os.path.isfile
    )
    return [
        ConfigProblem(
            source=document.source,
            line=document.line_of(("secrets", item.index)),
            path=f"secrets[{item.index}]",
            message=item.message,
        )
        for item in missing
    ]


def _check_availability(
    loaded: LoadedJob, gpu_cloud: Callable[[str], GpuCloud], providers: ProviderRegistry
) -> None:
    """Live stock of the configured GPUs; an id the provider does not list is a config error
    naming its key (the datacenter listing shows every GPU type a datacenter has)."""
    pod = loaded.spec.pod
    plugin = providers.plugin(str(pod.provider))
    if not plugin.live_stock:
        logger.info(
            "[check-availability] provider %s: nothing to check (%s)",
            pod.provider,
            plugin.no_stock_note,
        )
        return
    cloud_type = str(pod.cloud_type)
    try:
        cloud = gpu_cloud(plugin.name)
        listed = cloud.datacenter_stock(datacenter_ids=list(pod.datacenters), cloud_type=cloud_type)
        stock = cloud.gpu_availability(
            gpu_ids=list(pod.gpu_order), datacenter_ids=list(pod.datacenters), cloud_type=cloud_type
        )
    except PegboardError as exc:
        logger.warning("[check-availability] skipped: needs provider access (%s)", exc)
        return
    _check_known_ids(loaded, listed, gpu_catalog(cloud, pod, listed=plugin.gpu_catalog))
    available = [s for s in stock if s.available]
    for entry in stock:
        logger.info(
            "[check-availability] %s in %s: %s", entry.gpu_id, entry.datacenter_id, entry.stock
        )
    if not available:
        raise PegboardError(
            f"{loaded.document.source}: pod.gpu_order: no configured GPU is in stock in "
            f"{', '.join(pod.datacenters)} ({pod.cloud_type})"
        )


def _check_known_ids(
    loaded: LoadedJob, listed: Sequence[GpuStock], catalog: frozenset[str]
) -> None:
    """Datacenters RunPod lists no GPU in; GPU names no catalog lists (closest names), then
    known GPUs these datacenters do not offer."""
    pod, document = loaded.spec.pod, loaded.document
    unknown = unknown_gpu_problems(pod.gpu_order, catalog, document)
    unknown_paths = {problem.path for problem in unknown}
    known_dcs = {entry.datacenter_id for entry in listed}
    known_gpus = {entry.gpu_id for entry in listed}
    problems = [
        ConfigProblem(
            source=document.source,
            line=document.line_of(("pod", "datacenters", index)),
            path=f"pod.datacenters[{index}]",
            message=f"datacenter {dc!r} is not known to RunPod (no GPU listed there)",
        )
        for index, dc in enumerate(pod.datacenters)
        if dc not in known_dcs
    ]
    problems += unknown
    if known_dcs:
        where = ", ".join(sorted(known_dcs))
        problems += [
            ConfigProblem(
                source=document.source,
                line=document.line_of(("pod", "gpu_order", index)),
                path=f"pod.gpu_order[{index}]",
                message=f"GPU type {gpu!r} is not listed in {where} "
                f"(see: runpod-deploy gpu-list --datacenter {sorted(known_dcs)[0]})",
            )
            for index, gpu in enumerate(pod.gpu_order)
            if gpu not in known_gpus and f"pod.gpu_order[{index}]" not in unknown_paths
        ]
    if problems:
        raise ConfigError(problems)
