"""Eager rendering of a JobSpec: every templated field is rendered before any pod exists.

Variables form one dependency graph, resolved on demand with cycle detection:
- built-ins: `config_dir`, `project_root`, `run_dir`, `volume_mount` (plain values), and
  `job_name` (the rendered `name`) and `run_id` (the rendered `run_id_prefix`, default the
  name, then `-<run stamp>`);
- YAML `variables` (templates), replaced by a CLI variable of the same name;
- CLI variables (`--vars-file` merged with `--var`, `--var` wins), templates as well.
So `{job_name}`/`{run_id}` are rendered values everywhere, a CLI override flows into every YAML
variable derived from it, and a YAML variable may use a CLI-only one. No strftime: `%` is
literal. Shell contexts (`setup[].command`, `preflight[].command`, `run.body`) use
`render_shell`; every other field uses `render_text` (see template_syntax for the rules).

Sizes are checked before anything is rendered (a variable bomb, `a1: "{a0}{a0}..."` ten levels
deep, would otherwise take gigabytes even when unused): one variable or field at most
MAX_RENDERED_CHARS, the whole config at most MAX_TOTAL_RENDERED_CHARS, variables referencing
each other at most MAX_NESTING_DEPTH deep.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import shlex
from collections.abc import Callable, Mapping
from datetime import UTC, datetime

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.documents import KeyPath, SourceDocument, format_key_path
from pegboard.domain.errors import ConfigError, ConfigProblem
from pegboard.domain.gpujob.spec import JobSpec, SecretSpec, secret_env_keys
from pegboard.domain.gpujob.template_syntax import (
    TemplateError,
    referenced_names,
    render_shell,
    render_text,
    rendered_length,
)
from pegboard.domain.input_limits import (
    MAX_NESTING_DEPTH,
    MAX_RENDERED_CHARS,
    MAX_TOTAL_RENDERED_CHARS,
)

__all__ = [
    "DEFAULT_STATE_DIR",
    "LEGACY_STATE_DIR",
    "RenderedArtifact",
    "RenderedCommand",
    "RenderedJob",
    "RenderedRemoteEnv",
    "RenderedRun",
    "RenderedSecret",
    "RenderedStaging",
    "RunBuiltins",
    "TemplateError",
    "default_state_file",
    "make_builtins",
    "render_job",
    "render_shell",
    "render_text",
    "run_dir_name",
]

ARTIFACTS_SUBDIR = "artifacts/runpod"
# Where the per-config default state files live: $XDG_STATE_HOME/runpod-deploy, which the app
# resolves from the environment; this is XDG's default for it. Earlier releases of pegboard used
# LEGACY_STATE_DIR, which the app still reads.
DEFAULT_STATE_DIR = "~/.local/state/runpod-deploy"
LEGACY_STATE_DIR = "~/.runpod-deploy/state"


def run_dir_name(now: datetime, unique_suffix: str) -> str:
    """`YYYYmmddTHHMMSS.ffffffZ-<suffix>`: sorts by time, unique within the same second."""
    if not re.fullmatch(r"[0-9a-f]{4,}", unique_suffix):
        raise ValueError(f"unique_suffix must be lowercase hex, got {unique_suffix!r}")
    return f"{now.astimezone(UTC).strftime('%Y%m%dT%H%M%S.%fZ')}-{unique_suffix}"


@attrs.frozen
class RunBuiltins:
    """The values the environment supplies; everything else comes from the spec."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    config_path: str  # absolute
    project_root: str  # absolute, resolved from local.project_root
    run_stamp: str  # run_dir_name(...)
    home: str  # for `~` in local paths and the state file
    state_dir: str = DEFAULT_STATE_DIR  # the directory of the default state file (`~` = home)

    @property
    def config_dir(self) -> str:
        return posixpath.dirname(self.config_path)

    @property
    def run_dir(self) -> str:
        return posixpath.join(self.project_root, ARTIFACTS_SUBDIR, self.run_stamp)


