"""A runpod-deploy config from a parsed document to a rendered job, without any I/O.

`load_job_config` is the pure part of what `validate` and `run` do with a config: strict parse,
the `--cost-cap-usd`/`--max-runtime-minutes` overrides, the $HOME guard, every template rendered
(CLI variables included), local paths no file system can hold refused, the budget rule. The app
(app/runpod_deploy/job_loading.py) calls it, then adds what needs the machine (a state file an
earlier release wrote, warnings about unused variables). `plan_job` is the dry run as data.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.documents import KeyPath, SourceDocument, format_key_path
from pegboard.domain.errors import ConfigError, ConfigProblem
from pegboard.domain.gpujob.budget import (
    BudgetEstimate,
    apply_budget_overrides,
    check_budget,
    check_budget_section,
)
from pegboard.domain.gpujob.provider_registry import ProviderRegistry
from pegboard.domain.gpujob.provisioning import Candidate, offline_candidate, pod_request
from pegboard.domain.gpujob.spec import (
    BudgetSpec,
    JobSpec,
    LifecycleAction,
    PositiveFloat,
    PositiveInt,
    StorageMode,
)
from pegboard.domain.gpujob.spec_validation import (
    SpecProblems,
    local_path_problem,
    parse_job_spec,
)
from pegboard.domain.gpujob.templates import (
    DEFAULT_STATE_DIR,
    RenderedArtifact,
    RenderedJob,
    RenderedStaging,
    make_builtins,
    render_job,
)
from pegboard.domain.ports.gpu_cloud import PodRequest

__all__ = ["JobConfig", "JobPlan", "PlannedSecret", "load_job_config", "plan_job"]


@attrs.frozen
class JobConfig:
    """A config that validates: its document, the spec (overrides applied), the rendered job
    and the budget the config allows."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    document: SourceDocument
    spec: JobSpec
    job: RenderedJob
    budget: BudgetEstimate


def load_job_config(
    document: SourceDocument,
    *,
    providers: ProviderRegistry,
    config_path: str,
    home: str,
    run_stamp: str,
    cli_vars: Mapping[str, str] | None = None,
    state_dir: str = DEFAULT_STATE_DIR,
    cost_cap_usd: float | None = None,
    max_runtime_minutes: int | None = None,
) -> JobConfig:
    """Parse, override, render and check one config; raises ConfigError (every problem, with
    file, key and line) or UsageError (a bad override).

    `config_path` is where the config lives (its folder resolves relative local paths),
    `home` what `~` means, `run_stamp` the run directory's name (templates.run_dir_name),
    `providers` the registered providers (`pod.provider` and their sections).
    """
    overridden = cost_cap_usd is not None or max_runtime_minutes is not None
    try:
        spec = parse_job_spec(document, providers)
    except SpecProblems as exc:
        # Every problem at once: the budget rule still holds for a budget section that parsed.
        budget_section = exc.sections.get("budget")
        if isinstance(budget_section, BudgetSpec):
            budget_section = _with_overrides(budget_section, cost_cap_usd, max_runtime_minutes)
            more = _problems_of(
                lambda: check_budget_section(
                    budget_section, document=document, overridden=overridden
                )
            )
            if more:
                raise SpecProblems(ConfigError([*exc.problems, *more]), exc.sections) from None
        raise
    spec = apply_budget_overrides(
        spec, cost_cap_usd=cost_cap_usd, max_runtime_minutes=max_runtime_minutes
    )
    builtins = make_builtins(
        spec,
        document=document,
        config_path=config_path,
        home=home,
        run_stamp=run_stamp,
        state_dir=state_dir,
    )
    problems: list[ConfigProblem] = []
    try:
        job = render_job(spec, cli_vars=cli_vars or {}, builtins=builtins, document=document)
    except ConfigError as exc:  # template problems, and the budget's below
        problems += exc.problems
    else:
        problems += _problems_of(lambda: _check_local_paths(document, spec, job))
    problems += _problems_of(lambda: check_budget(spec, document=document, overridden=overridden))
    if problems:
        sections = {**attrs.asdict(spec, recurse=False), **spec.sections}
        raise SpecProblems(ConfigError(problems), sections)
    budget = check_budget(spec, document=document, overridden=overridden)
    return JobConfig(document=document, spec=spec, job=job, budget=budget)


