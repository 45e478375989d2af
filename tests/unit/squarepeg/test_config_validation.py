"""validate_document: strict types, compat coercions, unknown keys, every problem at once."""

from __future__ import annotations

from typing import Any

import pytest

from pegboard.adapters.yaml_documents import parse_yaml_document
from pegboard.domain.documents import SourceDocument
from pegboard.domain.errors import ConfigError
from pegboard.domain.squarepeg.config import (
    Defaults,
    ImagePullPolicy,
    ProfileConfig,
    RunMode,
    SquarepegConfig,
    VolumeConfig,
)
from pegboard.domain.squarepeg.config_validation import validate_document
from pegboard.domain.squarepeg.layers import built_in_defaults

EXAMPLE_0_4_1 = """\
namespace: my-namespace
mode: pod                    # pod | job
cleanup: true
timeout: 300
quiet: false
allow_host_path_mounts: false
split_streams: false
defaults:
  cpus: "1"
  memory: 2g
  image_pull_policy: IfNotPresent
  workdir: /work
  env:
    TZ: Europe/London
volumes:
  scratch:
    emptyDir: {sizeLimit: 10Gi}
  refdata:
    persistentVolumeClaim: {claimName: refdata-pvc, readOnly: true}
kubernetes:
  metadata:
    labels: {team: bioinf}
  spec:
    serviceAccountName: squarepeg
    tolerations:
      - {key: dedicated, operator: Equal, value: batch, effect: NoSchedule}
    containers:
      - name: main
        securityContext: {allowPrivilegeEscalation: false}
job:
  spec:
    backoffLimit: 0
    ttlSecondsAfterFinished: 3600
profiles:
  gpu:
    defaults: {cpus: "8", memory: 32g}
    kubernetes:
      spec:
        nodeSelector: {"nvidia.com/gpu.present": "true"}
"""


def _validate(text: str) -> SquarepegConfig:
    return validate_document(parse_yaml_document(text, source="c.yaml"))


def _problems(text: str) -> list[tuple[int | None, str, str]]:
    with pytest.raises(ConfigError) as exc:
        _validate(text)
    return [(p.line, p.path, p.message) for p in exc.value.problems]


def _data(data: dict[str, Any]) -> SquarepegConfig:
    return validate_document(SourceDocument(source="c", data=data))


def test_the_0_4_1_example_config_validates() -> None:
    config = _validate(EXAMPLE_0_4_1)
    assert config.namespace == "my-namespace"
    assert config.mode is RunMode.POD
    assert config.defaults == Defaults(
        cpus="1",
        memory="2g",
        image_pull_policy=ImagePullPolicy.IF_NOT_PRESENT,
        workdir="/work",
        env={"TZ": "Europe/London"},
    )
    assert config.volumes["refdata"] == VolumeConfig(
        source={"persistentVolumeClaim": {"claimName": "refdata-pvc", "readOnly": True}}
    )
    assert config.kubernetes.spec["serviceAccountName"] == "squarepeg"
    assert config.job.spec == {"backoffLimit": 0, "ttlSecondsAfterFinished": 3600}
    assert config.profiles["gpu"].defaults.cpus == "8"


def test_an_empty_document_gives_the_defaults() -> None:
    assert _data({}) == SquarepegConfig()


def test_the_built_in_defaults_layer_matches_the_schema_defaults() -> None:
    assert validate_document(built_in_defaults()) == SquarepegConfig()


def test_every_problem_is_reported_with_line_and_path_in_file_order() -> None:
    problems = _problems("timeout: soon\nbogus: 1\ndefaults:\n  colour: red\n  env:\n    A: [1]\n")
    assert problems == [
        (1, "timeout", "expected an integer, got 'soon'"),
        (2, "bogus", "unknown key 'bogus'"),
        (4, "defaults.colour", "unknown key 'colour'"),
        (6, "defaults.env.A", "expected a string, got a list"),
    ]


def test_unknown_key_suggests_a_close_match() -> None:
    assert _problems("namespaec: x\n") == [
        (1, "namespaec", "unknown key 'namespaec' (did you mean 'namespace'?)")
    ]


