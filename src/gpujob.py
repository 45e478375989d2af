"""runpod-deploy's job configs from Python: load, validate, render and plan (docs/library.md).

    from pegboard.gpujob import load_config, plan
    config = load_config(yaml_text)            # or a dict; raises ConfigError naming key and line
    steps = plan(config)                       # what `run --offline-dry-run` would do

`load_config` and `plan` do no I/O: the text is parsed by the same bounded YAML loader the CLI
uses, relative local paths resolve against `config_path`'s folder and `~` is `home`, as given.
`read_config` is the convenience that reads a file (and, by default, takes your real home).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pegboard.adapters.providers import discover_registry
from pegboard.adapters.yaml_documents import parse_yaml_document, read_yaml_document
from pegboard.domain.documents import SourceDocument
from pegboard.domain.gpujob.job_config import (
    JobConfig,
    JobPlan,
    PlannedSecret,
    load_job_config,
    plan_job,
)
from pegboard.domain.gpujob.provisioning import Candidate
from pegboard.domain.gpujob.templates import DEFAULT_STATE_DIR, run_dir_name

__all__ = [
    "RUN_STAMP",
    "JobConfig",
    "JobPlan",
    "PlannedSecret",
    "load_config",
    "plan",
    "read_config",
]

RUN_STAMP = run_dir_name(datetime(1970, 1, 1, tzinfo=UTC), "0000")
"""The run directory name `load_config` uses unless told (a real run takes the time and a
random suffix): fixed, so two loads of one config render the same."""


def load_config(
    config: str | bytes | Mapping[str, Any],
    *,
    config_path: str = "job.yaml",
    home: str = "~",
    variables: Mapping[str, str] | None = None,
    run_stamp: str = RUN_STAMP,
    state_dir: str = DEFAULT_STATE_DIR,
    cost_cap_usd: float | None = None,
    max_runtime_minutes: int | None = None,
) -> JobConfig:
    """A config (YAML text, or the mapping it would parse to) validated and rendered.

    Raises `pegboard.domain.errors.ConfigError` listing every problem (`.problems`: source,
    line, key path, message) or `UsageError` (a bad override). `variables` are `--var`s;
    `config_path` names the config in messages and anchors its relative paths.
    """
    if isinstance(config, str | bytes):
        document = parse_yaml_document(config, source=config_path)
    else:
        document = SourceDocument(source=config_path, data=dict(config))
    return load_job_config(
        document,
        providers=discover_registry(),
        config_path=config_path,
        home=home,
        run_stamp=run_stamp,
        cli_vars=variables,
        state_dir=state_dir,
        cost_cap_usd=cost_cap_usd,
        max_runtime_minutes=max_runtime_minutes,
    )


def read_config(
    path: str | os.PathLike[str], *, home: str | None = None, **options: Any
) -> JobConfig:
    """`load_config` of a file, read bounded as the CLI reads it; `home` defaults to yours.
    A missing or unreadable file is a ConfigError naming it."""
    absolute = Path(path).expanduser().absolute()
    document = read_yaml_document(absolute)
    return load_job_config(
        document,
        providers=discover_registry(),
        config_path=str(absolute),
        home=home if home is not None else os.path.expanduser("~"),
        run_stamp=options.pop("run_stamp", RUN_STAMP),
        cli_vars=options.pop("variables", None),
        **options,
    )


def plan(
    config: JobConfig, *, gpu_id: str | None = None, datacenter_id: str | None = None
) -> JobPlan:
    """Every step a run would take, as data. Without `gpu_id`/`datacenter_id` (both or neither,
    like `--gpu-id`/`--datacenter-id`): on the first GPU of `gpu_order` in the first datacenter,
    as `run --offline-dry-run` plans, asking nobody about stock."""
    if (gpu_id is None) != (datacenter_id is None):
        raise ValueError("gpu_id and datacenter_id go together")
    candidate = Candidate(gpu_id, datacenter_id) if gpu_id and datacenter_id else None
    return plan_job(config, candidate)
