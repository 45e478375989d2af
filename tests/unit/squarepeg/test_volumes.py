"""-v/--volume, --tmpfs and --shm-size -> volumes and mounts; names never collide silently."""

from __future__ import annotations

from typing import Any

import pytest

from pegboard.domain.errors import ConfigError, UsageError
from pegboard.domain.squarepeg.config import VolumeConfig
from pegboard.domain.squarepeg.volumes import VolumePlan, plan_volumes, sanitize_volume_name

REFDATA = {
    "refdata": VolumeConfig(
        source={"persistentVolumeClaim": {"claimName": "ref"}}, mount_path="/ref", read_only=True
    ),
    "scratch": VolumeConfig(),
}


def plan(*specs: str, configured: Any = None, allow_host: bool = False, **kw: Any) -> VolumePlan:
    return plan_volumes(
        cli_volumes=specs,
        configured=REFDATA if configured is None else configured,
        allow_host_path_mounts=allow_host,
        **kw,
    )


def test_config_auto_mounts_come_first_and_are_not_cli_volumes() -> None:
    result = plan()
    assert result.volumes == ({"name": "refdata", "persistentVolumeClaim": {"claimName": "ref"}},)
    assert result.mounts == ({"name": "refdata", "mountPath": "/ref", "readOnly": True},)
    assert result.cli_volume_names == frozenset()


def test_anonymous_volume_is_an_empty_dir_named_after_the_path() -> None:
    result = plan("/data/in", configured={})
    assert result.volumes == ({"name": "data-in", "emptyDir": {}},)
    assert result.mounts == ({"name": "data-in", "mountPath": "/data/in"},)
    assert result.cli_volume_names == {"data-in"}


def test_distinct_anonymous_paths_get_distinct_names() -> None:
    result = plan("/a/b", "/a-b", configured={})
    names = [v["name"] for v in result.volumes]
    assert names == ["a-b", "a-b-2"]
    assert [m["name"] for m in result.mounts] == names


def test_anonymous_path_next_to_a_configured_name_gets_its_own_volume() -> None:
    result = plan("refdata:/r2:ro", "/refdata")
    by_path = {m["mountPath"]: m for m in result.mounts}
    assert by_path["/refdata"]["name"] != "refdata"
    assert "readOnly" not in by_path["/refdata"]
    sources = {v["name"]: v for v in result.volumes}
    assert sources[by_path["/refdata"]["name"]] == {
        "name": by_path["/refdata"]["name"],
        "emptyDir": {},
    }


def test_named_volume_from_config_with_mode() -> None:
    result = plan("scratch:/tmp/s:ro")
    assert {"name": "scratch", "emptyDir": {}} in result.volumes
    assert {"name": "scratch", "mountPath": "/tmp/s", "readOnly": True} in result.mounts
    assert result.cli_volume_names == {"scratch"}


def test_named_volume_mounted_twice_is_one_volume() -> None:
    result = plan("refdata:/x")
    assert [v["name"] for v in result.volumes] == ["refdata"]
    assert len(result.mounts) == 2


def test_unconfigured_name_is_an_error_naming_the_spec() -> None:
    with pytest.raises(UsageError, match=r"-v data:/x: no volume 'data' in config"):
        plan("data:/x")


@pytest.mark.parametrize(
    "spec", ["/a:/b:/c:/d", "refdata:/x:rx", "data", "refdata:rel", ":/x", "~/x:/y", "b@d:/x"]
)
def test_bad_specs(spec: str) -> None:
    with pytest.raises(UsageError, match=f"-v {spec}"):
        plan(spec)


def test_host_path_needs_config_permission() -> None:
    with pytest.raises(UsageError, match=r"allow_host_path_mounts"):
        plan("/host:/ctr")


def test_host_paths_absolute_and_relative_are_named_after_the_container_path() -> None:
    # 0.4.1 names every -v volume after the container path; passthrough refers to it by name.
    result = plan(
        "/srv/data:/in:ro",
        "./out:/out",
        "/srv/data:/again",
        configured={},
        allow_host=True,
        cwd="/home/me",
    )
    assert result.volumes == (
        {"name": "in", "hostPath": {"path": "/srv/data"}},
        {"name": "out", "hostPath": {"path": "/home/me/out"}},
        {"name": "again", "hostPath": {"path": "/srv/data"}},
    )
    assert result.mounts == (
        {"name": "in", "mountPath": "/in", "readOnly": True},
        {"name": "out", "mountPath": "/out"},
        {"name": "again", "mountPath": "/again"},
    )
    assert result.cli_volume_names == {"in", "out", "again"}


@pytest.mark.parametrize(
    ("spec", "name"),
    [
        ("/host/path:/c", "c"),
        ("/host/path:/c:ro", "c"),
        ("./rel:/data/in", "data-in"),
        ("/data/in", "data-in"),
        ("/srv/x:/Model_Cache", "model-cache"),
    ],
)
def test_every_generated_volume_is_named_after_the_container_path(spec: str, name: str) -> None:
    result = plan(spec, configured={}, allow_host=True)
    assert [v["name"] for v in result.volumes] == [name]
    assert result.mounts[0]["name"] == name


def test_host_mount_on_a_configured_name_gets_a_suffix() -> None:
    result = plan("/srv/ref:/refdata", allow_host=True)
    assert result.volumes[1] == {"name": "refdata-2", "hostPath": {"path": "/srv/ref"}}


@pytest.mark.parametrize("specs", [("/x", "/x"), ("/ref",), ("/x/", "/x"), ("scratch:/y", "/y")])
def test_duplicate_mount_paths_are_rejected(specs: tuple[str, ...]) -> None:
    with pytest.raises(UsageError, match=r"already used by"):
        plan(*specs)


def test_tmpfs_and_shm() -> None:
    result = plan(configured={}, tmpfs=("/run", "/cache:size=64m"), shm_size="1g")
    assert result.volumes == (
        {"name": "tmpfs-run", "emptyDir": {"medium": "Memory"}},
        {"name": "tmpfs-cache", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
    )
    assert {"name": "dshm", "mountPath": "/dev/shm"} in result.mounts
    assert result.cli_volume_names == {"tmpfs-run", "tmpfs-cache", "dshm"}


def test_tmpfs_options_other_than_size_are_refused() -> None:
    with pytest.raises(UsageError, match=r"--tmpfs /run:noexec"):
        plan(configured={}, tmpfs=("/run:noexec",))


def test_shm_size_conflicts_with_a_dev_shm_volume() -> None:
    with pytest.raises(UsageError, match=r"/dev/shm"):
        plan("/dev/shm", configured={}, shm_size="1g")


def test_configured_names_that_sanitise_alike_are_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"volumes.Data"):
        plan(configured={"data": VolumeConfig(), "Data": VolumeConfig()})


def test_long_names_stay_within_63() -> None:
    long = "/" + "x" * 100
    result = plan(long, long + "/y", configured={})
    assert all(len(v["name"]) <= 63 for v in result.volumes)
    assert len({v["name"] for v in result.volumes}) == 2


@pytest.mark.parametrize(("raw", "name"), [("/a/B_c", "a-b-c"), ("///", "vol"), ("Data", "data")])
def test_sanitize_volume_name(raw: str, name: str) -> None:
    assert sanitize_volume_name(raw) == name