@pytest.mark.parametrize(
    ("value", "expected"),
    [(True, True), ("yes", True), ("ON", True), ("1", True), (" false ", False), ("0", False)],
)
def test_bool_keys_accept_0_4_1_bool_strings(value: Any, expected: bool) -> None:
    assert _data({"quiet": value}).quiet is expected
    assert _data({"volumes": {"v": {"read_only": value}}}).volumes["v"].read_only is expected


@pytest.mark.parametrize("value", [1, 0, "maybe", None, 1.0, [True]])
def test_bool_keys_reject_everything_else(value: Any) -> None:
    with pytest.raises(ConfigError, match="expected a boolean"):
        _data({"cleanup": value})


@pytest.mark.parametrize(("value", "expected"), [(30, 30), ("30", 30), (" 45 ", 45)])
def test_int_keys_accept_int_looking_strings(value: Any, expected: int) -> None:
    assert _data({"timeout": value}).timeout == expected


@pytest.mark.parametrize("value", [True, 1.5, "1.5", "soon", None, "1e3"])
def test_int_keys_reject_everything_else(value: Any) -> None:
    with pytest.raises(ConfigError, match="expected an integer"):
        _data({"orphan_sweep_min_age": value})


def test_timeout_must_be_positive_and_min_age_not_negative() -> None:
    with pytest.raises(ConfigError, match="positive"):
        _data({"timeout": 0})
    with pytest.raises(ConfigError, match="negative"):
        _data({"orphan_sweep_min_age": "-1"})
    assert _data({"orphan_sweep_min_age": 0}).orphan_sweep_min_age == 0


@pytest.mark.parametrize("value", [1, True, None, ["x"]])
def test_string_keys_take_no_coercion(value: Any) -> None:
    with pytest.raises(ConfigError):
        _data({"defaults": {"gpu_resource": value}})


@pytest.mark.parametrize(
    ("raw", "mode"), [("pod", RunMode.POD), ("Job", RunMode.JOB), (" JOB ", RunMode.JOB)]
)
def test_mode_is_normalised(raw: str, mode: RunMode) -> None:
    assert _data({"mode": raw}).mode is mode


@pytest.mark.parametrize(
    ("raw", "policy"),
    [("Always", ImagePullPolicy.ALWAYS), ("ifnotpresent", ImagePullPolicy.IF_NOT_PRESENT)],
)
def test_image_pull_policy_is_an_enum(raw: str, policy: ImagePullPolicy) -> None:
    assert _data({"defaults": {"image_pull_policy": raw}}).defaults.image_pull_policy is policy


def test_image_pull_policy_rejects_other_values() -> None:
    with pytest.raises(ConfigError, match="Always, IfNotPresent, Never"):
        _data({"defaults": {"image_pull_policy": "missing"}})


def test_env_values_become_strings_deliberately() -> None:
    env = {"S": "s", "I": 1, "F": 0.5, "T": True, "N": False}
    assert _data({"defaults": {"env": env}}).defaults.env == {
        "S": "s",
        "I": "1",
        "F": "0.5",
        "T": "true",
        "N": "false",
    }


@pytest.mark.parametrize("key", ["", "A=B", 3])
def test_env_names_must_be_non_empty_strings_without_equals(key: Any) -> None:
    with pytest.raises(ConfigError, match="environment variable name"):
        _data({"defaults": {"env": {key: "x"}}})


def test_docker_values_keep_their_text_and_are_checked() -> None:
    defaults = _data({"defaults": {"cpus": 0.5, "memory": 1073741824, "gpus": 2}}).defaults
    assert (defaults.cpus, defaults.memory, defaults.gpus) == ("0.5", "1073741824", "2")
    problems = _problems("defaults:\n  cpus: lots\n  memory: much\n  gpus: all\n")
    assert [(line, path) for line, path, _ in problems] == [
        (2, "defaults.cpus"),
        (3, "defaults.memory"),
        (4, "defaults.gpus"),
    ]