def make_builtins(
    spec: JobSpec,
    *,
    document: SourceDocument,
    config_path: str,
    home: str,
    run_stamp: str,
    state_dir: str = DEFAULT_STATE_DIR,
) -> RunBuiltins:
    """Resolve `local.project_root` (relative to the config's folder, `~` = home).

    Refuses a project root that is the home directory itself (0.8.4's typo guard: artifacts
    and `rsync --delete` pulls would land in $HOME).
    """
    config_dir = posixpath.dirname(config_path)
    root = _expand_home(spec.local.project_root, home)
    root = posixpath.normpath(posixpath.join(config_dir, root))
    if root == posixpath.normpath(home):
        path: KeyPath = ("local", "project_root")
        raise ConfigError(
            [
                ConfigProblem(
                    source=document.source,
                    line=document.line_of(path),
                    path=format_key_path(path),
                    message=f"resolves to your home directory ({root}); point it at the project",
                )
            ]
        )
    return RunBuiltins(
        config_path=config_path,
        project_root=root,
        run_stamp=run_stamp,
        home=home,
        state_dir=state_dir,
    )


def default_state_file(
    *, config_path: str, job_name: str, state_dir: str = DEFAULT_STATE_DIR
) -> str:
    """Per config and job name, so configs (and sweep shards with templated names) never share
    a pod pointer; stable across runs of the same config, so `recycle` finds its pod."""
    digest = hashlib.sha256(config_path.encode()).hexdigest()[:10]
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", job_name).strip("_") or "job"
    return posixpath.join(state_dir, f"{slug}-{digest}.json")


@attrs.frozen
class RenderedCommand:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    command: str
    timeout_sec: int
    with_env: bool


@attrs.frozen
class RenderedStaging:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    label: str
    source: str  # absolute local path; a trailing slash is kept (rsync semantics)
    destination: str
    excludes: tuple[str, ...]  # effective list: preset, excludes, excludes_extra
    delete: bool


@attrs.frozen
class RenderedSecret:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    name: str
    destination: str
    env: tuple[str, ...]
    file: str | None  # absolute local path
    mode: str
    var_name: str | None = None  # the key written for the one env variable (None: its name)

    @property
    def env_keys(self) -> tuple[tuple[str, str], ...]:
        return secret_env_keys(self.env, self.var_name)


@attrs.frozen
class RenderedRemoteEnv:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    source_files: tuple[str, ...]
    exports: Mapping[str, str]

    def shell_prefix(self) -> str:
        """`. file` for each existing source file, then the exports, all quoted; '' if empty."""
        parts = [f"if [ -f {_q(path)} ]; then . {_q(path)}; fi" for path in self.source_files]
        parts += [f"export {key}={_q(value)}" for key, value in self.exports.items()]
        return "".join(f"{part}; " for part in parts)


@attrs.frozen
class RenderedRun:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    script_path: str
    log_path: str
    success_marker: str
    body: str
    failure_markers: tuple[str, ...]


@attrs.frozen
class RenderedArtifact:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    label: str
    remote_path: str
    local_path: str  # absolute
    required: bool
    excludes: tuple[str, ...]
    delete: bool


