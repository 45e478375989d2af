"""Loopback servers that speak real protocols, for tests, the CI harness and demos.

kubernetes/  the Kubernetes API sandbox: HTTPS on 127.0.0.1, a simulated kubelet that runs each
             container's command as a local process, a Jobs controller, fault injection, and a
             kubeconfig for kubectl and the official client (docs/sandbox.md)
runpod/      the RunPod API sandbox: the GraphQL operations the adapter and the SDK send
sshd.py      LoopbackSshd: a real OpenSSH sshd on 127.0.0.1 with a random port (docs/development.md)

The shipped fakes (pegboard.adapters.fakes) never import these (an import-linter contract).
"""
