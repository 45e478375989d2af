"""`pod.provider: ssh`: the machine in `ssh.host/port/user`, its key or the agent, its workspaces."""

from __future__ import annotations

import pytest

from helpers.runpod_configs import spec_from, with_sections
from pegboard.domain.errors import ConfigError

POD = {"image": "i", "datacenters": ["LAB"], "gpu_order": ["A100"]}


def problems(**sections: object) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        spec_from(with_sections(**sections))
    return [f"{p.path}: {p.message}" for p in caught.value.problems]


def test_ssh_provider_with_host_port_user_and_agent() -> None:
    spec = spec_from(
        with_sections(
            pod={**POD, "provider": "ssh"},
            ssh={"host": "gpu1.lab", "port": 2222, "user": "me", "use_agent": True},
        )
    )
    assert spec.pod.provider == "ssh"
    ssh = spec.section("ssh")
    assert (ssh.host, ssh.port, ssh.user, ssh.use_agent) == ("gpu1.lab", 2222, "me", True)
    assert ssh.key_path == "~/.ssh/id_ed25519"
    assert ssh.workspaces_root == "~/pegboard-workspaces"


def test_defaults_keep_other_providers_unchanged() -> None:
    ssh = spec_from(with_sections()).section("ssh")
    assert (ssh.host, ssh.port, ssh.user, ssh.use_agent) == (None, 22, "root", False)


def test_ssh_provider_needs_a_host() -> None:
    assert problems(pod={**POD, "provider": "ssh"}) == [
        "ssh.host: required for pod.provider: ssh (the machine to run on)"
    ]


def test_host_is_refused_for_a_provider_that_finds_its_own_pod() -> None:
    found = problems(pod=POD, ssh={"host": "gpu1.lab"})
    assert found == [
        "ssh.host: only used with pod.provider: ssh (the runpod provider finds its pod's "
        "address itself)"
    ]


@pytest.mark.parametrize(
    ("ssh", "expected"),
    [
        ({"host": "h", "port": 0}, "ssh.port: must be > 0"),
        ({"host": "h", "port": 70000}, "ssh.port: must be a TCP port (1-65535), got 70000"),
        ({"host": "h", "port": "22"}, "ssh.port: must be an integer, got str"),
        ({"host": ""}, "ssh.host: must be non-empty"),
        ({"host": "h", "user": ""}, "ssh.user: must be non-empty"),
        ({"host": "h", "use_agent": "yes"}, "ssh.use_agent: must be true or false, got str"),
        ({"host": "h", "workspaces_root": "runs"}, "ssh.workspaces_root: must be an absolute"),
        ({"host": "h", "workspaces_root": "/"}, "ssh.workspaces_root: must be an absolute"),
        ({"host": "h", "hostname": "x"}, "ssh.hostname: unknown key 'hostname'"),
    ],
)
def test_bad_ssh_values_name_the_key(ssh: dict[str, object], expected: str) -> None:
    found = problems(pod={**POD, "provider": "ssh"}, ssh=ssh)
    assert any(message.startswith(expected) for message in found), found


def test_ssh_provider_needs_no_image_datacenters_or_gpu_order() -> None:
    spec = spec_from(with_sections(pod={"provider": "ssh"}, ssh={"host": "gpu1.lab"}))
    assert spec.pod.provider == "ssh"
    assert spec.pod.image and spec.pod.datacenters and spec.pod.gpu_order  # recorded stand-ins


def test_given_image_and_gpus_are_kept_for_the_ssh_provider() -> None:
    spec = spec_from(with_sections(pod={**POD, "provider": "ssh"}, ssh={"host": "gpu1.lab"}))
    assert (spec.pod.image, spec.pod.datacenters, spec.pod.gpu_order) == ("i", ("LAB",), ("A100",))


def test_the_runpod_provider_still_needs_image_datacenters_and_gpu_order() -> None:
    assert problems(pod={"provider": "runpod"}) == [
        "pod.image: required key missing",
        "pod.datacenters: required key missing",
        "pod.gpu_order: required key missing",
    ]
