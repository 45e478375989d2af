"""Secrets in both forms: 0.8.4's `env: [..]`/`file:` and the docs' `source_env: VAR`,
`var_name: KEY`, `source_file: path`; and a missing source refused before any pod exists."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.gpujob_run import RunHarness
from helpers.runpod_configs import spec_from, with_sections
from pegboard.adapters.fakes import FakeJob
from pegboard.domain.gpujob.secret_sources import missing_secret_sources
from pegboard.domain.gpujob.templates import RenderedSecret

TROUBLESHOOTING_FORM = {
    "name": "hf",
    "source_env": "HF_TOKEN",
    "destination": "/workspace/secrets/env",
    "var_name": "HF_TOKEN",
    "mode": "0600",
}


def test_the_docs_form_parses_to_the_same_spec_as_0_8_4s() -> None:
    docs = spec_from(with_sections(secrets=[TROUBLESHOOTING_FORM])).secrets[0]
    plain = spec_from(
        with_sections(
            secrets=[{"name": "hf", "env": ["HF_TOKEN"], "destination": "/workspace/secrets/env"}]
        )
    ).secrets[0]
    assert docs.env == plain.env == ("HF_TOKEN",)
    assert docs.env_keys == plain.env_keys == (("HF_TOKEN", "HF_TOKEN"),)
    assert docs.mode == plain.mode == "0600"


def test_var_name_renames_the_key_written_and_source_file_is_a_file() -> None:
    spec = spec_from(
        with_sections(
            secrets=[
                {
                    "name": "a",
                    "source_env": "MY_LOCAL",
                    "var_name": "HF_TOKEN",
                    "destination": "/a",
                },
                {"name": "b", "source_env": ["X", "Y"], "destination": "/b"},
                {"name": "c", "source_file": "~/key.json", "destination": "/c"},
            ]
        )
    )
    a, b, c = spec.secrets
    assert a.env_keys == (("HF_TOKEN", "MY_LOCAL"),)
    assert b.env_keys == (("X", "X"), ("Y", "Y"))
    assert c.file == "~/key.json" and c.env == ()


def _good_job(h: RunHarness) -> None:
    h.host.script_job(FakeJob(output=[(0.0, b"ALL_DONE\n")], exit_code=0))
    h.host.put("/workspace/out/result.json", b"{}")


def test_docs_form_writes_var_name_key_0600_and_keeps_the_value_secret(tmp_path: Path) -> None:
    h = RunHarness(
        tmp_path,
        config={
            "secrets": [{**TROUBLESHOOTING_FORM, "source_env": "MY_LOCAL_TOKEN"}],
        },
    )
    h.environ["MY_LOCAL_TOKEN"] = "tok en'$(x)"
    _good_job(h)
    result = h.run()
    assert result.exit_code == 0, result.failure_reason
    assert h.host.read("/workspace/secrets/env") == b"HF_TOKEN='tok en'\"'\"'$(x)'\n"
    assert h.host.mode("/workspace/secrets/env") == 0o600
    records = (Path(result.run_dir or "") / "runpod_deploy_pull_manifest.json").read_text()
    assert "tok en" not in records


def test_source_file_is_copied_0600(tmp_path: Path) -> None:
    key = tmp_path / "key.json"
    key.write_bytes(b'{"k": 1}')
    h = RunHarness(
        tmp_path,
        config={"secrets": [{"name": "key", "source_file": str(key), "destination": "/r/key"}]},
    )
    _good_job(h)
    assert h.run().exit_code == 0
    assert h.host.read("/r/key") == b'{"k": 1}' and h.host.mode("/r/key") == 0o600


@pytest.mark.parametrize(
    ("secret", "reason"),
    [
        (TROUBLESHOOTING_FORM, "secret 'hf': environment variable HF_TOKEN is not set"),
        (
            {"name": "key", "source_file": "/nonexistent/key.json", "destination": "/r/key"},
            "secret 'key': no such file /nonexistent/key.json",
        ),
    ],
)
def test_offline_dry_run_refuses_a_missing_source_before_any_pod(
    tmp_path: Path, secret: dict[str, str], reason: str
) -> None:
    h = RunHarness(tmp_path, config={"secrets": [secret]})
    result = h.run(offline=True, dry_run=True)
    manifest = h.manifest(result)
    assert result.exit_code == 1
    assert manifest["failure_phase"] == "validate" and reason in manifest["failure_reason"]
    assert h.cloud.calls == [] and h.cloud.pods == {}


def test_online_dry_run_refuses_a_missing_source_before_asking_the_cloud(tmp_path: Path) -> None:
    h = RunHarness(tmp_path, config={"secrets": [TROUBLESHOOTING_FORM]})
    result = h.run(dry_run=True)
    assert result.exit_code == 1 and "HF_TOKEN is not set" in (result.failure_reason or "")
    assert h.cloud.calls == []


def test_missing_sources_lists_every_one_without_reading_values() -> None:
    secrets = [
        RenderedSecret("a", "/a", ("SET", "UNSET"), None, "0600"),
        RenderedSecret("b", "/b", ("LOCAL",), None, "0600", var_name="KEY"),
        RenderedSecret("c", "/c", (), "/absent", "0600"),
    ]
    missing = missing_secret_sources(
        secrets, is_set=lambda name: name == "SET", is_file=lambda path: False
    )
    assert [(m.index, m.message) for m in missing] == [
        (0, "secret 'a': environment variable UNSET is not set"),
        (1, "secret 'b': environment variable LOCAL is not set"),
        (2, "secret 'c': no such file /absent"),
    ]
