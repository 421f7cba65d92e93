"""A round whose load driver's saturation spoils a budget is measured again (a passing
disturbance of a shared machine). Saturated on every attempt, the round is kept and left out of
the budgets its saturation spoils (#38): INVALID when the driver's own CPU was the limit,
undecided on this runner (never red under the default policy) when it waited for CPUs others
held, and the budgets it does not spoil (CPU per request, errors, rps at a fixed rate behind
a late schedule) are judged as usual. A driver that only waited for CPUs the stack under test
held measured the stack (#27 item 5): the round is judged, with a note, unless both sides of
the comparison did it."""

from __future__ import annotations

from dataclasses import replace

import pytest
from netperf_rounds import make_round

from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.measure import contention
from pytest_netperf.measure.gate import Gate
from pytest_netperf.measure.gate_settings import GateSettings
from pytest_netperf.results.model import NodeCosts, RoundResult, SystemCosts
from pytest_netperf.results.runner import RunnerState
from pytest_netperf.verdict.policy import undecided_fails
from pytest_netperf.verdict.status import Status


class LaggingDriver:
    """Saturated on the runs whose (1-based) numbers are in ``saturated``, with ``kinds`` (the
    driver's ``saturation_kinds``; none given: it does not say) and ``cpu_bound``."""

    name = "rust"

    def __init__(self, saturated: set[int], kinds: tuple[str, ...] = (), cpu_bound: bool = True) -> None:
        self.saturated, self.calls = saturated, 0
        self.kinds, self.cpu_bound = list(kinds), cpu_bound

    cpus = None  # not pinned

    def run(self, url: str, shape: LoadShape) -> RoundResult:
        self.calls += 1
        result = make_round(rps=1000.0 + self.calls % 2, median_ns=500_000.0 * (1 + 0.01 * (self.calls % 3)), url=url)
        if self.calls in self.saturated:
            health = replace(
                result.client,
                saturated=True,
                cpu_bound=self.cpu_bound,
                saturation_reasons=["schedule lag p99 14180 us"] * max(1, len(self.kinds)),
                saturation_kinds=self.kinds,
            )
            result = replace(result, client=health)
        return result


def gate_with(driver: LaggingDriver, *budgets: str) -> Gate:
    settings = GateSettings(rounds_min=3, rounds_max=3, round_duration_s=0.1, warmup_s=0.0, saturated_retries=2)
    parsed = [parse_budget(b) for b in budgets or ("rps > 10",)]
    return Gate("t.py::test", parsed, settings, driver_factory=lambda name, runner: driver)


def test_a_round_saturated_once_is_measured_again_and_noted() -> None:
    driver = LaggingDriver(saturated={2})
    g = gate_with(driver)
    g.measure("http://10.0.0.2/")
    (outcome,) = g.finish()
    assert outcome.status is Status.PASS and outcome.verdict.n_rounds == 3
    assert driver.calls == 4
    assert any("(round 2) measured again: the load driver was saturated" in note for note in outcome.notes)


def test_a_driver_whose_own_cpu_was_the_limit_on_every_attempt_invalidates_what_it_spoils() -> None:
    driver = LaggingDriver(saturated={2, 3, 4}, kinds=("client_cpu",))
    g = gate_with(driver, "rps > 10", "errors == 0")
    g.measure("http://10.0.0.2/")
    rps, errors = g.finish()
    assert driver.calls == 5, "measured again twice, then kept"
    assert rps.status is Status.INVALID
    assert "(round 2): the load driver was saturated (its own CPU was the limit)" in rps.notes[0]
    assert "rps measured the driver, not the target" in rps.notes[0]
    assert errors.status is Status.PASS, "a pegged driver's requests were still answered without errors"


def test_a_driver_that_names_no_kind_spoils_every_timed_figure() -> None:
    driver = LaggingDriver(saturated={2, 3, 4})
    g = gate_with(driver, "errors == 0")
    g.measure("http://10.0.0.2/")
    (outcome,) = g.finish()
    assert outcome.status is Status.INVALID and driver.calls == 5


def test_schedule_lag_from_a_busy_runner_spoils_latency_only() -> None:
    driver = LaggingDriver(saturated={1, 2, 3}, kinds=("schedule",), cpu_bound=False)
    g = gate_with(driver, "rps > 10", "p90 < 100ms")
    g.measure("http://10.0.0.2/")
    rps, p90 = g.finish()
    assert driver.calls == 3 + 2, "round 1 measured again twice for p90; rounds 2 and 3 healthy"
    assert rps.status is Status.PASS and rps.verdict.n_rounds == 3
    assert p90.status is Status.PASS and p90.verdict.n_rounds == 2
    assert any(n.startswith("1 of 3 round(s) left out of p90: the load driver was saturated") for n in p90.notes)
    assert not any("left out" in n for n in rps.notes)


