"""How `clean` and `rm` start: the layered config, the status line, the cluster and the
namespace (flag, then config, then the kubeconfig context, then "default"), announced once."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from pegboard.app.squarepeg.seams import ClusterPorts, Seams
    from pegboard.app.squarepeg.status import StatusUI
    from pegboard.domain.ports.cluster import Cluster
    from pegboard.domain.squarepeg.config import SquarepegConfig


class ClusterSession(NamedTuple):
    config: SquarepegConfig
    ui: StatusUI
    cluster: Cluster
    namespace: str


def open_cluster_session(
    seams: Seams,
    ports: ClusterPorts,
    *,
    namespace: str | None,
    context: str | None,
    quiet: bool,
    no_color: bool,
    config_paths: Sequence[str],
    no_default_config: bool,
    profile: str | None,
) -> ClusterSession:
    from pegboard.app.squarepeg.config_loading import load_config
    from pegboard.app.squarepeg.status import StatusUI
    from pegboard.domain.kubernetes.names import namespace_in_use

    config = load_config(
        config_paths=config_paths,
        no_default_config=no_default_config,
        profile=profile,
        environ=seams.environ,
        home=seams.home,
        read_document=seams.read_document,
    )
    ui = StatusUI(
        tag=secrets.token_hex(4),
        stream=seams.stderr,
        quiet=quiet or config.quiet,
        color=False if no_color else None,
        environ=seams.environ,
    )
    cluster = ports.open_cluster(context=context, lenient_tls=config.lenient_tls)
    target = cluster.target()
    ns = namespace_in_use(namespace or config.namespace, target.namespace)
    ui.banner(target.context, ns)
    return ClusterSession(config, ui, cluster, ns)
