"""The `runpod` SDK, imported only when a call has to reach RunPod (it takes ~1.4 s to import).

Without the `runpod` extra installed, the first such call raises one line saying how to get it.
"""

from __future__ import annotations

import logging
from types import ModuleType
from typing import Any

from pegboard.domain.errors import UsageError

RUNPOD_EXTRA_HINT = (
    "pod.provider runpod needs the RunPod SDK, which is not installed: "
    "pip install 'pegboard[runpod]'"
)


class RunPodSdkMissing(UsageError):
    """The `runpod` package is not importable."""


class RunPodSdk:
    """The few SDK entry points the adapter uses, resolved once."""

    def __init__(self, runpod: ModuleType, graphql: ModuleType, pod_mutations: ModuleType) -> None:
        self.module = runpod
        self.run_graphql_query: Any = graphql.run_graphql_query
        self.pod_deployment_mutation: Any = pod_mutations.generate_pod_deployment_mutation
        self.AuthenticationError: type[Exception] = runpod.error.AuthenticationError
        self.QueryError: type[Exception] = runpod.error.QueryError


def load_sdk() -> RunPodSdk:
    # Importing the SDK adds a StreamHandler to the root logger (its serverless logging):
    # every message of ours would then print twice. Whatever it adds to the root goes again.
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        import runpod
        import runpod.error
        from runpod.api import graphql
        from runpod.api.mutations import pods as pod_mutations
    except ImportError:
        raise RunPodSdkMissing(RUNPOD_EXTRA_HINT) from None
    finally:
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)
        root.setLevel(level)
    return RunPodSdk(runpod, graphql, pod_mutations)
