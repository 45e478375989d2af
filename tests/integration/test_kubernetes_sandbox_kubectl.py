"""kubectl (client-go) against the sandbox, as against a real cluster: it trusts the CA in the
kubeconfig, sends the token over TLS, downloads the OpenAPI v3 documents for `create -f` and
`apply`, prints the server's Tables, follows logs and watches for `wait`."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.components import require_executable
from helpers.kubectl import Kubectl as BaseKubectl
from helpers.kubernetes_sandbox import wait_phase, wait_until
from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox

POD_YAML = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  labels: {{app: demo}}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: alpine
    command: ["sh", "-c", {script}]
"""


@pytest.fixture(scope="module")
def kubectl_path() -> str:
    return require_executable(
        "kubectl", path="/usr/bin/kubectl", install_hint="any kubectl 1.27 or newer"
    )


@pytest.fixture(scope="module")
def sandbox() -> Iterator[KubernetesSandbox]:
    with KubernetesSandbox(kill_grace_seconds=0.2) as running:
        yield running


class Kubectl(BaseKubectl):
    def manifest(self, name: str, script: str) -> str:
        path = self.files / f"{name}.yaml"
        path.write_text(POD_YAML.format(name=name, script=json.dumps(script)))
        return str(path)


@pytest.fixture(scope="module")
def kubectl(
    kubectl_path: str, sandbox: KubernetesSandbox, tmp_path_factory: pytest.TempPathFactory
) -> Kubectl:
    return Kubectl(kubectl_path, sandbox, tmp_path_factory.mktemp("kubectl-home"))


