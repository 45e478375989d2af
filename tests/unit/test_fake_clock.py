from pegboard.adapters.fakes import FakeClock
from pegboard.adapters.system_clock import SystemClock
from pegboard.domain.ports.clock import Clock


def test_fake_clock_sleep_advances_virtual_time_only() -> None:
    clock = FakeClock(start=100.0)
    clock.sleep(30)
    assert clock.now() == 130.0
    assert clock.monotonic() == 30.0
    assert clock.sleeps == [30]


def test_both_clocks_satisfy_the_port() -> None:
    assert isinstance(FakeClock(), Clock)
    assert isinstance(SystemClock(), Clock)
