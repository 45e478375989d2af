"""Fault knobs of the RunPod API sandbox, each the shape of a failure seen on real RunPod.

Set them as attributes before the call they should hit. Counted knobs are consumed: each fires
that many times, then the sandbox is healthy again.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class StockOut:
    """Create on this GPU/datacenter (None: any) fails with RunPod's no-instances error."""

    gpu_id: str | None = None
    datacenter_id: str | None = None
    times: int = 1

    def matches(self, gpu_id: str, datacenter_id: str | None) -> bool:
        return self.gpu_id in (None, gpu_id) and self.datacenter_id in (None, datacenter_id)


@dataclass
class Faults:
    # Create fails for stock although the stock listing said yes (runpodctl#189).
    stock_out_at_create: list[StockOut] = field(default_factory=list)
    # Create makes the pod, then the API answers 502 with an HTML body (transformerlab#2305).
    create_5xx_after_pod_exists: int = 0
    # Seconds between create/resume and the pod publishing its public 22/tcp mapping.
    ssh_ready_delay_sec: float = 0.0
    # The pod stays RUNNING without ever publishing SSH (images without sshd, skypilot#7321).
    ssh_never_ready: bool = False
    # Resume fails: "not enough free GPUs on the host machine" (runpod-python#168).
    resume_without_free_gpus: int = 0
    # Any operation (by top-level field name, e.g. "pod", "podStop"; "*" any) answers 503.
    http_503: dict[str, int] = field(default_factory=dict)
    # Added before every GraphQL answer.
    latency_ms: float = 0.0

    def take_stock_out(self, gpu_id: str, datacenter_id: str | None) -> bool:
        for rule in self.stock_out_at_create:
            if rule.matches(gpu_id, datacenter_id):
                rule.times -= 1
                if rule.times <= 0:
                    self.stock_out_at_create.remove(rule)
                return True
        return False

    def take_create_5xx(self) -> bool:
        if self.create_5xx_after_pod_exists > 0:
            self.create_5xx_after_pod_exists -= 1
            return True
        return False

    def take_resume_without_gpus(self) -> bool:
        if self.resume_without_free_gpus > 0:
            self.resume_without_free_gpus -= 1
            return True
        return False

    def take_http_503(self, operation: str) -> bool:
        for key in (operation, "*"):
            if self.http_503.get(key, 0) > 0:
                self.http_503[key] -= 1
                return True
        return False
