"""Load a runpod-deploy config the same way for every command: read, parse, override, render.

`load_job` is the single path from a config file and CLI flags to a RenderedJob: the file read,
then the domain's load_job_config (strict parse, `--cost-cap-usd`/`--max-runtime-minutes`
overrides, the $HOME guard, eager rendering of every template, CLI variables included, and the
budget rule), then the checks that need this machine. `validate` and `run` both call it, so a
config that validates is a config that renders.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from pegboard.app.shared.seams import read_config_text
from pegboard.domain.errors import UsageError
from pegboard.domain.gpujob.job_config import JobConfig, load_job_config
from pegboard.domain.gpujob.templates import RenderedJob, run_dir_name
from pegboard.domain.input_limits import InputRejected, is_finite_number, loads_json

from .state_paths import state_paths

if TYPE_CHECKING:  # annotations only: validate must not import the ports (startup)
    from pegboard.domain.gpujob.provider_registry import ProviderRegistry

    from .run_types import ReadDocument

logger = logging.getLogger(__name__)


class CliVars(dict[str, str]):
    """The template variables of the command line: `--vars-file` merged with `--var`.

    It remembers which names a `--var` gave: one that no template uses is a typo until proven
    otherwise (a usage error), while a `--vars-file` shared by several configs may well hold
    names this config does not use (a warning).
    """

    def __init__(self, values: Mapping[str, str], *, from_flags: Sequence[str] = ()) -> None:
        super().__init__(values)
        self.from_flags = frozenset(from_flags)


LoadedJob = JobConfig  # what every command gets from its config (domain/gpujob/job_config.py)


def load_job(
    *,
    config_path: Path,
    read_document: ReadDocument,
    providers: ProviderRegistry,
    cli_vars: Mapping[str, str],
    home: str,
    now: datetime,
    environ: Mapping[str, str] | None = None,
    unique_suffix: str,
    cost_cap_usd: float | None = None,
    max_runtime_minutes: int | None = None,
) -> LoadedJob:
    """Everything `run` needs from the config; raises ConfigError/UsageError, never renders
    lazily. The pure part is load_job_config; here: reading the file, where this user's state
    lives (XDG), a state file an earlier release wrote, unused variables."""
    absolute = config_path.expanduser().absolute()
    document = read_document(absolute)
    state = state_paths(home, environ or {})
    loaded = load_job_config(
        document,
        providers=providers,
        config_path=str(absolute),
        home=home,
        run_stamp=run_dir_name(now, unique_suffix),
        cli_vars=cli_vars,
        state_dir=str(state.directory),
        cost_cap_usd=cost_cap_usd,
        max_runtime_minutes=max_runtime_minutes,
    )
    job = loaded.job
    if loaded.spec.state_file is None and not Path(job.state_file).exists():
        twin = state.legacy_twin(Path(job.state_file))
        if twin is not None:  # written by an earlier release: keep using it
            loaded = attrs.evolve(loaded, job=attrs.evolve(job, state_file=str(twin)))
    _check_unused_vars(loaded.job, cli_vars)
    return loaded


def _check_unused_vars(job: RenderedJob, cli_vars: Mapping[str, str]) -> None:
    """A `--var` no template uses is an error naming the closest used name; an unused
    `--vars-file` entry is a warning. (0.8.4 ignored both silently.)"""
    if not job.unused_cli_vars:
        return
    import difflib  # only for a variable no template uses: a run does not import it (~2 ms)

    flagged = cli_vars.from_flags if isinstance(cli_vars, CliVars) else frozenset(cli_vars)
    used = sorted(set(job.variables) - set(job.unused_cli_vars))
    typos = []
    for name in job.unused_cli_vars:
        close = difflib.get_close_matches(name, used, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        if name in flagged:
            typos.append(f"--var {name}: no template in {job.config_path} uses it{hint}")
        else:
            logger.warning(
                "--vars-file: %s: no template in %s uses it%s", name, job.config_path, hint
            )
    if typos:
        raise UsageError("; ".join(typos))


def merge_cli_vars(
    var_args: Sequence[str],
    vars_file: Path | None,
    *,
    read_text: Callable[[Path], str] = read_config_text,
) -> CliVars:
    """`--vars-file` (a JSON object) merged with `--var K=V` (repeatable; `--var` wins).

    The file is read bounded and strictly decoded (pegboard.domain.input_limits)."""
    merged: dict[str, str] = {}
    if vars_file is not None:
        merged.update(_read_vars_file(vars_file, read_text))
    flags = []
    for item in var_args:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--var expects KEY=VALUE, got {item!r}")
        _check_name(key, "--var")
        merged[key] = value
        flags.append(key)
    return CliVars(merged, from_flags=flags)


def _read_vars_file(path: Path, read_text: Callable[[Path], str]) -> dict[str, str]:
    try:
        data: Any = loads_json(read_text(path))
    except FileNotFoundError:
        raise UsageError(f"--vars-file {path}: no such file") from None
    except OSError as exc:
        raise UsageError(f"--vars-file {path}: cannot read: {exc.strerror or exc}") from None
    except InputRejected as exc:
        raise UsageError(f"--vars-file {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"--vars-file {path}: not valid JSON ({exc.msg}, line {exc.lineno})"
        ) from None
    if not isinstance(data, dict):
        raise UsageError(f"--vars-file {path}: must hold a JSON object of NAME: value")
    result: dict[str, str] = {}
    for key, value in data.items():
        _check_name(key, f"--vars-file {path}")
        if isinstance(value, bool):
            result[key] = "true" if value else "false"
        elif isinstance(value, str) or is_finite_number(value):
            result[key] = str(value)
        else:
            raise UsageError(
                f"--vars-file {path}: {key} must be a string or number, got {type(value).__name__}"
            )
    return result


def _check_name(key: str, where: str) -> None:
    if not key.isidentifier() or not key.isascii():
        raise UsageError(f"{where}: variable name must be an identifier, got {key!r}")
