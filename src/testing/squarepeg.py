"""squarepeg's use cases in-process, on a Cluster you give (a FakeCluster) or a kubeconfig (the
Kubernetes API sandbox, or any cluster), through the real CLI and its composition root.

    from pegboard.adapters.fakes import FakeClock, FakeCluster, PodScript
    from pegboard.testing import Squarepeg

    cluster = FakeCluster(FakeClock())
    cluster.script_pod(lambda pod: True, PodScript().running(at=1).log(b"hi\\n", at=1).exit(3, at=2))
    result = Squarepeg(cluster=cluster).run("alpine", "sh", "-c", "echo hi; exit 3")
    assert (result.exit_code, result.stdout) == (3, "hi\\n")

Every call builds one `Container` (app/squarepeg/container.py) and overrides only the outside
world: the cluster (a fake, or the real adapter on your kubeconfig), the clock (the fake's),
environment, home, working directory, user name and both streams. Nothing else is rewired.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pegboard.domain.ports.cluster import Cluster

from .capture import captured, exit_code_of
from .results import CommandResult, DryRunResult, SquarepegRunResult

__all__ = ["Squarepeg"]


class Squarepeg:
    """`squarepeg` against one cluster: `cluster=` a Cluster (e.g. FakeCluster), or
    `kubeconfig=` a kubeconfig file (the real adapter reads it; e.g. a KubernetesSandbox's).

    `home` is the HOME the commands see (default: a fresh temporary directory, removed with this
    object), so your own ~/.config/squarepeg and ~/.kube/config are never read; `environ` adds
    variables; `user` is the created-by label's source.
    """

    def __init__(
        self,
        *,
        cluster: Cluster | None = None,
        kubeconfig: str | os.PathLike[str] | None = None,
        home: str | os.PathLike[str] | None = None,
        environ: Mapping[str, str] | None = None,
        user: str = "tester",
        cwd: str | os.PathLike[str] | None = None,
    ) -> None:
        if (cluster is None) == (kubeconfig is None):
            raise ValueError("give exactly one of cluster= (a Cluster) or kubeconfig= (a path)")
        self.cluster = cluster
        self.kubeconfig = Path(kubeconfig) if kubeconfig is not None else None
        if home is None:
            home = tempfile.mkdtemp(prefix="pegboard-testing-home-")
            weakref.finalize(self, shutil.rmtree, home, ignore_errors=True)
        self.home = Path(home)
        self.user = user
        self.cwd = Path(cwd) if cwd is not None else self.home
        self.environ = {"HOME": str(self.home), "LOGNAME": user, **(environ or {})}
        if self.kubeconfig is not None:
            self.environ["KUBECONFIG"] = str(self.kubeconfig)

    # -- the use cases ------------------------------------------------------------------------
    def run(
        self, image: str, *command: str, flags: Sequence[str] = (), result_file: bool = False
    ) -> SquarepegRunResult:
        """`squarepeg run [flags] IMAGE COMMAND...`; `result` holds the `--result-file` record."""
        record = self.home / ".pegboard-testing-result.json" if result_file else None
        if record is not None:
            record.unlink(missing_ok=True)
        extra = ("--result-file", str(record)) if record is not None else ()
        done = self.cli("run", *extra, *flags, image, *command)
        result: dict[str, Any] | None = None
        if record is not None and record.exists():
            result = json.loads(record.read_text())
        return SquarepegRunResult(
            done.argv, done.exit_code, done.stdout_bytes, done.stderr_bytes, result=result
        )

    def dry_run(self, image: str, *command: str, flags: Sequence[str] = ()) -> DryRunResult:
        """`squarepeg run --dry-run`: the manifest, parsed, and nothing created."""
        done = self.cli("run", "--dry-run", *flags, image, *command)
        manifest = None
        if done.exit_code == 0:
            from pegboard.adapters.yaml_documents import parse_yaml_document

            manifest = parse_yaml_document(done.stdout_bytes, source="<dry-run>").data
        return DryRunResult(
            done.argv, done.exit_code, done.stdout_bytes, done.stderr_bytes, manifest=manifest
        )

    def clean(self, *flags: str) -> CommandResult:
        """`squarepeg clean [flags]` (e.g. `--dry-run`, `--include-kept`, `--yes`)."""
        return self.cli("clean", *flags)

    def rm(self, *names: str, flags: Sequence[str] = ("--yes",)) -> CommandResult:
        """`squarepeg rm --yes NAME...`."""
        return self.cli("rm", *flags, *names)

    def cli(self, *argv: str) -> CommandResult:
        """Any `squarepeg` command line, in-process."""
        from pegboard.app.shared.dependency_injection import providers
        from pegboard.app.squarepeg.cli import main
        from pegboard.app.squarepeg.container import Container

        container = Container()
        with captured() as streams:
            overrides: dict[str, Any] = {
                "environ": providers.Object(dict(self.environ)),
                "home": providers.Object(str(self.home)),
                "cwd": providers.Object(str(self.cwd)),
                "user_name": providers.Object(self.user),
                "stdout": providers.Object(streams.stdout),
                "stderr": providers.Object(streams.stderr),
            }
            if self.cluster is not None:
                fake = self.cluster
                overrides["cluster"] = providers.Callable(_FixedCluster(fake))
                overrides["read_kubeconfig_namespace"] = providers.Object(_no_namespace)
                clock = getattr(fake, "clock", None)
                if clock is not None:
                    overrides["clock"] = providers.Object(clock)
            with container.override_providers(**overrides):
                code = exit_code_of(lambda: main(list(argv), container=container))
            out, err = streams.bytes_of(streams.stdout), streams.bytes_of(streams.stderr)
        return CommandResult(tuple(argv), code, out, err)


class _FixedCluster:
    """The container's `cluster(context=..., lenient_tls=...)` factory, always the given one."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster

    def __call__(self, **_: Any) -> Cluster:
        return self._cluster


def _no_namespace(context: str | None, env: Mapping[str, str], home: str) -> str | None:
    return None  # a given Cluster has its own default namespace; no kubeconfig to read
