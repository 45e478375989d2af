"""Strict structuring of a YAML document into a JobSpec, reporting every problem at once.

Rules (0.8.4's strictness, plus what it missed):
- unknown keys at any level are errors (cattrs `forbid_extra_keys`);
- scalars are exact: a bool is not an int, a string is not a list or a number; an int is fine
  where a float is expected;
- ranges, enums and cross-field rules are checked per section, so one bad section does not
  hide the problems of another;
- every problem is a ConfigProblem with the file, the line and a key path like
  `pod.gpu_order[1]`; all of them go out in one ConfigError.
Duplicate keys are rejected by the YAML reader before this module sees the data.
"""

from __future__ import annotations

import collections.abc
import enum
import re
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs
import cattrs
from cattrs.errors import (
    IterableValidationError,
    IterableValidationNote,
)
from cattrs.gen import make_dict_structure_fn

from pegboard.domain.config_problems import cattrs_problems, config_error, unknown_key_message
from pegboard.domain.documents import KeyPath, SourceDocument
from pegboard.domain.errors import ConfigError, PegboardError
from pegboard.domain.gpujob.spec import (
    DEFAULT_PROVIDER,
    SCHEMA_VERSION,
    AbsoluteOrTemplatePath,
    CloudType,
    Identifier,
    JobSpec,
    LifecycleAction,
    LifecycleSpec,
    NonBlankStr,
    NonEmptyStr,
    OctalMode,
    PodSpec,
    PortSpec,
    PositiveFloat,
    PositiveInt,
    PythonVersion,
    SampleInterval,
    SecretSpec,
    StorageMode,
    StorageSpec,
)
from pegboard.domain.input_limits import number_problem

if typing.TYPE_CHECKING:
    from pegboard.domain.gpujob.provider_registry import ProviderRegistry

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_OCTAL_MODE = re.compile(r"^0?[0-7]{3}$")
_PYTHON_VERSION = re.compile(r"^3\.\d+(\.\d+)?$")
_PORT = re.compile(r"^(\d{1,5})/(tcp|http)$")

_REMOVED_STOP_BLOCK = (
    "the `stop:` block was removed in runpod-deploy 0.8.3; use `lifecycle:` instead "
    "(on_success: delete|stop|preserve|recycle, on_failure: delete|stop|preserve; "
    "`stop: {on_success: true}` is `lifecycle: {on_success: stop}`)"
)
_SECRET_ALIASES = {"source_env": "env", "source_file": "file"}


class SpecValueError(PegboardError, ValueError):
    """A value problem whose message is meant for the user as is."""


class RuleViolations(PegboardError, ValueError):
    """Cross-field problems inside one section: (relative key path, message) pairs."""

    def __init__(self, violations: list[tuple[KeyPath, str]]) -> None:
        super().__init__("; ".join(message for _, message in violations))
        self.violations = violations


class SpecProblems(ConfigError):
    """The structural problems of a job spec, with the sections that did structure (by key),
    so later checks (budget, secrets, the SSH key) can still report theirs at once."""

    def __init__(self, error: ConfigError, sections: Mapping[str, Any]) -> None:
        super().__init__(error.problems)
        self.sections = dict(sections)


def parse_job_spec(document: SourceDocument, providers: ProviderRegistry) -> JobSpec:
    """Structure `document` into a JobSpec; raise one SpecProblems listing every problem.

    `pod.provider` must name one of `providers`; the sections they declare (`ssh:`, ...) are
    structured into `JobSpec.sections` (absent: their defaults) and checked by their rules.
    """
    found: list[tuple[KeyPath, str]] = []
    data = document.data
    kwargs: dict[str, Any] = {}
    fields = {f.name: f for f in attrs.fields(attrs.resolve_types(JobSpec)) if f.name != "sections"}
    known = [*fields, *providers.sections]
    if "stop" in data:
        found.append((("stop",), _REMOVED_STOP_BLOCK))
    for key in data:
        if key not in known and key != "stop":
            found.append(((str(key),), _unknown_key_message(key, known)))
    for name, field in fields.items():
        if name not in data:
            if field.default is attrs.NOTHING:
                found.append(((name,), "required key missing"))
            continue
        raw = _with_pod_defaults(data[name], providers) if name == "pod" else data[name]
        try:
            kwargs[name] = _CONVERTER.structure(raw, field.type or Any)
        except Exception as exc:  # every structuring failure becomes problems, never a crash
            found.extend(_problems_from(exc, (name,)))
            continue
        found.extend(_check_section(name, kwargs[name], providers))
    provider = _chosen_provider(data, kwargs)
    sections: dict[str, Any] = {}
    for key, section in providers.sections.items():
        try:
            sections[key] = (
                _CONVERTER.structure(data[key], section.type) if key in data else (section.type())
            )
        except Exception as exc:
            found.extend(_problems_from(exc, (key,)))
            continue
        if section.rules is not None and provider is not None and provider in providers:
            rules = section.rules(sections[key], provider)
            found.extend(((key, *path), message) for path, message in rules)
    if found:
        bad = {path[0] for path, _ in found if path}
        good = {k: v for k, v in {**kwargs, **sections}.items() if k not in bad}
        raise SpecProblems(config_error(document, found), good)
    return JobSpec(**kwargs, sections=sections)


