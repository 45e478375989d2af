#!/usr/bin/env bash
# `make demo`: run both front doors end to end on the embedded sandboxes (no cluster, no cloud).
#  1. squarepeg: start the Kubernetes API sandbox, then a real `squarepeg run` (real kubernetes
#     client, real HTTP) in Pod and Job mode; the container's output and exit code come back.
#  2. runpod-deploy: a real `runpod-deploy run` of examples/local/hello.yaml on the local provider.
#  3. runpod-deploy on its default provider: `runpod-deploy sandbox` (the RunPod API on loopback,
#     each pod a real sshd), then examples/runpod/hello.yaml through it (REST v2, no SDK needed).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}
work=$(mktemp -d "${TMPDIR:-/tmp}/pegboard-demo.XXXXXX")
sandbox_pid=""
runpod_pid=""
cleanup() {
    if [ -n "$sandbox_pid" ]; then kill "$sandbox_pid" 2>/dev/null || true; wait "$sandbox_pid" 2>/dev/null || true; fi
    if [ -n "$runpod_pid" ]; then kill "$runpod_pid" 2>/dev/null || true; wait "$runpod_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*" >&2; }

step "squarepeg sandbox (a loopback Kubernetes API; its kubelet runs containers as local processes)"
"$BIN/squarepeg" sandbox --kubeconfig "$work/kubeconfig" 2>"$work/sandbox.log" &
sandbox_pid=$!
for _ in $(seq 1 100); do [ -s "$work/kubeconfig" ] && break; sleep 0.1; done
[ -s "$work/kubeconfig" ] || { cat "$work/sandbox.log" >&2; echo "demo: the sandbox did not start" >&2; exit 1; }
export KUBECONFIG="$work/kubeconfig"
export HOME="$work/home"   # keep the user's own squarepeg config out of the demo
mkdir -p "$HOME"

step "squarepeg run --dry-run --cpus 0.5 -m 512m alpine echo hi"
"$BIN/squarepeg" run --dry-run --cpus 0.5 -m 512m alpine echo hi

step "squarepeg run alpine sh -c '...; exit 3'   (a Pod; output streamed, exit code passed through)"
set +e
"$BIN/squarepeg" run alpine sh -c 'for i in 1 2 3; do echo "working... $i"; sleep 0.2; done; echo done; exit 3'
code=$?
set -e
echo "squarepeg exited with $code (the container's own code)" >&2
[ "$code" -eq 3 ] || { echo "demo: expected exit code 3, got $code" >&2; exit 1; }

step "squarepeg run --mode job busybox echo 'hello from a Job'"
"$BIN/squarepeg" run --mode job busybox echo 'hello from a Job'

step "the sandbox is empty again: nothing was left behind"
left=$(KUBECONFIG="$work/kubeconfig" "$BIN/python" - <<'PY'
import base64, json, os, ssl, urllib.request
import yaml
cfg = yaml.safe_load(open(os.environ["KUBECONFIG"]))
cluster = cfg["clusters"][0]["cluster"]; token = cfg["users"][0]["user"]["token"]
server = cluster["server"]
ca = cluster.get("certificate-authority-data")  # the sandbox's own CA, made when it started
tls = ssl.create_default_context(cadata=base64.b64decode(ca).decode()) if ca else None
left = 0
for path in ("/api/v1/namespaces/default/pods", "/apis/batch/v1/namespaces/default/jobs"):
    req = urllib.request.Request(server + path, headers={"Authorization": f"Bearer {token}"})
    left += len(json.load(urllib.request.urlopen(req, context=tls))["items"])
print(left)
PY
)
echo "pods and jobs left in the sandbox: $left" >&2
[ "$left" -eq 0 ] || { echo "demo: resources were left behind" >&2; exit 1; }

if [ -f examples/local/hello.yaml ]; then
    step "runpod-deploy run --config examples/local/hello.yaml   (the local provider)"
    cp -r examples/local "$work/local"
    "$BIN/runpod-deploy" run --config "$work/local/hello.yaml" --print-run-dir | tee "$work/run.out"
    run_dir=$(sed -n 's/^RUN_DIR=//p' "$work/run.out" | tail -n 1)
    step "the run's records in $run_dir"
    ls -l "$run_dir" >&2
    "$BIN/runpod-deploy" events "$run_dir"
fi
if [ -f examples/runpod/hello.yaml ]; then
    if [ ! -x /usr/sbin/sshd ] || ! command -v rsync >/dev/null; then
        step "runpod-deploy on the default provider: skipped (needs sshd and rsync)"
    else
        step "runpod-deploy sandbox   (a loopback RunPod API; each pod is a real sshd on 127.0.0.1)"
        mkdir -p "$HOME/.ssh"
        [ -f "$HOME/.ssh/id_ed25519" ] || ssh-keygen -q -t ed25519 -N "" -C pegboard-demo -f "$HOME/.ssh/id_ed25519"
        "$BIN/runpod-deploy" sandbox --port 0 >"$work/runpod.env" 2>"$work/runpod-sandbox.log" &
        runpod_pid=$!
        for _ in $(seq 1 100); do [ "$(grep -c '^export ' "$work/runpod.env" 2>/dev/null)" -ge 2 ] && break; sleep 0.1; done
        [ "$(grep -c '^export ' "$work/runpod.env")" -ge 2 ] || { cat "$work/runpod-sandbox.log" >&2; echo "demo: the RunPod sandbox did not start" >&2; exit 1; }
        cat "$work/runpod.env" >&2
        . "$work/runpod.env"
        cp -r examples/runpod "$work/runpod"
        if [ "$(id -u)" -ne 0 ]; then
            # Pods see their own /workspace only as root (a mount namespace per session).
            sed -i "s#/workspace#$work/workspace#g" "$work/runpod/hello.yaml"
        fi
        step "runpod-deploy run --config examples/runpod/hello.yaml   (pod.provider: runpod, the default)"
        "$BIN/runpod-deploy" run --config "$work/runpod/hello.yaml" --print-run-dir | tee "$work/runpod-run.out"
        step "runpod-deploy ls-stale   (the pod was deleted: nothing is left billing)"
        "$BIN/runpod-deploy" ls-stale
        kill "$runpod_pid" 2>/dev/null || true; wait "$runpod_pid" 2>/dev/null || true
        runpod_pid=""
    fi
fi
step "demo finished"