def test_gpu_runtime_class_null_or_empty_turns_it_off() -> None:
    assert _data({"defaults": {"gpu_runtime_class": None}}).defaults.gpu_runtime_class is None
    assert _data({"defaults": {"gpu_runtime_class": ""}}).defaults.gpu_runtime_class is None
    assert _data({}).defaults.gpu_runtime_class == "nvidia"


def test_namespace_and_paths_are_checked() -> None:
    problems = _problems(
        "namespace: Team_A\ndefaults:\n  workdir: work\nvolumes:\n  v:\n    mount_path: data\n"
    )
    assert [(line, path) for line, path, _ in problems] == [
        (1, "namespace"),
        (3, "defaults.workdir"),
        (6, "volumes.v.mount_path"),
    ]


def test_volume_entries_split_squarepeg_keys_from_the_source() -> None:
    volume = _data(
        {
            "volumes": {
                "d": {
                    "persistentVolumeClaim": {"claimName": "c"},
                    "mount_path": "/d",
                    "read_only": "yes",
                }
            }
        }
    ).volumes["d"]
    assert volume == VolumeConfig(
        source={"persistentVolumeClaim": {"claimName": "c"}}, mount_path="/d", read_only=True
    )
    assert _data({"volumes": {"e": {}}}).volumes["e"].volume_source() == {"emptyDir": {}}


def test_passthrough_contents_are_opaque_but_its_keys_are_not() -> None:
    config = _data({"kubernetes": {"spec": {"anything": {"goes": [1, None]}}}})
    assert config.kubernetes.spec == {"anything": {"goes": [1, None]}}
    assert _problems("kubernetes:\n  sepc: {}\njob:\n  specs: {}\n") == [
        (2, "kubernetes.sepc", "unknown key 'sepc' (did you mean 'spec'?)"),
        (4, "job.specs", "unknown key 'specs' (did you mean 'spec'?)"),
    ]


def test_job_spec_template_is_rejected_instead_of_silently_dropped() -> None:
    with pytest.raises(ConfigError, match=r"kubernetes\.spec"):
        _data({"job": {"spec": {"template": {"spec": {}}}}})


def test_job_metadata_is_kept() -> None:
    assert _data({"job": {"metadata": {"labels": {"a": "b"}}}}).job.metadata == {
        "labels": {"a": "b"}
    }


def test_profiles_have_the_same_schema_without_nested_profiles() -> None:
    config = _data({"profiles": {"p": {"mode": "job", "defaults": {"cpus": "2"}}}})
    assert config.profiles["p"] == ProfileConfig(mode=RunMode.JOB, defaults=Defaults(cpus="2"))
    assert _problems("profiles:\n  p:\n    profiles: {}\n    timeout: x\n") == [
        (3, "profiles.p.profiles", "profiles cannot be nested inside a profile"),
        (4, "profiles.p.timeout", "expected an integer, got 'x'"),
    ]


def test_null_sections_count_as_empty() -> None:
    assert _validate("defaults:\nvolumes:\nkubernetes:\njob:\nprofiles:\n") == SquarepegConfig()


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("kubernetes:\n  spec: null\n", "kubernetes.spec"),
        ("volumes:\n  v: null\n", "volumes.v"),
        ("profiles:\n  p: null\n", "profiles.p"),
        ("volumes: [a]\n", "volumes"),
        ("defaults: [a]\n", "defaults"),
        ("kubernetes: text\n", "kubernetes"),
    ],
)
def test_null_or_non_mapping_below_a_section_is_an_error(text: str, path: str) -> None:
    ((_, problem_path, message),) = _problems(text)
    assert problem_path == path
    assert message.startswith("expected a mapping")


def test_split_streams_is_accepted_and_has_no_effect() -> None:
    assert _data({"split_streams": True}).split_streams is True
    assert _data({"split_streams": "false"}) == SquarepegConfig()


def test_allow_privileged_defaults_to_false() -> None:
    assert SquarepegConfig().allow_privileged is False
    assert _data({"allow_privileged": "true"}).allow_privileged is True