def _chosen_provider(data: Mapping[str, Any], kwargs: Mapping[str, Any]) -> str | None:
    """The provider of a pod section that parsed, else the one the document names."""
    pod = kwargs.get("pod")
    if isinstance(pod, PodSpec):
        return str(pod.provider)
    raw = data.get("pod")
    name = raw.get("provider", DEFAULT_PROVIDER) if isinstance(raw, Mapping) else DEFAULT_PROVIDER
    return name if isinstance(name, str) else None


def _with_pod_defaults(raw: Any, providers: ProviderRegistry) -> Any:
    """The pod keys a provider makes optional (ssh: nothing to pick an image, a datacenter
    or a GPU type from there), filled in when the config leaves them out."""
    if not isinstance(raw, Mapping):
        return raw
    name = raw.get("provider", DEFAULT_PROVIDER)
    plugin = providers.get(name) if isinstance(name, str) else None
    if plugin is None or not plugin.pod_defaults:
        return raw
    return {**plugin.pod_defaults, **raw}


# --- scalar hooks ---------------------------------------------------------------------------


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _exact_str(value: Any, _: Any = None) -> str:
    if type(value) is not str:
        raise SpecValueError(f"must be a string, got {_type_name(value)}")
    return value


def _exact_int(value: Any, _: Any = None) -> int:
    if type(value) is not int:
        raise SpecValueError(f"must be an integer, got {_type_name(value)}")
    if problem := number_problem(value):  # range: every later conversion stays exact
        raise SpecValueError(problem)
    return value


def _exact_float(value: Any, _: Any = None) -> float:
    if type(value) not in (int, float):
        raise SpecValueError(f"must be a number, got {_type_name(value)}")
    if problem := number_problem(value):  # .inf, .nan, 1e400: never a usable setting
        raise SpecValueError(problem)
    return float(value)


def _exact_bool(value: Any, _: Any = None) -> bool:
    if type(value) is not bool:
        raise SpecValueError(f"must be true or false, got {_type_name(value)}")
    return value


def _constrained(
    base: Callable[[Any], Any], check: Callable[[Any], bool], requirement: str
) -> Callable[[Any, Any], Any]:
    def structure(value: Any, _: Any) -> Any:
        checked = base(value)
        if not check(checked):
            raise SpecValueError(f"{requirement}, got {value!r}")
        return checked

    return structure


def _valid_port(value: str) -> bool:
    match = _PORT.match(value)
    return match is not None and 1 <= int(match.group(1)) <= 65535


_NEWTYPE_HOOKS: dict[Any, Callable[[Any, Any], Any]] = {
    PositiveInt: _constrained(_exact_int, lambda v: v > 0, "must be > 0"),
    PositiveFloat: _constrained(_exact_float, lambda v: v > 0, "must be > 0"),
    SampleInterval: _constrained(_exact_int, lambda v: v >= 5, "must be >= 5"),
    NonEmptyStr: _constrained(_exact_str, bool, "must be non-empty"),
    NonBlankStr: _constrained(_exact_str, lambda v: bool(v.strip()), "must not be blank"),
    AbsoluteOrTemplatePath: _constrained(
        _exact_str,
        lambda v: v.startswith(("/", "{")),
        "must be an absolute path or start with a {template}",
    ),
    OctalMode: _constrained(
        _exact_str, lambda v: bool(_OCTAL_MODE.match(v)), "must be 3 or 4 octal digits (a string)"
    ),
    PythonVersion: _constrained(
        _exact_str,
        lambda v: bool(_PYTHON_VERSION.match(v)),
        "must look like '3.MINOR' or '3.MINOR.PATCH' (quote it in YAML)",
    ),
    PortSpec: _constrained(_exact_str, _valid_port, "must be '<1-65535>/<tcp|http>'"),
    Identifier: _constrained(
        _exact_str,
        lambda v: bool(_IDENTIFIER.match(v)),
        "must be an identifier ([A-Za-z_][A-Za-z0-9_]*)",
    ),
}


# --- container hooks ------------------------------------------------------------------------


