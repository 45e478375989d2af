"""Strict validation of one config document (or a merged config) into SquarepegConfig.

cattrs does the structuring with its own Converter: unknown keys are errors everywhere in
squarepeg's schema, scalars must have the exact type, and every problem of a document is reported
at once with its file, line and dotted key path.

Deliberate exceptions to "exact type" (docs/squarepeg/config-reference.md, "Types"):
- squarepeg 0.4.1 compatibility, because `${VAR}` interpolation always yields strings: every
  integer key accepts an integer-looking string ("300") and every boolean key accepts
  true/false/yes/no/on/off/1/0 as a string (any case). Integers are never booleans, and
  booleans are never integers.
- `defaults.env` values may be YAML numbers or booleans; they become strings ("1", "0.5",
  "true"/"false") because Kubernetes env values are strings.
- `defaults.cpus`/`memory`/`gpus` may be YAML numbers and keep their text (`memory: 1073741824`
  means bytes).
- A top-level section (`defaults`, `volumes`, `kubernetes`, `job`, `profiles`) left empty (null,
  e.g. every child commented out) counts as an empty mapping, as in 0.4.1.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import cattrs
from cattrs.errors import BaseValidationError, IterableValidationError, IterableValidationNote
from cattrs.gen import make_dict_structure_fn, override

from pegboard.domain.config_problems import cattrs_problems, config_error, unknown_key_message
from pegboard.domain.documents import SourceDocument
from pegboard.domain.errors import UsageError
from pegboard.domain.input_limits import check_integer_literal, number_problem
from pegboard.domain.squarepeg import quantities
from pegboard.domain.squarepeg.config import (
    NAMESPACE_PATTERN,
    Defaults,
    ImagePullPolicy,
    JobPassthrough,
    KubernetesPassthrough,
    ProfileConfig,
    RunMode,
    SecurityPreset,
    SquarepegConfig,
    VolumeConfig,
)
from pegboard.domain.squarepeg.docker_flags import env_name_problem
from pegboard.domain.squarepeg.merge import copy_tree

T = TypeVar("T")

_TRUE_STRINGS = frozenset({"true", "yes", "on", "1"})
_FALSE_STRINGS = frozenset({"false", "no", "off", "0"})
_INT_STRING = re.compile(r"[+-]?\d+")
# The keys of a volume entry that squarepeg owns; the rest is the Kubernetes volume source.
_VOLUME_OWN_KEYS = ("mount_path", "read_only")


def validate_document(doc: SourceDocument) -> SquarepegConfig:
    """Structure `doc.data` into a SquarepegConfig, or raise one ConfigError with every problem."""
    try:
        return config_converter().structure(doc.data, SquarepegConfig)
    except (BaseValidationError, ValueError, TypeError) as exc:
        # A volume's `source` field is fed the entry itself, not a key the user wrote.
        found = cattrs_problems(
            exc, unknown_key=_unknown_key_message, transparent_attributes=frozenset({"source"})
        )
        raise config_error(doc, found) from None


@functools.cache
def config_converter() -> cattrs.Converter:
    """The one converter for squarepeg config (built on first use: cattrs compiles hooks)."""
    conv = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    conv.register_structure_hook(str, _exact_str)
    conv.register_structure_hook(bool, _compat_bool)
    conv.register_structure_hook(int, _compat_int)
    conv.register_structure_hook(RunMode, _run_mode)
    conv.register_structure_hook(SecurityPreset, _security_preset)
    conv.register_structure_hook(ImagePullPolicy, _pull_policy)

    _register_class(
        conv,
        Defaults,
        null_is_empty=True,
        cpus=override(struct_hook=_docker_value(_check_cpus, allow_float=True)),
        memory=override(struct_hook=_docker_value(_check_memory, allow_float=False)),
        gpus=override(struct_hook=_docker_value(_check_gpus, allow_float=False)),
        gpu_runtime_class=override(struct_hook=_runtime_class),
        workdir=override(struct_hook=_optional(_absolute_path)),
        env=override(struct_hook=_env),
    )
    volume_fn = _class_fn(
        conv, VolumeConfig, mount_path=override(struct_hook=_optional(_absolute_path))
    )

    def structure_volume(value: Any, _: Any) -> VolumeConfig:
        entry = _require_mapping(value)
        shaped = {key: entry[key] for key in _VOLUME_OWN_KEYS if key in entry}
        shaped["source"] = {k: v for k, v in entry.items() if k not in _VOLUME_OWN_KEYS}
        return volume_fn(shaped, VolumeConfig)

    conv.register_structure_hook(VolumeConfig, structure_volume)
    _register_class(
        conv, KubernetesPassthrough, null_is_empty=True, metadata=_opaque(), spec=_opaque()
    )
    _register_class(
        conv,
        JobPassthrough,
        null_is_empty=True,
        metadata=_opaque(),
        spec=override(struct_hook=_job_spec),
    )
    body = {
        "namespace": override(struct_hook=_optional(_namespace)),
        "timeout": override(struct_hook=_positive_int),
        "orphan_sweep_min_age": override(struct_hook=_non_negative_int),
        "orphan_sweep_interval": override(struct_hook=_non_negative_int),
        "volumes": override(struct_hook=_mapping_of(conv, VolumeConfig)),
    }
    _register_class(conv, ProfileConfig, null_is_empty=False, **body)
    _register_class(
        conv,
        SquarepegConfig,
        null_is_empty=False,
        profiles=override(struct_hook=_mapping_of(conv, ProfileConfig)),
        **body,
    )
    return conv


# --- class and mapping hooks --------------------------------------------------------------------


def _class_fn(conv: cattrs.Converter, cls: type[T], **overrides: Any) -> Callable[[Any, Any], T]:
    return make_dict_structure_fn(
        cls, conv, _cattrs_forbid_extra_keys=True, _cattrs_detailed_validation=True, **overrides
    )


def _register_class(
    conv: cattrs.Converter, cls: type[T], *, null_is_empty: bool, **overrides: Any
) -> None:
    structure = _class_fn(conv, cls, **overrides)

    def hook(value: Any, _: Any) -> T:
        if value is None and null_is_empty:
            value = {}
        return structure(_require_mapping(value), cls)

    conv.register_structure_hook(cls, hook)


def _mapping_of(conv: cattrs.Converter, cls: type[T]) -> Callable[[Any, Any], dict[str, T]]:
    """name -> cls; null is an empty mapping (a top-level section left empty)."""

    def hook(value: Any, _: Any) -> dict[str, T]:
        if value is None:
            return {}
        entries = _require_mapping(value)
        result: dict[str, T] = {}
        errors: list[Exception] = []
        for key, item in entries.items():
            try:
                if not isinstance(key, str):
                    raise ValueError(f"names must be strings, got {_describe(key)}")
                result[key] = conv.structure(item, cls)
            except Exception as exc:
                exc.add_note(
                    IterableValidationNote(f"Structuring mapping value @ key {key!r}", key, cls)
                )
                errors.append(exc)
        if errors:
            raise IterableValidationError(
                f"While structuring a mapping of {cls.__name__}", errors, dict
            )
        return result

    return hook


def _env(value: Any, _: Any) -> dict[str, str]:
    entries = _require_mapping(value, what="a mapping of NAME: value")
    result: dict[str, str] = {}
    errors: list[Exception] = []
    for key, item in entries.items():
        try:
            if problem := env_name_problem(key):
                raise ValueError(problem)
            result[key] = _env_value(item)
        except ValueError as exc:
            exc.add_note(IterableValidationNote(f"env @ key {key!r}", key, str))
            errors.append(exc)
    if errors:
        raise IterableValidationError("While structuring defaults.env", errors, dict)
    return result


def _env_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if value is None:
        raise ValueError("no value (null); write '' for an empty value")
    raise ValueError(f"expected a string, got {_describe(value)}")


def _opaque() -> Any:
    def hook(value: Any, _: Any) -> dict[str, Any]:
        copied: dict[str, Any] = copy_tree(_require_mapping(value))
        _check_json_numbers(copied)
        return copied

    return override(struct_hook=hook)


def _job_spec(value: Any, _: Any) -> dict[str, Any]:
    spec: dict[str, Any] = copy_tree(_require_mapping(value))
    _check_json_numbers(spec)
    if "template" in spec:
        raise ValueError(
            "'template' is built by squarepeg; put pod settings under kubernetes.spec and "
            "kubernetes.metadata (they are re-homed under the Job's template)"
        )
    return spec


def _check_json_numbers(tree: Any) -> None:
    """Passthrough goes to the apiserver as JSON, which has no .inf or .nan: refuse them here
    (the request would carry `Infinity` and fail remotely). Depth is bounded by the loader."""
    stack = [tree]
    while stack:
        value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{value} is not a JSON number; the apiserver cannot accept it")
        if isinstance(value, Mapping):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)


def _require_mapping(value: Any, *, what: str = "a mapping") -> Mapping[Any, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"expected {what}, got {_describe(value)}")
    return value


# --- scalar hooks -------------------------------------------------------------------------------


def _exact_str(value: Any, _: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {_describe(value)}")
    return value


def _compat_bool(value: Any, _: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in _TRUE_STRINGS:
            return True
        if lowered in _FALSE_STRINGS:
            return False
    raise ValueError(f"expected a boolean (true or false), got {_describe(value)}")


def _compat_int(value: Any, _: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and _INT_STRING.fullmatch(value.strip()):
        check_integer_literal(value)  # before int(): 5,000 digits would raise, not refuse
        number = int(value.strip())
    else:
        raise ValueError(f"expected an integer, got {_describe(value)}")
    if problem := number_problem(number):
        raise ValueError(problem)
    return number


def _positive_int(value: Any, _: Any) -> int:
    number = _compat_int(value, int)
    if number <= 0:
        raise ValueError(f"must be a positive number of seconds, got {number}")
    return number


def _non_negative_int(value: Any, _: Any) -> int:
    number = _compat_int(value, int)
    if number < 0:
        raise ValueError(f"must not be negative, got {number}")
    return number


def _run_mode(value: Any, _: Any) -> RunMode:
    text = _exact_str(value, str).strip().lower()
    for mode in RunMode:
        if mode.value == text:
            return mode
    raise ValueError(f"expected pod or job, got {value!r}")


def _security_preset(value: Any, _: Any) -> SecurityPreset:
    text = _exact_str(value, str).strip().lower()
    for preset in SecurityPreset:
        if preset.value == text:
            return preset
    raise ValueError(f"expected default or restricted, got {value!r}")


def _pull_policy(value: Any, _: Any) -> ImagePullPolicy:
    text = _exact_str(value, str).strip().lower()
    for policy in ImagePullPolicy:
        if policy.value.lower() == text:
            return policy
    choices = ", ".join(policy.value for policy in ImagePullPolicy)
    raise ValueError(f"expected one of {choices}, got {value!r}")


def _namespace(value: Any) -> str:
    text = _exact_str(value, str)
    if len(text) > 63 or not NAMESPACE_PATTERN.fullmatch(text):
        raise ValueError(
            "expected a lowercase RFC 1123 label (a-z, 0-9 and '-', starting and ending with "
            f"a letter or digit, at most 63 characters), got {text!r}"
        )
    return text


def _absolute_path(value: Any) -> str:
    text = _exact_str(value, str)
    if not text.startswith("/"):
        raise ValueError(f"expected an absolute path (starting with /), got {text!r}")
    return text


def _runtime_class(value: Any, _: Any) -> str | None:
    if value is None or value == "":
        return None  # null or "" turns runtimeClassName off
    return _exact_str(value, str)


def _optional(check: Callable[[Any], str]) -> Callable[[Any, Any], str | None]:
    def hook(value: Any, _: Any) -> str | None:
        return None if value is None else check(value)

    return hook


def _docker_value(
    check: Callable[[str], object], *, allow_float: bool
) -> Callable[[Any, Any], str | None]:
    """A docker-syntax value: a string, or a YAML number kept as its text; checked up front."""

    def hook(value: Any, _: Any) -> str | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ValueError(f"expected a string or a number, got {_describe(value)}")
        if isinstance(value, float) and not allow_float:
            raise ValueError(f"expected a string or an integer, got {_describe(value)}")
        text = value if isinstance(value, str) else str(value)
        try:
            check(text)
        except UsageError as exc:
            # quantities' messages start with "<flag> <value>: "; keep only the reason.
            raise ValueError(f"{text!r}: {str(exc).split(': ', 1)[-1]}") from None
        return text

    return hook


def _check_cpus(text: str) -> object:
    return quantities.docker_cpus_to_k8s(text, flag="cpus")


def _check_memory(text: str) -> object:
    return quantities.docker_memory_to_k8s(text, flag="memory")


def _check_gpus(text: str) -> object:
    return quantities.docker_gpus_to_count(text, flag="gpus")


def _unknown_key_message(key: object, known: Sequence[str], cls: type | None) -> str:
    if key == "profiles" and cls is ProfileConfig:
        return "profiles cannot be nested inside a profile"
    return unknown_key_message(key, known)


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"{value!r}"
    if isinstance(value, int):
        return f"an integer ({value})"
    if isinstance(value, float):
        return f"a number ({value})"
    return f"a {type(value).__name__}"