def test_get_prints_the_servers_table(sandbox: KubernetesSandbox, kubectl: Kubectl) -> None:
    empty = kubectl("get", "pods", "-n", "nothing-here")
    assert empty.stdout == ""
    assert "No resources found in nothing-here namespace." in empty.stderr
    kubectl("run", "table-pod", "--image=alpine", "--restart=Never", "--", "sleep", "30")
    wait_phase(sandbox, "table-pod", "Running")
    lines = kubectl("get", "pods", "table-pod").stdout.splitlines()
    assert lines[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert lines[1].split()[:4] == ["table-pod", "1/1", "Running", "0"]
    wide = kubectl("get", "po", "-o", "wide").stdout.splitlines()[0]
    assert "NODE" in wide and "IP" in wide
    assert kubectl("get", "ns").stdout.splitlines()[0].split() == ["NAME", "STATUS", "AGE"]
    kubectl("delete", "pod", "table-pod", "--wait=true")
    assert sandbox.pod("table-pod") is None


def test_the_token_travels_over_tls(sandbox: KubernetesSandbox, kubectl: Kubectl) -> None:
    before = len(sandbox.requests)
    kubectl("get", "pods")
    requests = sandbox.requests[before:]
    assert requests and all(r.status != 401 for r in requests)
    assert sandbox.url.startswith("https://")


def test_run_then_logs(sandbox: KubernetesSandbox, kubectl: Kubectl) -> None:
    created = kubectl("run", "hello", "--image=alpine", "--restart=Never", "--", "echo", "hi there")
    assert created.stdout == "pod/hello created\n"
    wait_phase(sandbox, "hello", "Succeeded")
    assert kubectl("logs", "hello").stdout == "hi there\n"


def test_logs_follow_streams_until_the_container_ends(
    sandbox: KubernetesSandbox, kubectl: Kubectl
) -> None:
    script = "for i in 1 2 3; do echo line $i; sleep 0.2; done"
    kubectl("create", "-f", kubectl.manifest("follow", script))
    wait_phase(sandbox, "follow", "Running", "Succeeded")
    followed = kubectl("logs", "-f", "follow")
    assert followed.stdout == "line 1\nline 2\nline 3\n"


def test_create_from_file_validates_fields_on_the_server(
    sandbox: KubernetesSandbox, kubectl: Kubectl
) -> None:
    created = kubectl("create", "-f", kubectl.manifest("from-file", "echo made"))
    assert created.stdout == "pod/from-file created\n"
    assert sandbox.pod("from-file") is not None
    typo = Path(kubectl.manifest("typo", "true"))
    typo.write_text(
        typo.read_text().replace("image: alpine", "image: alpine\n    imagePulPolicy: Always")
    )
    refused = kubectl("create", "-f", str(typo), ok=False)
    assert refused.returncode == 1
    assert (
        'strict decoding error: unknown field "spec.containers[0].imagePulPolicy"' in refused.stderr
    )
    assert sandbox.pod("typo") is None
    warned = kubectl("create", "-f", str(typo), "--validate=warn")
    assert 'Warning: unknown field "spec.containers[0].imagePulPolicy"' in warned.stderr


def test_create_dry_run_server_stores_nothing(sandbox: KubernetesSandbox, kubectl: Kubectl) -> None:
    dry = kubectl("create", "-f", kubectl.manifest("dry", "true"), "--dry-run=server")
    assert dry.stdout == "pod/dry created (server dry run)\n"
    assert sandbox.pod("dry") is None
    assert any(r.params().get("dryRun") == ["All"] for r in sandbox.requests)


def test_apply_creates_configures_and_reports_unchanged(
    sandbox: KubernetesSandbox, kubectl: Kubectl
) -> None:
    path = Path(kubectl.manifest("applied", "sleep 30"))
    assert kubectl("apply", "-f", str(path)).stdout == "pod/applied created\n"
    path.write_text(path.read_text().replace("app: demo", "app: demo2"))
    assert kubectl("apply", "-f", str(path)).stdout == "pod/applied configured\n"
    pod = sandbox.pod("applied")
    assert pod is not None
    assert pod["metadata"]["labels"] == {"app": "demo2"}
    assert "kubectl.kubernetes.io/last-applied-configuration" in pod["metadata"]["annotations"]
    assert kubectl("apply", "-f", str(path)).stdout == "pod/applied unchanged\n"
    patches = [r for r in sandbox.requests if r.method == "PATCH" and r.path.endswith("/applied")]
    assert patches and patches[-1].params()["fieldValidation"] == ["Strict"]
    kubectl("delete", "-f", str(path))
    assert sandbox.pod("applied") is None


def test_wait_for_a_condition_a_jsonpath_and_deletion(
    sandbox: KubernetesSandbox, kubectl: Kubectl
) -> None:
    kubectl("create", "-f", kubectl.manifest("waited", "sleep 30"))
    ready = kubectl("wait", "--for=condition=Ready", "pod/waited", "--timeout=20s")
    assert ready.stdout == "pod/waited condition met\n"
    kubectl("create", "-f", kubectl.manifest("quick", "true"))
    done = kubectl("wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/quick", "--timeout=20s")
    assert done.stdout == "pod/quick condition met\n"
    watches_before = len([r for r in sandbox.requests if r.verb == "watch"])
    waiting = subprocess.Popen(
        [kubectl.path, "wait", "--for=delete", "pod/waited", "--timeout=30s"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=kubectl.env,
    )
    try:
        wait_until(
            lambda: len([r for r in sandbox.requests if r.verb == "watch"]) > watches_before,
            what="kubectl wait to watch the pod",
        )
        kubectl("delete", "pod", "waited", "--wait=false")
        out, err = waiting.communicate(timeout=30)
    finally:
        if waiting.poll() is None:
            waiting.kill()
            waiting.communicate()
    assert waiting.returncode == 0, err
    assert out == "pod/waited condition met\n"


def test_describe_shows_the_pod_and_its_events(
    sandbox: KubernetesSandbox, kubectl: Kubectl
) -> None:
    kubectl("create", "-f", kubectl.manifest("described", "exit 3"))
    wait_phase(sandbox, "described", "Failed")
    wait_until(
        lambda: any(
            e["reason"] == "Started" and e["involvedObject"]["name"] == "described"
            for e in sandbox.events()
        ),
        what="the Started event",
    )
    text = kubectl("describe", "pod", "described").stdout
    assert "Name:             described" in text
    assert "Status:           Failed" in text
    assert "Exit Code:    3" in text
    assert "Started container main" in text


def test_label_adds_overwrites_and_removes(sandbox: KubernetesSandbox, kubectl: Kubectl) -> None:
    kubectl("create", "-f", kubectl.manifest("labelled", "true"))
    assert kubectl("label", "pod", "labelled", "tier=web").stdout == "pod/labelled labeled\n"
    refused = kubectl("label", "pod", "labelled", "tier=db", ok=False)
    assert refused.returncode == 1 and "already has a value (web)" in refused.stderr
    kubectl("label", "pod", "labelled", "tier=db", "--overwrite")
    pod = sandbox.pod("labelled")
    assert pod is not None and pod["metadata"]["labels"]["tier"] == "db"
    selected = kubectl("get", "pods", "-l", "tier=db", "-o", "name").stdout
    assert selected == "pod/labelled\n"
    kubectl("label", "pod", "labelled", "tier-")
    pod = sandbox.pod("labelled")
    assert pod is not None and "tier" not in pod["metadata"]["labels"]


def test_create_job_then_delete_it_in_the_foreground(
    sandbox: KubernetesSandbox, kubectl: Kubectl
) -> None:
    created = kubectl(
        "create", "job", "batchy", "--image=alpine", "--", "sh", "-c", "echo from job"
    )
    assert created.stdout == "job.batch/batchy created\n"
    kubectl("wait", "--for=condition=complete", "job/batchy", "--timeout=30s")
    assert kubectl("logs", "job/batchy").stdout == "from job\n"
    table = kubectl("get", "jobs").stdout.splitlines()
    assert table[0].split() == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    assert table[1].split()[:3] == ["batchy", "Complete", "1/1"]
    pods = [
        p["metadata"]["name"] for p in sandbox.pods() if p["metadata"]["name"].startswith("batchy-")
    ]
    assert len(pods) == 1
    deleted = kubectl("delete", "job", "batchy", "--cascade=foreground")
    assert deleted.stdout == 'job.batch "batchy" deleted\n'
    assert sandbox.jobs() == [] or all(j["metadata"]["name"] != "batchy" for j in sandbox.jobs())
    assert sandbox.pod(pods[0]) is None
    foreground = [d for d in sandbox.deletions if d.name == "batchy"]
    assert foreground[-1].propagation_policy == "Foreground"


def test_delete_a_pod(sandbox: KubernetesSandbox, kubectl: Kubectl) -> None:
    kubectl("run", "doomed", "--image=alpine", "--restart=Never", "--", "sleep", "60")
    wait_phase(sandbox, "doomed", "Running")
    assert kubectl("delete", "pod", "doomed").stdout == 'pod "doomed" deleted\n'
    assert sandbox.pod("doomed") is None
    missing = kubectl("delete", "pod", "doomed", ok=False)
    assert missing.returncode == 1
    assert 'pods "doomed" not found' in missing.stderr


def test_leases_through_kubectl(sandbox: KubernetesSandbox, kubectl: Kubectl) -> None:
    path = kubectl.files / "lease.yaml"
    path.write_text(
        "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: sweep}\n"
        "spec: {holderIdentity: runner-a, leaseDurationSeconds: 30}\n"
    )
    assert kubectl("apply", "-f", str(path)).stdout == "lease.coordination.k8s.io/sweep created\n"
    lines = kubectl("get", "leases").stdout.splitlines()
    assert lines[0].split() == ["NAME", "HOLDER", "AGE"]
    assert lines[1].split()[:2] == ["sweep", "runner-a"]