def _is_homogeneous_tuple(tp: Any) -> bool:
    args = typing.get_args(tp)
    return typing.get_origin(tp) is tuple and len(args) == 2 and args[1] is Ellipsis


def _is_mapping(tp: Any) -> bool:
    return typing.get_origin(tp) in (collections.abc.Mapping, dict)


def _tuple_hook(tp: Any) -> Callable[[Any, Any], Any]:
    item_type = typing.get_args(tp)[0]

    def structure(value: Any, _: Any) -> tuple[Any, ...]:
        if type(value) is not list:
            raise SpecValueError(f"must be a list, got {_type_name(value)}")
        items: list[Any] = []
        errors: list[Exception] = []
        for index, item in enumerate(value):
            try:
                items.append(_CONVERTER.structure(item, item_type))
            except Exception as exc:
                exc.add_note(IterableValidationNote(f"@ index {index}", index, item_type))
                errors.append(exc)
        if errors:
            raise IterableValidationError("invalid items", errors, tp)
        return tuple(items)

    return structure


def _mapping_hook(tp: Any) -> Callable[[Any, Any], Any]:
    key_type, value_type = typing.get_args(tp)

    def structure(value: Any, _: Any) -> dict[Any, Any]:
        if type(value) is not dict:
            raise SpecValueError(f"must be a mapping, got {_type_name(value)}")
        result: dict[Any, Any] = {}
        errors: list[Exception] = []
        for key, item in value.items():
            try:
                result[_CONVERTER.structure(key, key_type)] = _CONVERTER.structure(item, value_type)
            except Exception as exc:
                exc.add_note(IterableValidationNote(f"@ key {key!r}", str(key), value_type))
                errors.append(exc)
        if errors:
            raise IterableValidationError("invalid entries", errors, tp)
        return result

    return structure


def _enum_hook(tp: type[enum.Enum]) -> Callable[[Any, Any], Any]:
    choices = [member.value for member in tp]

    def structure(value: Any, _: Any) -> enum.Enum:
        if type(value) is not str or value not in choices:
            raise SpecValueError(f"must be one of {', '.join(choices)}, got {value!r}")
        return tp(value)

    return structure


def _attrs_hook(converter: cattrs.Converter) -> Callable[[type], Callable[[Any, Any], Any]]:
    def factory(cls: type) -> Callable[[Any, Any], Any]:
        generated: Callable[[Any, Any], Any] = make_dict_structure_fn(
            attrs.resolve_types(cls), converter, _cattrs_forbid_extra_keys=True
        )
        field_names = {f.name for f in attrs.fields(cls)}
        renames = _SECRET_ALIASES if "file" in field_names and "env" in field_names else {}

        rule = _CLASS_RULES.get(cls)

        def structure(value: Any, _: Any) -> Any:
            if type(value) is not dict:
                raise SpecValueError(f"must be a mapping, got {_type_name(value)}")
            result = generated(_apply_aliases(value, renames) if renames else value, cls)
            violations = rule(result) if rule else []
            if violations:
                raise RuleViolations(violations)
            return result

        return structure

    return factory


def _apply_aliases(value: dict[str, Any], renames: Mapping[str, str]) -> dict[str, Any]:
    """Map the docs' secret keys onto 0.8.4's; both spellings at once is an error.

    The docs write `source_env: HF_TOKEN`, one variable as a string: it becomes `env: [HF_TOKEN]`.
    """
    result = dict(value)
    for alias, key in renames.items():
        if alias in result:
            if key in result:
                raise SpecValueError(f"set either {key!r} or {alias!r}, not both")
            aliased = result.pop(alias)
            result[key] = [aliased] if alias == "source_env" and type(aliased) is str else aliased
    return result


def _make_converter() -> cattrs.Converter:
    converter = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    converter.register_structure_hook(str, _exact_str)
    converter.register_structure_hook(int, _exact_int)
    converter.register_structure_hook(float, _exact_float)
    converter.register_structure_hook(bool, _exact_bool)
    for newtype, hook in _NEWTYPE_HOOKS.items():
        converter.register_structure_hook(newtype, hook)
    converter.register_structure_hook_factory(_is_homogeneous_tuple, _tuple_hook)
    converter.register_structure_hook_factory(_is_mapping, _mapping_hook)
    # Registered per class: a StrEnum is a str, and the exact-str hook would otherwise win.
    for enum_type in (CloudType, StorageMode, LifecycleAction):
        converter.register_structure_hook(enum_type, _enum_hook(enum_type))
    converter.register_structure_hook_factory(attrs.has, _attrs_hook(converter))
    return converter


_CONVERTER = _make_converter()


# --- turning cattrs errors into problems ----------------------------------------------------