@attrs.frozen
class RenderedJob:
    """Everything a run needs from the config, with every template already rendered."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    spec: JobSpec  # raw values of the fields that are not templated (pod, storage, budget, ...)
    job_name: str
    run_id: str
    run_dir: str
    config_path: str
    config_dir: str
    project_root: str
    volume_mount: str
    state_file: str  # `~` expanded
    variables: Mapping[str, str]  # every resolved variable, built-ins included
    required_paths: tuple[str, ...]  # absolute
    setup: tuple[RenderedCommand, ...]
    preflight: tuple[RenderedCommand, ...]
    python_pin: RenderedCommand | None  # runs before `preflight` when pod.python_version is set
    staging: tuple[RenderedStaging, ...]
    secrets: tuple[RenderedSecret, ...]
    remote_env: RenderedRemoteEnv
    run: RenderedRun
    artifacts: tuple[RenderedArtifact, ...]
    # CLI variables that no field uses (directly or through other variables) and that name no
    # YAML variable: most likely a typo (`--var greting=hi`); the app decides how loudly to say so.
    unused_cli_vars: tuple[str, ...] = ()

    @property
    def all_preflight(self) -> tuple[RenderedCommand, ...]:
        return ((self.python_pin,) if self.python_pin else ()) + self.preflight


def render_job(
    spec: JobSpec,
    *,
    cli_vars: Mapping[str, str],
    builtins: RunBuiltins,
    document: SourceDocument | None = None,
) -> RenderedJob:
    """Render every templated field; raise one ConfigError listing every problem.

    `document` (the parsed config) gives problems their file and line.
    """
    source = document.source if document is not None else builtins.config_path
    renderer = _Renderer(spec, cli_vars, builtins, document, source)
    job = renderer.render()
    if renderer.problems:
        raise ConfigError(renderer.problems)
    assert job is not None
    return job


_RenderFn = Callable[[str, Mapping[str, str]], str]
_BUILTIN_PATHS = ("config_dir", "project_root", "run_dir", "volume_mount")


class _Renderer:
    """Resolves the variable graph once, then renders each field, collecting problems."""

    def __init__(
        self,
        spec: JobSpec,
        cli_vars: Mapping[str, str],
        builtins: RunBuiltins,
        document: SourceDocument | None,
        source: str,
    ) -> None:
        self.spec = spec
        self.builtins = builtins
        self.document = document
        self.source = source
        self.problems: list[ConfigProblem] = []
        self.values: dict[str, str] = {
            "config_dir": builtins.config_dir,
            "project_root": builtins.project_root,
            "run_dir": builtins.run_dir,
            "volume_mount": spec.storage.volume_mount,
        }
        # name -> (template, where it was defined) for everything still to resolve
        self.templates: dict[str, tuple[str, _Where]] = {
            "job_name": (spec.name, _Where(path=("name",))),
            "run_id": (spec.run_id_prefix or spec.name, _Where(path=("run_id_prefix",))),
        }
        for yaml_name, template in spec.variables.items():
            self.templates[yaml_name] = (template, _Where(path=("variables", yaml_name)))
        for cli_name, template in cli_vars.items():
            where = _Where(path=(), flag=f"--var {cli_name}")
            if cli_name in (*_BUILTIN_PATHS, "job_name", "run_id"):
                self._problem(where, "is a built-in variable and cannot be overridden")
            else:
                self.templates[cli_name] = (template, where)
        self.cli_vars = cli_vars
        self.resolving: list[str] = []
        self.failed: set[str] = set()  # variables that could not be resolved (reported)
        self.variable_refs: dict[str, tuple[str, ...]] = {}  # variable -> the names it uses
        self.field_refs: set[str] = set()  # names the rendered fields use
        self.rendered_total = 0  # characters rendered so far (MAX_TOTAL_RENDERED_CHARS)

    def render(self) -> RenderedJob | None:
        for name in list(self.templates):
            self._resolve(name)
        spec, b = self.spec, self.builtins
        text, shell, local = self._text, self._shell, self._local_path
        job_name = self.values.get("job_name", spec.name)
        state_file = (
            text(spec.state_file, ("state_file",))
            if spec.state_file is not None
            else default_state_file(
                config_path=b.config_path, job_name=job_name, state_dir=b.state_dir
            )
        )
        job = RenderedJob(
            spec=spec,
            job_name=job_name,
            run_id=self.values.get("run_id", ""),
            run_dir=b.run_dir,
            config_path=b.config_path,
            config_dir=b.config_dir,
            project_root=b.project_root,
            volume_mount=spec.storage.volume_mount,
            state_file=_expand_home(state_file, b.home),
            variables=dict(self.values),
            required_paths=tuple(
                local(text(p, ("local", "required_paths", i)))
                for i, p in enumerate(spec.local.required_paths)
            ),
            setup=self._commands("setup"),
            preflight=self._commands("preflight"),
            python_pin=self._python_pin(),
            staging=tuple(
                RenderedStaging(
                    label=s.label,
                    source=local(text(s.source, ("staging", i, "source"))),
                    destination=self._pod_path(
                        text(s.destination, ("staging", i, "destination")),
                        ("staging", i, "destination"),
                    ),
                    excludes=tuple(
                        text(pattern, ("staging", i, "excludes"))
                        for pattern in s.effective_excludes
                    ),
                    delete=s.delete,
                )
                for i, s in enumerate(spec.staging)
            ),
            secrets=tuple(self._secret(i, s) for i, s in enumerate(spec.secrets)),
            remote_env=RenderedRemoteEnv(
                source_files=tuple(
                    text(f, ("remote_env", "source_files", i))
                    for i, f in enumerate(spec.remote_env.source_files)
                ),
                exports={
                    key: text(value, ("remote_env", "exports", key))
                    for key, value in spec.remote_env.exports.items()
                },
            ),
            run=RenderedRun(
                script_path=text(spec.run.script_path, ("run", "script_path")),
                log_path=text(spec.run.log_path, ("run", "log_path")),
                success_marker=text(spec.run.success_marker, ("run", "success_marker")),
                body=shell(spec.run.body, ("run", "body")),
                failure_markers=tuple(
                    text(m, ("run", "failure_markers", i))
                    for i, m in enumerate(spec.run.failure_markers)
                ),
            ),
            artifacts=tuple(
                RenderedArtifact(
                    label=a.label,
                    remote_path=self._pod_path(
                        text(a.remote_path, ("artifacts", i, "remote_path")),
                        ("artifacts", i, "remote_path"),
                    ),
                    local_path=self._inside_project(
                        local(text(a.local_path, ("artifacts", i, "local_path"))),
                        a.local_path,
                        ("artifacts", i, "local_path"),
                    ),
                    required=a.required,
                    excludes=tuple(
                        text(pattern, ("artifacts", i, "excludes", j))
                        for j, pattern in enumerate(a.excludes)
                    ),
                    delete=a.delete,
                )
                for i, a in enumerate(spec.artifacts)
            ),
            unused_cli_vars=self._unused_cli_vars(),  # last: every field is rendered by now
        )
        return None if self.problems else job

    def _unused_cli_vars(self) -> tuple[str, ...]:
        """CLI variables that reach no field: the fields' names, then what those use in turn."""
        used = set(self.field_refs)
        for root in ("job_name", "run_id"):
            used.update(self.variable_refs.get(root, ()))
        frontier = list(used)
        while frontier:
            for name in self.variable_refs.get(frontier.pop(), ()):
                if name not in used:
                    used.add(name)
                    frontier.append(name)
        unused = (n for n in self.cli_vars if n not in used and n not in self.spec.variables)
        return tuple(sorted(unused))

    # -- variables --

    def _resolve(self, name: str) -> str | None:
        if name in self.values:
            return self.values[name]
        if name in self.failed:  # reported once, where it failed
            return None
        value = self._resolve_once(name)
        if value is None:
            self.failed.add(name)
        return value

    def _resolve_once(self, name: str) -> str | None:
        template, where = self.templates[name]
        if name in self.resolving:
            cycle = " -> ".join([*self.resolving[self.resolving.index(name) :], name])
            self._problem(where, f"variables reference each other in a cycle: {cycle}")
            return None
        if len(self.resolving) >= MAX_NESTING_DEPTH:
            chain = " -> ".join([*self.resolving[:3], "...", name])
            self._problem(
                where, f"variables reference each other more than {MAX_NESTING_DEPTH} deep: {chain}"
            )
            return None
        self.resolving.append(name)
        try:
            names = referenced_names(template)
        except TemplateError as exc:
            self._problem(where, str(exc))
            names = ()
        self.variable_refs[name] = names
        ok = True
        for used in names:
            if used not in self.values and used not in self.templates:
                self._problem(where, _unknown(used, self._known()))
                ok = False
            elif self._resolve(used) is None:
                ok = False
        self.resolving.pop()
        if not ok or not self._size_ok(template, where):
            return None
        try:
            value = render_text(template, self.values)
        except TemplateError:
            return None  # already reported above
        if name == "run_id":
            value = f"{value}-{self.builtins.run_stamp}"
        self.values[name] = value
        return value

    def _size_ok(self, template: str, where: _Where) -> bool:
        """Whether rendering `template` stays within the limits (counted against the total)."""
        length = rendered_length(template, self.values)
        if length > MAX_RENDERED_CHARS:
            self._problem(
                where, f"renders to {length} characters, more than the limit {MAX_RENDERED_CHARS}"
            )
            return False
        self.rendered_total += length
        if self.rendered_total > MAX_TOTAL_RENDERED_CHARS:
            if self.rendered_total - length <= MAX_TOTAL_RENDERED_CHARS:  # report it once
                self._problem(
                    where,
                    f"the config renders to more than {MAX_TOTAL_RENDERED_CHARS} characters "
                    "in all (variables and fields together)",
                )
            return False
        return True

    def _known(self) -> list[str]:
        return sorted(set(self.values) | set(self.templates))

    # -- fields --

    def _text(self, template: str, path: KeyPath) -> str:
        return self._render(template, path, render_text)

    def _shell(self, template: str, path: KeyPath) -> str:
        return self._render(template, path, render_shell)

    def _render(self, template: str, path: KeyPath, how: _RenderFn) -> str:
        where = _Where(path=path)
        try:
            names = referenced_names(template)
        except TemplateError as exc:
            self._problem(where, str(exc))
            return template
        self.field_refs.update(names)
        missing = [name for name in names if name not in self.values]
        for name in missing:
            # A variable that exists but failed to resolve has its own problem already.
            if name not in self.templates:
                self._problem(where, _unknown(name, self._known()))
        if missing or not self._size_ok(template, where):
            return template
        try:
            return how(template, self.values)
        except TemplateError as exc:
            self._problem(where, str(exc))
            return template

    def _local_path(self, path: str) -> str:
        expanded = _expand_home(path, self.builtins.home)
        joined = posixpath.join(self.builtins.project_root, expanded)
        normal = posixpath.normpath(joined)
        return normal + "/" if joined.endswith("/") and normal != "/" else normal

    def _inside_project(self, resolved: str, written: str, path: KeyPath) -> str:
        """An artifact's local path that climbs with `..` must stay under project_root: a pull
        writes (and with `delete` removes) files there. Absolute paths are taken as written."""
        root = self.builtins.project_root.rstrip("/") or "/"
        climbs = ".." in written.replace("\\", "/").split("/")
        inside = resolved.rstrip("/") == root or resolved.startswith(root.rstrip("/") + "/")
        if climbs and not inside:
            self._problem(
                _Where(path=path),
                f"{written!r} resolves to {resolved.rstrip('/')}, outside project_root {root}",
            )
        return resolved

    def _pod_path(self, rendered: str, path: KeyPath) -> str:
        """A path on the pod must not climb with `..`: where it lands differs between a RunPod
        pod and the local provider (which refuses it only once the pod exists)."""
        if ".." in rendered.split("/"):
            self._problem(_Where(path=path), f"{rendered!r} must not contain '..'")
        return rendered

    def _commands(self, section: str) -> tuple[RenderedCommand, ...]:
        commands = self.spec.setup if section == "setup" else self.spec.preflight
        return tuple(
            RenderedCommand(
                command=self._shell(c.command, (section, i, "command")),
                timeout_sec=c.timeout_sec,
                with_env=c.with_env,
            )
            for i, c in enumerate(commands)
        )

    def _python_pin(self) -> RenderedCommand | None:
        version = self.spec.pod.python_version
        if version is None:
            return None
        pin = f"uv python install {_q(version)} && "
        if self.spec.staging:
            destination = self._text(
                self.spec.staging[0].destination, ("staging", 0, "destination")
            )
            pin += f"cd {_q(destination)} && "
        return RenderedCommand(
            command=pin + f"uv python pin {_q(version)}", timeout_sec=300, with_env=False
        )

    def _secret(self, index: int, secret: SecretSpec) -> RenderedSecret:
        path: KeyPath = ("secrets", index)
        return RenderedSecret(
            name=secret.name,
            destination=self._pod_path(
                self._text(secret.destination, (*path, "destination")), (*path, "destination")
            ),
            env=tuple(secret.env),
            file=(
                self._local_path(self._text(secret.file, (*path, "file")))
                if secret.file is not None
                else None
            ),
            mode=secret.mode,
            var_name=secret.var_name,
        )

    def _problem(self, where: _Where, message: str) -> None:
        if where.flag is not None:
            self.problems.append(ConfigProblem(source=where.flag, path="", message=message))
            return
        line = self.document.line_of(where.path) if self.document is not None else None
        self.problems.append(
            ConfigProblem(
                source=self.source, line=line, path=format_key_path(where.path), message=message
            )
        )


@attrs.frozen
class _Where:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    path: KeyPath
    flag: str | None = None


def _unknown(name: str, known: list[str]) -> str:
    del known  # the list is long and mostly built-ins; the hint says where names come from
    return (
        f"unknown template variable {{{name}}} (define it under `variables:` or pass "
        f"--var {name}=...; for a bash variable write ${{{{{name}}}}} or ${name})"
    )


def _expand_home(path: str, home: str) -> str:
    if path == "~":
        return home
    if path.startswith("~/"):
        return posixpath.join(home, path[2:])
    return path


def _q(value: str) -> str:
    return shlex.quote(value)
