"""runpod-deploy's use cases in-process, through the real CLI and its composition root, on the
local provider, on the shipped fakes, or on the RunPod API sandbox.

    from pegboard.testing import RunpodDeploy

    deploy = RunpodDeploy()                                   # providers as configured
    assert deploy.validate("examples/local/hello.yaml").ok
    result = deploy.run("examples/local/hello.yaml", "--var", "greeting=hi")
    assert result.exit_code == 0 and result.manifest["outcome"] == "success"

`RunpodDeploy(cloud=FakeGpuCloud(...), host=FakeHost(...))` runs every provider's pods on the
fakes (virtual time: a ten-minute job takes milliseconds); `RunpodDeploy.on_runpod_sandbox(sandbox)`
points the default provider at a RunPodSandbox with a fresh SSH key. Each call overrides only the
outside world of the process-wide container (app/runpod_deploy/container.py): environment, home,
clock and, with fakes, the backends; the overrides are reset when the call returns.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pegboard.domain.gpujob.records import MANIFEST_NAME

from .capture import captured, exit_code_of
from .results import CommandResult, GpuJobRunResult

if TYPE_CHECKING:
    from pegboard.adapters.fakes import FakeGpuCloud, FakeHost
    from pegboard.adapters.sandboxes.runpod import RunPodSandbox

__all__ = ["RunpodDeploy"]


class RunpodDeploy:
    """`runpod-deploy` for one scratch user.

    `home` is the HOME the commands see (default: a fresh temporary directory, removed with this
    object): state files, local pods and ~/.runpod/config.toml all live under it. `environ` adds
    variables (e.g. RUNPOD_API_KEY). With `cloud` (a FakeGpuCloud) and `host` (its FakeHost)
    every `pod.provider` is served by the fakes, on the cloud's clock.
    """

    def __init__(
        self,
        *,
        home: str | os.PathLike[str] | None = None,
        environ: Mapping[str, str] | None = None,
        cloud: FakeGpuCloud | None = None,
        host: FakeHost | None = None,
    ) -> None:
        if (cloud is None) != (host is None):
            raise ValueError("cloud= and host= go together (the fake pod's host)")
        if home is None:
            home = tempfile.mkdtemp(prefix="pegboard-testing-home-")
            weakref.finalize(self, shutil.rmtree, home, ignore_errors=True)
        self.home = Path(home)
        self.environ = {
            "HOME": str(self.home),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            **(environ or {}),
        }
        self.cloud = cloud
        self.host = host

    @classmethod
    def on_runpod_sandbox(
        cls, sandbox: RunPodSandbox, *, home: str | os.PathLike[str] | None = None
    ) -> RunpodDeploy:
        """The default provider (`runpod`) against `sandbox` (started, `ssh=True` for runs that
        log in): its URL and key in the environment, a fresh ~/.ssh/id_ed25519 that the pods it
        creates trust (through PUBLIC_KEY, as RunPod's images do)."""
        from pegboard.adapters.sandboxes.sshd import generate_key

        deploy = cls(home=home, environ=sandbox.environ())
        generate_key(deploy.home / ".ssh" / "id_ed25519", comment="pegboard-testing")
        return deploy

    # -- the use cases ------------------------------------------------------------------------
    def validate(self, config: str | os.PathLike[str], *flags: str) -> CommandResult:
        """`runpod-deploy validate --config CONFIG [flags]`."""
        return self.cli("validate", "--config", str(config), *flags)

    def plan(self, config: str | os.PathLike[str], *flags: str) -> CommandResult:
        """`runpod-deploy run --offline-dry-run`: the plan on stderr, nothing created, no call."""
        return self.cli("run", "--config", str(config), "--offline-dry-run", *flags)

    def dry_run(self, config: str | os.PathLike[str], *flags: str) -> CommandResult:
        """`runpod-deploy run --dry-run`: picks the candidate from the provider's stock."""
        return self.cli("run", "--config", str(config), "--dry-run", *flags)

    def run(self, config: str | os.PathLike[str], *flags: str) -> GpuJobRunResult:
        """`runpod-deploy run --config CONFIG [flags]`; `run_dir`, and `manifest` (its
        runpod_deploy_pull_manifest.json, docs/runpod-deploy/records.md)."""
        done = self.cli("run", "--config", str(config), "--print-run-dir", *flags)
        run_dir = _printed_run_dir(done.stdout)
        manifest: dict[str, Any] | None = None
        if run_dir is not None and (run_dir / MANIFEST_NAME).is_file():
            manifest = json.loads((run_dir / MANIFEST_NAME).read_text())
        stdout = b"".join(
            line
            for line in done.stdout_bytes.splitlines(keepends=True)
            if not line.startswith(b"RUN_DIR=")
        )
        return GpuJobRunResult(
            done.argv, done.exit_code, stdout, done.stderr_bytes, run_dir=run_dir, manifest=manifest
        )

    def cleanup(self, *flags: str) -> CommandResult:
        """`runpod-deploy cleanup [flags]` (e.g. `--pod-id ID --mode delete`)."""
        return self.cli("cleanup", *flags)

    def cli(self, *argv: str) -> CommandResult:
        """Any `runpod-deploy` command line, in-process."""
        from pegboard.app.runpod_deploy.cli import main

        with captured() as streams, self._overridden():
            code = exit_code_of(lambda: main(list(argv)))
            out, err = streams.bytes_of(streams.stdout), streams.bytes_of(streams.stderr)
        return CommandResult(tuple(argv), code, out, err)

    @contextmanager
    def _overridden(self) -> Iterator[None]:
        from pegboard.app.runpod_deploy.container import current_container
        from pegboard.app.shared.dependency_injection import providers

        container = current_container()
        overrides: dict[str, Any] = {
            "environ": providers.Object(dict(self.environ)),
            "home": providers.Object(str(self.home)),
        }
        if self.cloud is not None and self.host is not None:
            backend = self._fake_backend()
            overrides["backend_for"] = providers.Object(lambda provider: backend)
            overrides["backend_at"] = providers.Object(lambda provider, locator: backend)
            overrides["clock"] = providers.Object(self.cloud.clock)
        with ExitStack() as stack:
            stack.enter_context(container.override_providers(**overrides))
            stack.enter_context(_process_environ(self.environ, prefix="RUNPOD_"))
            # `validate` reads HOME from the process (it keeps clear of the container): the
            # same home, so it checks the ssh key this harness made.
            stack.enter_context(_process_environ({"HOME": str(self.home)}, prefix="HOME"))
            yield

    def _fake_backend(self) -> Any:
        from pegboard.adapters.fakes import FakeFileSync, FakeShell
        from pegboard.app.runpod_deploy.run_types import Backend

        host = self.host
        assert self.cloud is not None and host is not None
        return Backend(
            cloud=self.cloud,
            open_shell=lambda status: FakeShell(host),
            open_sync=lambda status: FakeFileSync(host),
        )


@contextmanager
def _process_environ(environ: Mapping[str, str], *, prefix: str) -> Iterator[None]:
    """Commands that keep clear of the container (`validate`, for a fast start) read the process
    environment: those variables are set for the call and restored after."""
    names: Sequence[str] = [name for name in environ if name.startswith(prefix)]
    before = {name: os.environ.get(name) for name in names}
    os.environ.update({name: environ[name] for name in names})
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _printed_run_dir(stdout: str) -> Path | None:
    for line in stdout.splitlines():
        if line.startswith("RUN_DIR="):
            return Path(line.removeprefix("RUN_DIR="))
    return None
