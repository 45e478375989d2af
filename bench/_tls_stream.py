"""One follow of a running pod's log through the product's own stream, nothing decoded.

Run as its own process by bench/squarepeg_run.py, stdout into a pipe as the TLS pair's tools:

    python bench/_tls_stream.py timestamps|plain POD

The request goes through `KubernetesCluster.stream_logs` (the kubeconfig's TLS and bearer
token, urllib3, the 256 KiB reads `squarepeg run` uses), `follow=true`, with `timestamps=true`
(what squarepeg asks for) or without (what `kubectl logs -f` asks for); every chunk is written
to stdout as it came, prefixes and all. So it shows what the sandbox and the TLS read cost
before any decoding: the most a client asking that query could get through the pipe.
"""

from __future__ import annotations

import os
import sys

from pegboard.adapters.kubernetes_cluster import KubernetesCluster


def main() -> int:
    mode, pod = sys.argv[1], sys.argv[2]
    cluster = KubernetesCluster(env={"KUBECONFIG": os.environ["KUBECONFIG"]})
    stream = cluster.stream_logs(
        pod, namespace="default", container="main", timestamps=mode == "timestamps"
    )
    out = sys.stdout.buffer
    for chunk in stream:
        out.write(chunk)
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