def _problems_of(check: Callable[[], object]) -> list[ConfigProblem]:
    try:
        check()
    except ConfigError as exc:
        return list(exc.problems)
    return []


def _with_overrides(
    budget: BudgetSpec, cost_cap_usd: float | None, max_runtime_minutes: int | None
) -> BudgetSpec:
    if cost_cap_usd is not None and cost_cap_usd > 0:
        budget = attrs.evolve(budget, cost_cap_usd=PositiveFloat(cost_cap_usd))
    if max_runtime_minutes is not None and max_runtime_minutes > 0:
        budget = attrs.evolve(budget, max_runtime_minutes=PositiveInt(max_runtime_minutes))
    return budget


def _check_local_paths(document: SourceDocument, spec: JobSpec, job: RenderedJob) -> None:
    """Refuse local paths no file system can hold: `run` writes them after the pod exists."""
    checks: list[tuple[KeyPath, str, str]] = [
        (
            ("state_file",) if spec.state_file is not None else ("name",),
            job.state_file,
            "the state file",
        ),
        (("local", "project_root"), job.run_dir, "the run directory"),
    ]
    problems = []
    for path, value, what in checks:
        reason = local_path_problem(value)
        if reason is not None:
            problems.append(
                ConfigProblem(
                    source=document.source,
                    line=document.line_of(path),
                    path=format_key_path(path),
                    message=f"{what} {value[:80]}... cannot be created: {reason}",
                )
            )
    if problems:
        raise ConfigError(problems)


@attrs.frozen
class PlannedSecret:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    name: str
    destination: str


@attrs.frozen
class JobPlan:
    """Every step a run of the config would take, in order (what `run --dry-run` logs).

    Commands are the rendered ones: a secret's value never appears in them (secrets are written
    to files on the pod), but a value you put in a command yourself does."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    pod: PodRequest  # what would be created (the run id is the pod's name)
    network_volume_name: str | None  # looked up when provisioning (its datacenter wins)
    setup: tuple[str, ...]
    preflight: tuple[str, ...]  # the python pin first when pod.python_version is set
    secrets: tuple[PlannedSecret, ...]
    staging: tuple[RenderedStaging, ...]
    script_path: str
    log_path: str
    artifacts: tuple[RenderedArtifact, ...]
    on_success: LifecycleAction
    on_failure: LifecycleAction
    budget: BudgetEstimate


def plan_job(
    config: JobConfig,
    candidate: Candidate | None = None,
    *,
    network_volume_id: str | None = None,
) -> JobPlan:
    """The plan on `candidate` (default: the offline dry run's, the first GPU of `gpu_order` in
    the first datacenter, asking nobody)."""
    spec, job = config.spec, config.job
    chosen = candidate or offline_candidate(spec).candidates[0]
    request = pod_request(spec, chosen, name=job.run_id, network_volume_id=network_volume_id)
    volume = (
        spec.storage.volume_name
        if network_volume_id is None and spec.storage.mode is StorageMode.NETWORK_VOLUME
        else None
    )
    return JobPlan(
        pod=request,
        network_volume_name=volume,
        setup=tuple(command.command for command in job.setup),
        preflight=tuple(command.command for command in job.all_preflight),
        secrets=tuple(PlannedSecret(s.name, s.destination) for s in job.secrets),
        staging=job.staging,
        script_path=job.run.script_path,
        log_path=job.run.log_path,
        artifacts=job.artifacts,
        on_success=spec.lifecycle.on_success,
        on_failure=spec.lifecycle.on_failure,
        budget=config.budget,
    )
