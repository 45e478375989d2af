"""What a Kubernetes apiserver, kubelet and controllers do to objects, written once (stdlib only).

FakeCluster (in-memory, virtual time) and the Kubernetes API sandbox (HTTP, real processes) both
build on these rules, so the one contract suite holds for both: selectors, time strings, create
defaulting and validation, Status errors, pod and container status shapes, the Job controller's
rules and delete propagation. Each module is plain functions on JSON dicts; nothing here keeps
state, reads a clock or does I/O: callers pass times, uids and entropy in.
"""
