"""RunPod's GraphQL API, only for what REST v2 cannot do: spot (interruptible) pods, and a create
with a minimum vCPU count or memory (v2's CreateGpuConfig takes only `id` and `count`).

RunPod retires GraphQL in early 2027 (release-notes.mdx in runpod/docs). When /graphql answers
HTTP 404 or 410 it is gone: GraphQLGone refuses the feature in one line that names the config
key to change. Same wire as the `runpod` SDK 1.x (`runpod/api/graphql.py`): POST {base}/graphql
with `{"query": ...}` and the key as a bearer token; failures come back as HTTP 200 with
`errors`, whose messages are all GraphQL gives to classify by (errors.query_error).
"""

from __future__ import annotations

import logging
from typing import Any

from pegboard.domain.errors import NotFound, Transient
from pegboard.domain.ports.gpu_cloud import NoCapacity, PodRequest

from . import queries
from .graphql_errors import query_error
from .graphql_gone import GraphQLGone
from .http import RunPodHttp
from .rest_bodies import as_object

logger = logging.getLogger(__name__)


class RunPodGraphQL:
    """The few GraphQL operations left, over the adapter's own HTTP client."""

    def __init__(self, http: RunPodHttp) -> None:
        self._http = http
        self._said: set[str] = set()
        self._gone: GraphQLGone | None = None

    def query(self, what: str, text: str, *, key: str, retry: bool = True) -> dict[str, Any]:
        """`data` of the answer; GraphQLGone naming `key` once GraphQL is retired."""
        if self._gone is not None:
            raise GraphQLGone(self._gone_line(key, self._gone.status))
        try:
            answer = self._http.request(what, "POST", "/graphql", body={"query": text}, retry=retry)
        except NotFound as exc:
            self._gone = GraphQLGone(str(exc), status=exc.status)
            raise GraphQLGone(self._gone_line(key, exc.status)) from None
        if not isinstance(answer, dict):
            raise Transient(f"{what}: RunPod's GraphQL API answered without a JSON object")
        errors = answer.get("errors")
        if isinstance(errors, list) and errors:
            first = errors[0] if isinstance(errors[0], dict) else {}
            raise query_error(str(first.get("message") or "GraphQL error"), what)
        data = answer.get("data")
        if not isinstance(data, dict):
            raise Transient(f"{what}: RunPod's GraphQL API answered without data")
        return data

    def create_pod(self, request: PodRequest, key: str, what_for: str) -> str:
        """The new pod's id; raises like a REST create (NoCapacity, Transient, ...)."""
        if key not in self._said:
            self._said.add(key)
            logger.info(
                "[runpod] %s: %s needs RunPod's GraphQL API (REST v2 has no equivalent; "
                "GraphQL is to be retired in early 2027)",
                key,
                what_for,
            )
        what = f"create pod {request.name!r} ({request.gpu_id} in {request.datacenter_id})"
        if request.spot:
            mutation = queries.spot_mutation(request, self._spot_bid(request, key))
            field = "podRentInterruptable"
        else:
            mutation = queries.on_demand_mutation(request)
            field = "podFindAndDeployOnDemand"
        data = self.query(what, mutation, key=key, retry=False)
        pod_id = as_object(data.get(field)).get("id")
        if not isinstance(pod_id, str) or not pod_id:
            raise Transient(f"{what}: RunPod answered without a pod id")
        return pod_id

    def spot_prices(self, cloud: str) -> dict[str, float]:
        rows = self.query("read GPU spot prices", queries.GPU_PRICES, key="pod.spot")["gpuTypes"]
        fields = {
            "SECURE": ["secureSpotPrice"],
            "COMMUNITY": ["communitySpotPrice"],
            "ALL": ["secureSpotPrice", "communitySpotPrice"],
        }[cloud]
        prices: dict[str, float] = {}
        for row in rows or []:
            if not isinstance(row, dict) or not isinstance(row.get("id"), str):
                continue
            known = [
                float(row[f]) for f in fields if isinstance(row.get(f), (int, float)) and row[f] > 0
            ]
            if known:
                prices[row["id"]] = min(known)
        return prices

    def _spot_bid(self, request: PodRequest, key: str) -> float:
        """What to bid per GPU: the current spot price of this GPU in the requested cloud."""
        query = queries.spot_bid_query(request.gpu_id, request.gpu_count)
        rows = self.query(f"read the spot price of {request.gpu_id}", query, key=key)["gpuTypes"]
        row = rows[0] if rows and isinstance(rows[0], dict) else {}
        field = "communitySpotPrice" if request.cloud_type == "COMMUNITY" else "secureSpotPrice"
        lowest = as_object(row.get("lowestPrice"))
        for price in (row.get(field), lowest.get("minimumBidPrice")):
            if isinstance(price, (int, float)) and price > 0:
                return float(price)
        raise NoCapacity(
            f"no spot price for {request.gpu_id} on RunPod: no spot capacity to bid on"
        )

    @staticmethod
    def _gone_line(key: str, status: int | None) -> str:
        return (
            f"{key}: RunPod's GraphQL API is gone (HTTP {status or 410} from /graphql) and REST "
            f"v2 cannot do this; remove {key} from the config"
            + (" (or set it to false)" if key == "pod.spot" else "")
        )