def test_every_round_spoiled_by_a_busy_runner_is_undecided_not_red() -> None:
    driver = LaggingDriver(saturated=set(range(1, 20)), kinds=("schedule",), cpu_bound=False)
    g = gate_with(driver, "rps > 10", "p90 < 100ms")
    g.measure("http://10.0.0.2/")
    rps, p90 = g.finish()
    assert rps.status is Status.PASS, "not measured again for rps: schedule lag does not spoil it"
    assert p90.status is Status.INCONCLUSIVE
    assert "this runner was too busy to measure p90: 3 of 3 round(s) left out of p90" in p90.verdict.undecidable
    assert not undecided_fails(p90.budget, p90.verdict, "change")
    assert undecided_fails(p90.budget, p90.verdict, "fail")


def test_client_side_errors_of_a_driver_that_could_not_send_are_not_the_targets() -> None:
    """(its rate is INVALID, its latency judged, its queue timeouts no implicit-budget errors)"""

    class QueueTimeouts(LaggingDriver):
        def run(self, url: str, shape: LoadShape) -> RoundResult:
            result = super().run(url, shape)
            if result.client.saturated:
                result = replace(result, errors={"queue_timeout": 40})
            return result

    driver = QueueTimeouts(saturated={2, 3, 4}, kinds=("send_rate",), cpu_bound=False)
    g = gate_with(driver, "p50 < 100ms", "rps > 10")
    g.measure("http://10.0.0.2/")
    p50, rps = g.finish()
    assert driver.calls == 5, "measured again for rps"
    assert p50.status is Status.PASS and p50.verdict.n_rounds == 3
    assert rps.status is Status.INVALID, "it could not send its schedule: the load asks too much"
    assert not any("no errors are allowed" in n for n in p50.notes)


# ---------------------------------------------------------------- starved by the stack (#27 item 5)

HEAD, REF = "http://10.0.0.2/", "http://10.0.0.3/"


def stack_costs(cores: float, span_s: float = 5.0) -> SystemCosts:
    """The stack under test used ``cores`` on average over the round."""
    proxy = NodeCosts(cpu_ns=int(cores * span_s * 1e9), mem_bytes=1 << 20, mem_peak_bytes=1 << 20)
    return SystemCosts(nodes={"proxy": proxy}, served=5000, span_s=span_s)


def waited(result: RoundResult, stack_cores: float, cpu_bound: bool = False) -> RoundResult:
    """``result`` as a driver reports it that waited for CPUs (own CPU not pegged)."""
    health = replace(
        result.client,
        saturated=True,
        cpu_bound=cpu_bound,
        saturation_reasons=["thread 0 never idle over the window: 40% on CPU + 58% waiting for a CPU (> 95%)"],
    )
    return replace(result, client=health, system=stack_costs(stack_cores))


class SlowProxyDriver:
    """Each URL has its throughput and the cores its stack burns; a stack above one core
    starves the driver (which shares the machine's cores with it)."""

    name = "rust"

    def __init__(self, rps: dict[str, float], stack_cores: dict[str, float], cpus: str | None = None) -> None:
        self.rps, self.stack_cores, self.cpus = rps, stack_cores, cpus
        self.calls: list[str] = []

    def run(self, url: str, shape: LoadShape) -> RoundResult:
        self.calls.append(url)
        result = make_round(rps=self.rps[url] * (1.0 + 0.01 * (len(self.calls) % 3 - 1)), url=url)
        cores = self.stack_cores[url]
        if cores > 1.0:
            return waited(result, cores)
        return replace(result, system=stack_costs(cores))


@pytest.fixture
def two_shared_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(contention, "usable_cores", lambda: [0, 1])


def compare_gate(driver: SlowProxyDriver, budget: str = "rps >= 0.9x reference") -> Gate:
    settings = GateSettings(rounds_min=4, rounds_max=4, round_duration_s=0.1, warmup_s=0.0, saturated_retries=2)
    return Gate("t.py::test", [parse_budget(budget)], settings, driver_factory=lambda name, runner: driver)


@pytest.mark.usefixtures("two_shared_cores")
def test_a_proxy_that_starves_the_driver_fails_on_its_own_result_not_invalid() -> None:
    driver = SlowProxyDriver({HEAD: 3000.0, REF: 10_000.0}, {HEAD: 1.8, REF: 0.6})
    g = compare_gate(driver)
    g.compare(HEAD, reference=REF)
    (outcome,) = g.finish()
    assert outcome.status is Status.FAIL, outcome.notes
    assert outcome.verdict.estimate == pytest.approx(0.3, rel=0.05)
    assert driver.calls.count(HEAD) == 4 * 3, "measured again twice (a neighbour's burst passes), then kept"
    (note,) = [n for n in outcome.notes if n.startswith("candidate: in 4 of 4 round(s)")]
    assert "the stack under test used 1.80 of the 2 cores it shares with the load driver" in note


