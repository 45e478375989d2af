"""gpu-list, gpu-prices, gpu-inventory, estimate and logs on the fakes, and through the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from helpers.gpujob_run import BASE_CONFIG
from helpers.pod_tools import STAMP, PodToolsHarness, container_overrides
from pegboard.adapters.fakes import FakeGpuCloud, FakeJob, FakeShell
from pegboard.app.runpod_deploy.cli import main
from pegboard.app.runpod_deploy.gpu_queries import (
    estimate_job,
    gpu_inventory,
    list_gpus,
    list_prices,
)
from pegboard.app.runpod_deploy.log_tail import LogsRequest, tail_logs
from pegboard.app.runpod_deploy.pod_access import load_config
from pegboard.domain.errors import NotFound, PortError, Transient


@pytest.fixture
def h(tmp_path: Path) -> PodToolsHarness:
    harness = PodToolsHarness(tmp_path)
    harness.clouds["runpod"] = FakeGpuCloud(harness.clock, provider="runpod", host=harness.host)
    return harness


def _config(h: PodToolsHarness, **changes: object) -> Path:
    data = yaml.safe_load(BASE_CONFIG)  # runpod, gpu_order [GPU-A, GPU-B], DCs [DC-1, DC-2]
    for key, value in changes.items():
        data[key] = value
    path = h.root / "job.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _cli(
    h: PodToolsHarness, args: list[str], capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    with container_overrides(h), pytest.raises(SystemExit) as stop:
        main(args)
    out, err = capsys.readouterr()
    return int(stop.value.code or 0), out, err


# --- gpu-list / gpu-prices -----------------------------------------------------------------


def test_gpu_list_sorts_by_stock_with_prices(h: PodToolsHarness) -> None:
    cloud = h.clouds["runpod"]
    for gpu, level in (("L4", "low"), ("H100", "high"), ("A40", "medium"), ("B200", "none")):
        cloud.set_stock(gpu, "EU-1", level)
    cloud.set_stock("X", "US-1", "high")
    cloud.prices = {"H100": 2.99}
    code = list_gpus(
        datacenter="EU-1",
        cloud_type="SECURE",
        spot=False,
        with_prices=True,
        provider="runpod",
        deps=h.deps(),
    )
    assert code == 0
    assert [line.split() for line in h.lines] == [
        ["GPU", "STOCK", "$/HR"],
        ["H100", "high", "2.99"],
        ["A40", "medium", "—"],
        ["L4", "low", "—"],
        ["B200", "none", "—"],
    ]


def test_gpu_list_without_prices_or_when_prices_fail(h: PodToolsHarness) -> None:
    cloud = h.clouds["runpod"]
    cloud.set_stock("H100", "EU-1", "high")
    cloud.prices = {"H100": 2.99}
    cloud.fail_next("gpu_prices", Transient("503"))
    assert (
        list_gpus(
            datacenter="EU-1",
            cloud_type="SECURE",
            spot=False,
            with_prices=True,
            provider="runpod",
            deps=h.deps(),
        )
        == 0
    )
    assert h.lines[0].split() == ["GPU", "STOCK"]
    h.lines.clear()
    asked = len(cloud.calls)
    list_gpus(
        datacenter="EU-1",
        cloud_type="SECURE",
        spot=False,
        with_prices=False,
        provider="runpod",
        deps=h.deps(),
    )
    assert h.lines[0].split() == ["GPU", "STOCK"]
    assert [c[0] for c in cloud.calls[asked:]] == ["datacenter_stock"]


def test_gpu_prices_cheapest_first_and_exit_1_without_any(h: PodToolsHarness) -> None:
    assert list_prices(cloud_type="SECURE", spot=False, provider="runpod", deps=h.deps()) == 1
    h.clouds["runpod"].prices = {"H100": 2.99, "A4000": 0.17}
    assert list_prices(cloud_type="SECURE", spot=False, provider="runpod", deps=h.deps()) == 0
    assert [line.split()[0] for line in h.lines] == ["GPU", "A4000", "H100"]


# --- gpu-inventory / estimate --------------------------------------------------------------


def test_gpu_inventory_exit_3_on_stock_out_with_a_widening_hint(h: PodToolsHarness) -> None:
    cloud = h.clouds["runpod"]
    cloud.default_stock = "none"
    cloud.set_stock("H100", "DC-1", "high")
    for gpu in ("GPU-A", "GPU-B"):  # listed, out of stock (a name no catalog lists is exit 2)
        cloud.set_stock(gpu, "DC-1", "none")
    loaded = load_config(h.deps(), _config(h), (), None)
    assert gpu_inventory(loaded=loaded, provider=None, deps=h.deps()) == 3
    text = "\n".join(h.lines)
    assert "DC-1:" in text and "GPU-A" in text and "stockout" in text
    assert "widening hint: also in stock here: H100 (high)" in text
    cloud.set_stock("GPU-B", "DC-2", "low")
    h.lines.clear()
    assert gpu_inventory(loaded=loaded, provider=None, deps=h.deps()) == 0
    assert any(line.split()[-2:] == ["low", "(low)"] for line in h.lines)


def test_gpu_inventory_asks_the_provider_override(h: PodToolsHarness) -> None:
    loaded = load_config(h.deps(), _config(h), (), None)
    assert gpu_inventory(loaded=loaded, provider="local", deps=h.deps()) == 0
    assert h.backends_asked == ["local"]


def test_estimate_picks_like_run_and_uses_the_provider_price(h: PodToolsHarness) -> None:
    cloud = h.clouds["runpod"]
    cloud.set_stock("GPU-A", "DC-1", "none")
    cloud.set_stock("GPU-A", "DC-2", "medium")
    cloud.set_stock("GPU-B", "DC-1", "none")  # listed: a known name
    cloud.prices = {"GPU-A": 2.0}
    loaded = load_config(h.deps(), _config(h), (), None)
    assert estimate_job(loaded=loaded, provider=None, deps=h.deps()) == 0
    text = "\n".join(h.lines)
    assert "GPU-A @ DC-2 (stock medium)" in text  # GPU priority first, as run picks
    assert "$2.00/h (provider)" in text and "spend at timeout:  $2.00" in text
    cloud.default_stock = "none"
    cloud.set_stock("GPU-A", "DC-2", "none")
    assert estimate_job(loaded=loaded, provider=None, deps=h.deps()) == 1


def test_cli_runpod_not_available_is_one_line_exit_2(
    h: PodToolsHarness, capsys: pytest.CaptureFixture[str]
) -> None:
    del h.clouds["runpod"]
    config = _config(h)
    for args in (
        ["gpu-list", "--datacenter", "EU-1"],
        ["gpu-prices"],
        ["estimate", str(config)],
        ["gpu-inventory", "--config", str(config)],
    ):
        code, out, err = _cli(h, args, capsys)
        assert (code, out) == (2, ""), args
        assert err.startswith("runpod-deploy: ") and err.count("\n") == 1, err


def test_cli_gpu_inventory_exit_3_and_estimate_positional(
    h: PodToolsHarness, capsys: pytest.CaptureFixture[str]
) -> None:
    h.clouds["runpod"].default_stock = "none"
    config = _config(h)
    code, out, err = _cli(h, ["gpu-inventory", "--config", str(config)], capsys)
    assert code == 3 and "stockout" in out and "stock-out" in err
    code, out, err = _cli(h, ["estimate", str(config), "--provider", "local"], capsys)
    assert code == 0 and "GPU-A @ DC-1" in out


# --- logs ----------------------------------------------------------------------------------


def _running_pod_with_pointer(h: PodToolsHarness, config: Path) -> str:
    pod = h.pod("fakejob", stopped=False, cloud="runpod")
    run_dir = h.root / "artifacts" / STAMP
    (h.root / "state.json").write_text(
        json.dumps(
            {
                "pod_id": pod,
                "provider": "runpod",
                "run_id": f"fakejob-{STAMP}",
                "run_dir": str(run_dir),
            }
        )
    )
    return pod


def _start_job(h: PodToolsHarness, job: FakeJob, log: str = "/workspace/run.log") -> None:
    h.host.script_job(job)
    h.host.put("/workspace/run.sh", b"python train.py\n", 0o755)
    FakeShell(h.host).start_detached(
        "/workspace/run.sh",
        log_path=log,
        status_path="/workspace/run.sh.exit",
        pid_path="/workspace/run.sh.pid",
    )


def test_logs_prints_the_tail_then_follows_until_the_job_ends(h: PodToolsHarness) -> None:
    config = _config(h)
    _running_pod_with_pointer(h, config)
    _start_job(h, FakeJob(output=[(0.0, b"one\n"), (3.0, b"two\n"), (6.0, b"three\n")]))
    h.host.on_command(r"wc -c", stdout=b"4\none\n")  # the tail: 4 bytes, "one"
    assert tail_logs(LogsRequest(config_path=config, lines=50), h.deps()) == 0
    assert b"".join(h.chunks) == b"one\ntwo\nthree\n"  # nothing repeated, nothing lost
    head = next(c for c in h.host.commands if "wc -c" in c)
    assert "tail -n 50" in head and "/workspace/run.log" in head


def test_logs_no_follow_exits_with_the_remote_code(h: PodToolsHarness) -> None:
    config = _config(h)
    _running_pod_with_pointer(h, config)
    h.host.on_command(r"wc -c", exit_code=1, stderr=b"bash: /workspace/run.log: No such file")
    assert tail_logs(LogsRequest(config_path=config, follow=False), h.deps()) == 1
    h.host.on_command(r"wc -c", stdout=b"6\nlast!\n")
    assert tail_logs(LogsRequest(config_path=config, follow=False), h.deps()) == 0
    assert h.chunks == [b"last!\n"]


def test_logs_renders_the_log_path_with_that_runs_id(h: PodToolsHarness) -> None:
    run = yaml.safe_load(BASE_CONFIG)["run"]
    config = _config(h, run={**run, "log_path": "/workspace/{run_id}.log"})
    _running_pod_with_pointer(h, config)
    assert tail_logs(LogsRequest(config_path=config, follow=False), h.deps()) == 0
    assert f"/workspace/fakejob-{STAMP}.log" in h.host.commands[-1]


def test_logs_on_a_stopped_or_missing_pod_says_where_the_log_went(h: PodToolsHarness) -> None:
    config = _config(h)
    with pytest.raises(NotFound, match="no state file naming a pod"):
        tail_logs(LogsRequest(config_path=config), h.deps())
    pod = _running_pod_with_pointer(h, config)
    h.clouds["runpod"].stop_pod(pod)
    with pytest.raises(PortError, match=f"EXITED: no shell.*{STAMP}/run.log"):
        tail_logs(LogsRequest(config_path=config), h.deps())
    h.clouds["runpod"].terminate_pod(pod)
    with pytest.raises(NotFound, match="no longer exists"):
        tail_logs(LogsRequest(config_path=config), h.deps())


def test_cli_logs_streams_raw_bytes_to_stdout(
    h: PodToolsHarness, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    config = _config(h)
    _running_pod_with_pointer(h, config)
    h.host.on_command(r"wc -c", stdout=b"5\n\xff\x00ok\n")
    with container_overrides(h), pytest.raises(SystemExit) as stop:
        main(["logs", "--config", str(config), "--no-follow", "--lines", "1"])
    out, _ = capsysbinary.readouterr()
    assert stop.value.code == 0 and out == b"\xff\x00ok\n"


def test_logs_after_the_run_released_its_pod_names_the_pulled_log(h: PodToolsHarness) -> None:
    """on_success: delete removes the pod and its pointer; the log is in the run directory."""
    config = _config(h)
    older, latest = (
        h.root / "artifacts" / "runpod" / stamp for stamp in ("20260101T0", "20260102T0")
    )
    for run_dir in (older, latest):
        run_dir.mkdir(parents=True)
        (run_dir / "run.log").write_text("done\n")
        manifest = {"config_path": str(config.absolute()), "job_name": "fakejob"}
        (run_dir / "runpod_deploy_pull_manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(NotFound, match=f"pulled the log to {latest / 'run.log'}$"):
        tail_logs(LogsRequest(config_path=config), h.deps())


def test_logs_to_a_full_stdout_is_one_error_and_to_a_closed_pipe_a_quiet_stop(
    h: PodToolsHarness,
) -> None:
    import errno

    from pegboard.app.runpod_deploy.log_tail import StdoutRefused

    config = _config(h)
    _running_pod_with_pointer(h, config)
    h.host.on_command(r"wc -c", stdout=b"3\nok\n")

    def refuse(error: OSError) -> Any:
        def out_bytes(chunk: bytes) -> None:
            raise error

        return h.deps(out_bytes=out_bytes)

    full = refuse(OSError(errno.ENOSPC, "No space left on device"))
    with pytest.raises(StdoutRefused, match=r"^could not write to stdout \(No space left"):
        tail_logs(LogsRequest(config_path=config, follow=False), full)
    gone = refuse(BrokenPipeError(errno.EPIPE, "Broken pipe"))
    assert tail_logs(LogsRequest(config_path=config, follow=False), gone) == 0


def test_gpu_listings_as_json_and_yaml(h: PodToolsHarness) -> None:
    """Issue 12 item 11: -o json|yaml on the GPU commands too, the same rows as the tables."""
    cloud = h.clouds["runpod"]
    cloud.set_stock("H100", "EU-1", "high")
    cloud.set_stock("L4", "EU-1", "low")
    cloud.prices = {"H100": 2.99, "L4": 0.4}
    common = {"cloud_type": "SECURE", "spot": False, "provider": "runpod", "deps": h.deps()}
    assert list_gpus(datacenter="EU-1", with_prices=True, output="json", **common) == 0
    assert json.loads(h.lines.pop()) == [
        {"gpu_id": "H100", "stock": "high", "usd_per_hour": 2.99},
        {"gpu_id": "L4", "stock": "low", "usd_per_hour": 0.4},
    ]
    assert list_prices(output="yaml", **common) == 0
    assert yaml.safe_load(h.lines.pop()) == [
        {"gpu_id": "L4", "usd_per_hour": 0.4},
        {"gpu_id": "H100", "usd_per_hour": 2.99},
    ]


def test_gpu_inventory_calls_a_name_no_catalog_lists_unknown_not_a_stock_out(
    h: PodToolsHarness,
) -> None:
    from pegboard.domain.errors import ConfigError

    cloud = h.clouds["runpod"]
    cloud.default_stock = "none"
    cloud.set_stock("GPU-A", "DC-1", "high")
    cloud.prices = {"GPU-A": 1.0, "GPU-BB": 1.0}
    loaded = load_config(h.deps(), _config(h), (), None)  # gpu_order: GPU-A, GPU-B
    with pytest.raises(ConfigError) as caught:
        gpu_inventory(loaded=loaded, provider=None, deps=h.deps())
    (problem,) = caught.value.problems
    assert problem.path == "pod.gpu_order[1]" and "closest: GPU-BB" in problem.message
    assert h.lines == []  # no "stockout (none)" table