def _problems_from(exc: BaseException, path: KeyPath) -> list[tuple[KeyPath, str]]:
    return list(cattrs_problems(exc, path, leaf=_leaf_problems, unknown_key=_unknown_key_message))


def _leaf_problems(exc: BaseException, path: KeyPath) -> list[tuple[KeyPath, str]]:
    if isinstance(exc, KeyError):
        return [(path, "required key missing")]
    if isinstance(exc, RuleViolations):
        return [((*path, *sub), message) for sub, message in exc.violations]
    if isinstance(exc, SpecValueError):
        return [(path, str(exc))]
    return [(path, f"invalid value ({exc})")]


def _unknown_key_message(key: object, known: Iterable[str], _cls: type | None = None) -> str:
    return unknown_key_message(key, known, list_known=True)


# --- rules that need more than one value ----------------------------------------------------


def _check_section(
    name: str, section: Any, providers: ProviderRegistry
) -> list[tuple[KeyPath, str]]:
    found: list[tuple[KeyPath, str]] = []
    if name == "pod" and section.provider not in providers:
        choices = ", ".join(providers)
        found.append((("pod", "provider"), f"must be one of {choices}, got {section.provider!r}"))
    elif name == "schema_version" and section != SCHEMA_VERSION:
        found.append(((name,), f"must be {SCHEMA_VERSION}, got {section!r}"))
    elif name == "variables":
        for key in section:
            if key in RESERVED_VARIABLES:
                found.append(((name, key), f"{key!r} is a built-in variable; pick another name"))
    return found


def _storage_rules(storage: StorageSpec) -> list[tuple[KeyPath, str]]:
    found: list[tuple[KeyPath, str]] = []
    if not storage.volume_mount.startswith("/"):
        found.append((("volume_mount",), "must be an absolute path"))
    if storage.mode is StorageMode.NETWORK_VOLUME and not storage.volume_name:
        found.append((("volume_name",), "required for network_volume storage"))
    if storage.mode is StorageMode.EPHEMERAL and storage.volume_gb is None:
        found.append((("volume_gb",), "required (> 0) for ephemeral storage"))
    return found


def _secret_rules(secret: SecretSpec) -> list[tuple[KeyPath, str]]:
    if bool(secret.env) == (secret.file is not None):
        return [((), "set exactly one of 'env' (or 'source_env') and 'file' (or 'source_file')")]
    if secret.var_name is not None and len(secret.env) != 1:
        what = "a file secret" if secret.file is not None else f"{len(secret.env)} variables"
        return [
            (
                ("var_name",),
                f"names the key of one environment variable (source_env: VAR); got {what}",
            )
        ]
    return []


def _pod_rules(pod: PodSpec) -> list[tuple[KeyPath, str]]:
    found: list[tuple[KeyPath, str]] = []
    if not pod.gpu_order:
        found.append((("gpu_order",), "must list at least one GPU type; there is nothing to try"))
    if not pod.datacenters:
        found.append(
            (("datacenters",), "must list at least one datacenter; there is nothing to try")
        )
    return found


def _lifecycle_rules(lifecycle: LifecycleSpec) -> list[tuple[KeyPath, str]]:
    if lifecycle.on_failure is LifecycleAction.RECYCLE:
        return [(("on_failure",), "recycle is only allowed for on_success")]
    return []


_CLASS_RULES: dict[type, Callable[[Any], list[tuple[KeyPath, str]]]] = {
    PodSpec: _pod_rules,
    StorageSpec: _storage_rules,
    SecretSpec: _secret_rules,
    LifecycleSpec: _lifecycle_rules,
}


# Linux limits on one file name and on a whole path, in bytes (NAME_MAX, PATH_MAX - 1).
NAME_MAX_BYTES = 255
PATH_MAX_BYTES = 4095


def local_path_problem(path: str) -> str | None:
    """Why no file system could create this local path (too long), or None.

    `run` writes the state file and the run directory after the pod exists, so `validate`
    and `run` refuse such a path before anything is created (issue 7 item 8).
    """
    if len(path.encode(errors="surrogateescape")) > PATH_MAX_BYTES:
        return f"the path is longer than {PATH_MAX_BYTES} bytes"
    for part in path.split("/"):
        size = len(part.encode(errors="surrogateescape"))
        if size > NAME_MAX_BYTES:
            return f"the file name {part[:40]!r}... is {size} bytes; the limit is {NAME_MAX_BYTES}"
    return None


RESERVED_VARIABLES = frozenset(
    {"config_dir", "project_root", "run_dir", "volume_mount", "run_id", "job_name"}
)

__all__ = [
    "RESERVED_VARIABLES",
    "RuleViolations",
    "SpecValueError",
    "local_path_problem",
    "parse_job_spec",
]
