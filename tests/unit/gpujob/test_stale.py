"""Pure helpers of ls-stale, bulk cleanup and the GPU commands: pointers, ownership, age, cost,
stock classification (one classification for selection and inventory) and the forecast."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pegboard.domain.gpujob.inventory import (
    AVAILABLE,
    LOW,
    NOT_LISTED,
    STOCKOUT,
    build_inventory,
    classify_stock,
    forecast,
    gpu_list_lines,
    price_lines,
)
from pegboard.domain.gpujob.provisioning import Candidate, plan_candidates
from pegboard.domain.gpujob.spec import BudgetSpec
from pegboard.domain.gpujob.stale import (
    KeptWarm,
    format_age,
    is_owned,
    kept_warm,
    owner_prefix,
    pointer_pod_id,
    pointer_provider,
    select_bulk_delete,
    stale_json,
    stale_report,
    stale_table,
    storage_cost,
    storage_rates,
)
from pegboard.domain.ports.gpu_cloud import GpuStock, PodStatus

STAMP = "20260517T120000.123456Z-beef01"
NOW = 1_800_000_000.0
RUNPOD_RATES = storage_rates(billed=True)


def _pod(
    pod_id: str,
    name: str,
    *,
    status: str = "EXITED",
    gb: int | None = 50,
    stopped_at: float | None = None,
) -> PodStatus:
    return PodStatus(
        pod_id=pod_id, name=name, desired_status=status, volume_gb=gb, stopped_at=stopped_at
    )


# --- pointers ------------------------------------------------------------------------------


def test_pointer_pod_id_reads_ours_and_every_084_spelling() -> None:
    assert pointer_pod_id({"pod_id": "a1"}) == "a1"
    assert pointer_pod_id({"id": "b2", "gpu_id": "x"}) == "b2"
    assert pointer_pod_id({"podId": "c3"}) == "c3"
    assert pointer_pod_id({"pod_id": "", "id": "d4"}) == "d4"
    assert pointer_pod_id({"gpu_id": "x"}) is None
    assert pointer_pod_id({"pod_id": 7}) is None


def test_a_pointer_without_provider_is_084s_runpod() -> None:
    assert pointer_provider({"pod_id": "a"}) == "runpod"
    assert pointer_provider({"pod_id": "a", "provider": "local"}) == "local"


def test_owner_prefix_is_the_run_id_without_the_run_stamp() -> None:
    pointer = {"run_id": f"sweep-s7-{STAMP}", "run_dir": f"/p/artifacts/runpod/{STAMP}"}
    assert owner_prefix(pointer) == "sweep-s7-"
    assert owner_prefix({"pod_id": "x"}) is None  # 0.8.4: no run recorded
    assert owner_prefix({"run_id": "other", "run_dir": f"/r/{STAMP}"}) is None


def test_ownership_needs_a_known_prefix_followed_by_a_run_stamp() -> None:
    prefixes = ["sweep-s7-"]
    assert is_owned(f"sweep-s7-{STAMP}", run_prefixes=prefixes, name_prefixes=())
    assert is_owned("sweep-s7-20260517T120000Z", run_prefixes=prefixes, name_prefixes=())
    # Someone else's pod that merely starts the same way is not ours.
    assert not is_owned("sweep-s7-colleague", run_prefixes=prefixes, name_prefixes=())
    assert not is_owned(f"sweep-s8-{STAMP}", run_prefixes=prefixes, name_prefixes=())
    assert is_owned("team-x-anything", run_prefixes=(), name_prefixes=["team-x-"])
    assert not is_owned("anything", run_prefixes=(), name_prefixes=[""])


# --- bulk selection ------------------------------------------------------------------------


def test_bulk_selection_is_safe_by_default() -> None:
    mine = _pod("p1", f"job-{STAMP}")
    theirs = _pod("p2", "colleague-pod")
    warm = _pod("p3", f"job-{STAMP}")
    running = _pod("p4", f"job-{STAMP}", status="RUNNING")
    keeper = kept_warm(pod_id="p3", state_file="/s/a.json", lifecycle_action="recycle")
    assert keeper is not None
    selection = select_bulk_delete(
        [mine, theirs, warm, running],
        run_prefixes=["job-"],
        name_prefixes=(),
        all_owners=False,
        warm={"p3": keeper},
        include_recycled=False,
    )
    assert [p.pod_id for p in selection.delete] == ["p1"]
    assert [p.pod_id for p in selection.not_ours] == ["p2"]
    assert [(p.pod_id, "recycle" in why) for p, why in selection.kept] == [("p3", True)]


def test_all_owners_and_include_recycled_widen_the_selection() -> None:
    pods = [_pod("p1", "x"), _pod("p2", "y")]
    warm = {"p2": KeptWarm("p2", "/s/b.json", "kept for recycle")}
    everyone = select_bulk_delete(
        pods, run_prefixes=(), name_prefixes=(), all_owners=True, warm=warm, include_recycled=False
    )
    assert [p.pod_id for p in everyone.delete] == ["p1"] and len(everyone.kept) == 1
    recycled_too = select_bulk_delete(
        pods, run_prefixes=(), name_prefixes=(), all_owners=False, warm=warm, include_recycled=True
    )
    assert [p.pod_id for p in recycled_too.delete] == ["p2"]  # named by our pointer: ours


def test_only_recycle_or_unknown_lifecycles_keep_a_pod_warm() -> None:
    assert kept_warm(pod_id="a", state_file="s", lifecycle_action="stop") is None
    assert kept_warm(pod_id="a", state_file="s", lifecycle_action="preserve") is None
    unknown = kept_warm(pod_id="a", state_file="s", lifecycle_action=None)
    assert unknown is not None and "unknown" in unknown.reason


# --- ls-stale ------------------------------------------------------------------------------


def test_age_counts_from_the_stop_and_cost_is_per_gb_month() -> None:
    pods = [
        _pod("old", "a", gb=50, stopped_at=NOW - 3 * 86400 - 4 * 3600),
        _pod("new", "b", gb=10, stopped_at=NOW - 90),
        _pod("unknown", "c", gb=None),
        _pod("live", "d", status="RUNNING"),
    ]
    report = stale_report(
        pods=pods, pointers={}, provider="runpod", now=NOW, volume_rates=RUNPOD_RATES
    )
    # Stopped first (oldest first), then the running ones (issue 7 item 7: they bill most).
    assert [p.pod_id for p in report.pods] == ["old", "new", "unknown", "live"]
    assert [format_age(p.age_sec) for p in report.pods] == ["3d04h", "1m", "?", "?"]
    assert report.pods[0].usd_per_month == 10.0  # 50 GB stopped at $0.20/GB-month
    assert abs(report.pods[0].usd_per_day - 10.0 / 30) < 1e-9
    live = report.pods[3]
    assert live.status == "RUNNING"
    assert report.total_gb == 60 + (live.volume_gb or 0)
    table = stale_table(report)
    assert table[0].split() == ["POD_ID", "NAME", "STATUS", "GB", "AGE", "$/DAY", "$/MO"]
    assert table[-1].split()[:5] == ["TOTAL", "3", "stopped,", "1", "running"]


def test_names_are_cut_at_40_characters() -> None:
    report = stale_report(
        pods=[_pod("p", "n" * 60)],
        pointers={},
        provider="runpod",
        now=NOW,
        volume_rates=RUNPOD_RATES,
    )
    assert "n" * 40 in stale_table(report)[1] and "n" * 41 not in stale_table(report)[1]


def test_pointers_to_missing_pods_of_this_provider_are_dangling() -> None:
    pointers = {
        "/s/gone.json": {"pod_id": "gone", "provider": "local"},
        "/s/alive.json": {"pod_id": "alive", "provider": "local"},
        "/s/other.json": {"pod_id": "elsewhere", "provider": "runpod"},
    }
    pods = [_pod("alive", "a", stopped_at=NOW)]
    report = stale_report(
        pods=pods,
        pointers=pointers,
        provider="local",
        now=NOW,
        volume_rates=storage_rates(billed=False),
    )
    assert [(d.state_file, d.pod_id) for d in report.dangling] == [("/s/gone.json", "gone")]
    assert report.pods[0].state_file == "/s/alive.json"
    data = stale_json(report)
    assert data["total"] == {"pods": 1, "volume_gb": 50, "usd_per_day": 0, "usd_per_month": 0}


def test_storage_cost_of_an_unknown_size_is_zero() -> None:
    assert storage_cost(None, 0.10) == (0.0, 0.0)
    assert storage_cost(30, 0.10) == (0.1, 3.0)


# --- stock and inventory -------------------------------------------------------------------


def test_classify_stock() -> None:
    assert [classify_stock(s) for s in ("high", "medium", "low", "none", "out", "", None)] == [
        AVAILABLE,
        AVAILABLE,
        LOW,
        STOCKOUT,
        STOCKOUT,
        NOT_LISTED,
        NOT_LISTED,
    ]


@given(level=st.sampled_from(["high", "medium", "low", "none", "unavailable", "out", "weird"]))
def test_inventory_and_selection_agree_on_what_is_in_stock(level: str) -> None:
    plan = plan_candidates(
        gpu_order=["G"],
        datacenters=["D"],
        stock=[GpuStock("G", "D", level)],
        prices={},
        max_gpu_price_usd=None,
    )
    assert bool(plan.candidates) == (classify_stock(level) in (AVAILABLE, LOW))


def test_inventory_rows_widening_hint_and_stockout() -> None:
    stock = [
        GpuStock("A4000", "EU-1", "none"),
        GpuStock("A4000", "US-1", "low"),
    ]
    listed = [
        GpuStock("A4000", "EU-1", "none"),
        GpuStock("L40", "EU-1", "medium"),
        GpuStock("H100", "EU-1", "high"),
        GpuStock("B200", "EU-1", "none"),
    ]
    inventory = build_inventory(
        gpu_order=["A4000", "A5000"], datacenters=["EU-1", "US-1"], stock=stock, listed=listed
    )
    eu, us = inventory.datacenters
    assert [(r.gpu_id, r.status) for r in eu.rows] == [("A4000", STOCKOUT), ("A5000", NOT_LISTED)]
    assert [s.gpu_id for s in eu.widening] == ["H100", "L40"]  # best stock first, none dropped
    assert us.any_available and inventory.any_available
    only_eu = build_inventory(gpu_order=["A4000"], datacenters=["EU-1"], stock=stock, listed=[])
    assert not only_eu.any_available


def test_gpu_list_sorts_by_stock_and_shows_known_prices() -> None:
    entries = [GpuStock("B", "D", "low"), GpuStock("A", "D", "high"), GpuStock("C", "D", "medium")]
    lines = gpu_list_lines(entries, {"A": 1.5})
    assert [line.split()[0] for line in lines] == ["GPU", "A", "C", "B"]
    assert lines[1].split() == ["A", "high", "1.50"] and lines[2].split() == ["C", "medium", "—"]
    assert gpu_list_lines(entries, None)[0].split() == ["GPU", "STOCK"]
    assert [line.split()[0] for line in price_lines({"X": 2.0, "Y": 0.5})] == ["GPU", "Y", "X"]


def test_forecast_prefers_the_provider_price_and_reports_the_first_limit() -> None:
    budget = BudgetSpec(cost_cap_usd=10.0, assumed_hourly_rate_usd=1.0, max_runtime_minutes=120)
    priced = forecast(candidate=Candidate("G", "D", "high", 4.0), budget=budget)
    assert priced.price_source == "provider" and priced.spend_at_timeout_usd == 8.0
    assert priced.runtime_at_cap_sec == 2.5 * 3600 and priced.stops_after_sec == 7200
    assumed = forecast(candidate=Candidate("G", "D"), budget=budget)
    assert assumed.price_source == "assumed_rate" and assumed.price_per_hour_usd == 1.0
    assert assumed.stops_after_sec == 7200  # the timeout comes before the cap (10 h)
    expensive = forecast(candidate=Candidate("G", "D", None, 20.0), budget=budget)
    assert expensive.stops_after_sec == 1800  # the cap at $20/h: 30 minutes
    assert any("runtime at cap" in line for line in expensive.lines())


def test_running_pods_are_listed_with_age_from_creation_and_gpu_cost() -> None:
    """Issue 7 item 7: a run killed during monitor leaves a RUNNING pod; ls-stale hid it."""
    running = PodStatus(
        pod_id="r1",
        name="job-x",
        desired_status="RUNNING",
        volume_gb=30,
        cost_per_hour_usd=0.5,
        created_at=NOW - 2 * 3600,
    )
    report = stale_report(
        pods=[running], pointers={}, provider="runpod", now=NOW, volume_rates=RUNPOD_RATES
    )
    (row,) = report.pods
    assert (row.status, format_age(row.age_sec)) == ("RUNNING", "2h00m")
    assert (
        abs(row.usd_per_day - (12.0 + 0.1)) < 1e-9
    )  # the GPU by the hour + its disk at the running rate
    assert row.release == "runpod-deploy cleanup --pod-id r1 --provider runpod --mode delete"


def test_a_pointer_written_before_create_finds_its_pod_by_name() -> None:
    """A crash between create and the pointer update: the pointer names the pod's unique name."""
    pointers = {
        "/s/runs/1.json": {"pod_id": None, "pod_name": "job-1", "provider": "local"},
        "/s/runs/2.json": {"pod_id": None, "pod_name": "job-2", "provider": "local"},
        "/s/cfg.json": {"pod_id": "p1", "provider": "local"},
        "/s/runs/0.json": {"pod_id": "p1", "provider": "local"},
    }
    pods = [_pod("p1", "job-0", status="RUNNING"), _pod("p2", "job-1", status="RUNNING")]
    report = stale_report(
        pods=pods,
        pointers=pointers,
        provider="local",
        now=NOW,
        volume_rates=storage_rates(billed=False),
    )
    rows = {p.pod_id: p for p in report.pods}
    # The per-run pointer wins over the config's shared one: it only ever names its own pod.
    assert rows["p1"].state_file == "/s/runs/0.json"
    assert rows["p2"].state_file == "/s/runs/1.json"
    assert "--state-file /s/runs/1.json --pod-id p2" in rows["p2"].release
    assert [d.state_file for d in report.dangling] == ["/s/runs/2.json"]
