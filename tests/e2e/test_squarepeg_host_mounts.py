"""`squarepeg run -v /host/path:/c` names the volume `c`, as 0.4.1 does, so passthrough config
that refers to the volume by name (here an init container's volumeMount) keeps working."""

from __future__ import annotations

import textwrap
from pathlib import Path

import yaml

from e2e.test_cli_dry_run import run


def test_host_bind_mount_named_after_the_container_path_for_passthrough(tmp_path: Path) -> None:
    config = tmp_path / "squarepeg.yaml"
    config.write_text(
        textwrap.dedent(
            """\
            allow_host_path_mounts: true
            kubernetes:
              spec:
                initContainers:
                  - name: warm
                    image: alpine
                    args: [ls, /c]
                    volumeMounts: [{name: c, mountPath: /c}]
            """
        )
    )
    result = run(
        tmp_path,
        "run",
        "--config",
        str(config),
        "--dry-run",
        "-v",
        "/host/path:/c",
        "-v",
        "./rel:/data/in:ro",
        "alpine",
        "true",
    )
    assert result.returncode == 0, result.stderr
    spec = yaml.safe_load(result.stdout)["spec"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["c"] == {"name": "c", "hostPath": {"path": "/host/path"}}
    assert volumes["data-in"]["hostPath"]["path"].endswith("/rel")
    init_mounts = spec["initContainers"][0]["volumeMounts"]
    assert all(mount["name"] in volumes for mount in init_mounts)