@pytest.mark.usefixtures("two_shared_cores")
def test_both_sides_starving_the_driver_is_invalid_naming_the_runner() -> None:
    g = compare_gate(SlowProxyDriver({HEAD: 9_000.0, REF: 10_000.0}, {HEAD: 1.7, REF: 1.6}))
    g.compare(HEAD, reference=REF)
    (outcome,) = g.finish()
    assert outcome.status is Status.INVALID
    assert "on both sides (candidate and reference)" in outcome.notes[0]
    assert "too few cores for this load" in outcome.notes[0]


@pytest.mark.usefixtures("two_shared_cores")
def test_a_stack_that_held_the_cpus_only_once_does_not_excuse_the_driver() -> None:
    class OnceBusy(SlowProxyDriver):
        def run(self, url: str, shape: LoadShape) -> RoundResult:
            result = super().run(url, shape)
            return waited(result, stack_cores=1.8 if len(self.calls) == 1 else 0.2)

    driver = OnceBusy({HEAD: 10_000.0}, {HEAD: 0.3})
    g = compare_gate(driver, "rps > 10")
    g.measure(HEAD)
    (outcome,) = g.finish()
    assert outcome.status is Status.INVALID, outcome.notes
    assert "the load driver was saturated" in outcome.notes[0]
    assert not any(n.startswith("candidate: in") for n in outcome.notes), "not excused as the stack's doing"


@pytest.mark.usefixtures("two_shared_cores")
def test_waiting_while_the_stack_was_idle_is_still_the_runner() -> None:
    class Neighbour(SlowProxyDriver):
        def run(self, url: str, shape: LoadShape) -> RoundResult:
            return waited(super().run(url, shape), stack_cores=0.3)

    driver = Neighbour({HEAD: 10_000.0}, {HEAD: 0.3})
    g = compare_gate(driver, "rps > 10")
    g.measure(HEAD)
    (outcome,) = g.finish()
    assert outcome.status is Status.INVALID, "a driver that does not say what it fell short in spoils rps"
    assert len(driver.calls) == 4 * 3


@pytest.mark.usefixtures("two_shared_cores")
def test_a_pinned_or_cpu_bound_driver_is_never_excused() -> None:
    assert contention.starved_by_stack(waited(make_round(), 1.9), shared_cores=2)
    assert contention.starved_by_stack(waited(make_round(), 1.9, cpu_bound=True), shared_cores=2) is None
    assert contention.starved_by_stack(waited(make_round(), 1.9), shared_cores=None) is None
    assert contention.starved_by_stack(replace(waited(make_round(), 1.9), system=None), shared_cores=2) is None
    assert contention.shared_cores(SlowProxyDriver({}, {}, cpus="0")) is None
    assert contention.shared_cores(SlowProxyDriver({}, {})) == 2


def side(driver_cores: float, stack_cores: float | None) -> RoundResult:
    runner = RunnerState(
        cores=2,
        span_s=1.0,
        process_cores=1.0,
        interrupt_cores=0.0,
        steal_share=0.0,
        load_avg_1m=1.0,
        driver_cores=driver_cores,
        stack_cores=stack_cores,
    )
    return replace(make_round(), runner=runner)


@pytest.mark.parametrize(
    ("cpus", "sides", "runner_held", "expected"),
    [
        # pinned to core 0 beside stacks elsewhere: only the drivers count, 0.47 of 1 core
        ("0", [side(0.24, 0.5), side(0.23, 0.5)], True, None),
        ("0", [side(0.4, 0.0), side(0.4, 0.0)], True, "the sides' drivers used 0.80 of the 1 cores"),
        # unpinned: drivers and stacks of both sides, of every usable core
        (None, [side(0.2, 0.4), side(0.2, 0.4)], True, None),
        (None, [side(0.2, 2.0), side(0.2, 0.1)], True, "the sides' drivers and stacks used 2.50 of the"),
        (None, [side(0.1, None), side(0.1, 0.05)], True, "is unknown"),
        ("0", [side(0.1, 0.0), side(0.1, 0.0)], False, "a driver's own CPU was the limit"),
    ],
)
def test_sides_starve_each_other_only_where_their_own_load_held_the_drivers_cores(
    cpus: str | None, sides: list[RoundResult], runner_held: bool, expected: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(contention, "usable_cores", lambda: [0, 1])
    why = contention.starved_by_each_other(sides, [cpus] * len(sides), runner_held)
    assert why == expected if expected is None else (why is not None and expected in why), why
