"""The iperf3 driver's pure parts: argv, and parsing recorded client documents (iperf 3.12)."""

import json
from pathlib import Path

import pytest

from pytest_netperf.budget import metrics
from pytest_netperf.drivers import driver_for_target
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.drivers.iperf3 import Iperf3Error, build_argv, parse_target, round_from_json
from pytest_netperf.errors import DriverError, NetperfError
from pytest_netperf.measure.validity import samples_problem
from pytest_netperf.results.model import RoundResult

DATA = Path(__file__).parent / "data" / "iperf3"


def recorded(name):
    return json.loads((DATA / f"{name}.json").read_text())


def test_tcp_document_gives_throughput_and_no_udp_metrics():
    r = round_from_json(recorded("tcp_p4"), "iperf3://127.0.0.1:15201")
    doc = recorded("tcp_p4")["end"]
    assert r.driver == "iperf3" and r.mode == "closed"
    assert r.transport.protocol == "tcp" and r.transport.streams == 4
    assert metrics.metric_value(r, "gbps") == pytest.approx(doc["sum_received"]["bits_per_second"] / 1e9)
    assert r.transport.retransmits == doc["sum_sent"]["retransmits"]
    assert r.client.cpu_util == pytest.approx(doc["cpu_utilization_percent"]["host_total"] / 100)
    assert not r.client.saturated, "a TCP stream is bounded by something; that is what it measures"
    for udp_only in ("loss", "jitter"):
        with pytest.raises(metrics.MetricUnavailable, match="UDP"):
            metrics.metric_value(r, udp_only)
    with pytest.raises(metrics.MetricUnavailable, match="interface counters"):
        metrics.metric_value(r, "pps")
    assert samples_problem([r], "gbps") is None


def test_udp_document_gives_packet_rate_loss_and_jitter():
    doc = recorded("udp_16")
    r = round_from_json(doc, "iperf3://127.0.0.1:15201", requested_pps=50_000)
    received = doc["end"]["sum_received"]
    assert r.transport.payload_bytes == 16
    assert r.transport.packets_sent == doc["end"]["sum_sent"]["packets"]
    expected_pps = (received["packets"] - received["lost_packets"]) / received["seconds"]
    assert metrics.metric_value(r, "pps") == pytest.approx(expected_pps)
    sent = doc["end"]["sum_sent"]["packets"]
    assert metrics.metric_value(r, "loss") == pytest.approx(received["lost_packets"] / sent)
    assert metrics.metric_value(r, "jitter") == pytest.approx(received["jitter_ms"] * 1e6)
    assert r.client.achieved_ratio == pytest.approx(1.0, abs=0.01)
    assert not r.client.saturated


def test_udp_client_below_its_target_rate_is_saturated():
    """Recorded at -b 100M -l 16: the client reached about 293k of the 781k datagrams/s asked."""
    r = round_from_json(recorded("udp_16_100m"), "iperf3://127.0.0.1:15201", requested_pps=100e6 / 8 / 16)
    assert r.client.saturated
    assert "cannot push this rate" in r.client.saturation_reasons[0]
    assert r.client.achieved_ratio < 0.5


def test_error_document_is_a_driver_error_naming_it():
    with pytest.raises(DriverError, match="unable to connect to server: Connection refused"):
        round_from_json(recorded("refused"), "iperf3://127.0.0.1:15299")


@pytest.mark.parametrize(
    ("name", "part", "field", "message"),
    [
        ("tcp_p4", "sum_received", "bytes", "received no byte"),
        ("udp_16", "sum_sent", "packets", "sent no datagram"),
    ],
)
def test_a_round_that_moved_nothing_is_an_error_not_a_zero(name, part, field, message):
    """No verdict without data: 0 Gbit/s or 0 datagrams would be judged as a measured value."""
    doc = recorded(name)
    doc["end"][part][field] = 0
    with pytest.raises(DriverError, match=message):
        round_from_json(doc, "iperf3://h:5201", requested_pps=50_000)


def test_round_trips_through_dict():
    r = round_from_json(recorded("udp_16"), "iperf3://h:5201", requested_pps=50_000)
    again = RoundResult.from_dict(json.loads(json.dumps(r.to_dict())))
    assert metrics.metric_value(again, "pps") == metrics.metric_value(r, "pps") and again.transport == r.transport


def test_argv_for_tcp_and_udp():
    tcp = build_argv("iperf3://10.0.0.2:5201", LoadShape(connections=4, duration_s=5, warmup_s=1))
    assert tcp[:5] == ["iperf3", "--client", "10.0.0.2", "--port", "5201"]
    assert tcp[tcp.index("--parallel") + 1] == "4" and "--udp" not in tcp
    udp = build_argv("iperf3://h", LoadShape(protocol="udp", payload=16, rate=50_000, duration_s=2.5, warmup_s=0.5))
    assert udp[udp.index("--bitrate") + 1] == str(50_000 * 16 * 8)
    assert udp[udp.index("--length") + 1] == "16"
    assert udp[udp.index("--time") + 1] == "3", "iperf3 reads whole seconds: rounded up"
    assert udp[udp.index("--omit") + 1] == "1"


@pytest.mark.parametrize(
    ("url", "shape", "message"),
    [
        ("iperf3://h", LoadShape(protocol="udp"), "needs rate="),
        ("iperf3://h", LoadShape(protocol="udp", rate=10, payload=65536), "at most 65507"),
        ("iperf3://h", LoadShape(rate=10), "rate= is for UDP"),
        ("iperf3://h", LoadShape(protocol="sctp"), "tcp or udp"),
        ("iperf3://h/x", LoadShape(), "no path"),
        ("http://h:5201", LoadShape(), "expected iperf3://"),
    ],
)
def test_bad_input_names_the_problem(url, shape, message):
    with pytest.raises(Iperf3Error, match=message):
        build_argv(url, shape)


def test_default_port():
    assert parse_target("iperf3://server") == ("server", 5201)


def test_scheme_picks_the_driver():
    assert driver_for_target("iperf3://h:5201", None, "rust") == "iperf3"
    assert driver_for_target("tcp://h:7007", None, "rust") == "rust"
    assert driver_for_target("http://h/", None, "locust") == "locust"
    with pytest.raises(NetperfError, match="measured by the rust driver"):
        driver_for_target("tcp://h:7007", "locust", None)
    with pytest.raises(NetperfError, match="iperf3://host:port targets only"):
        driver_for_target("http://h/", "iperf3", None)


def test_loss_is_pooled_over_the_datagrams_of_every_round():
    """One round losing 5% among three clean ones of the same size: 1.25% overall, within 2%."""
    from pytest_netperf.budget.grammar import Budget
    from pytest_netperf.measure.rounds import pooled_weights as _weights
    from pytest_netperf.verdict import stats

    rounds = []
    for lost in (0, 0, 5_000, 0):
        doc = recorded("udp_16")
        doc["end"]["sum_sent"]["packets"] = 100_000
        doc["end"]["sum_received"]["packets"] = 100_000
        doc["end"]["sum_received"]["lost_packets"] = lost
        rounds.append(round_from_json(doc, "iperf3://h", requested_pps=50_000))
    values = [metrics.metric_value(r, "loss") for r in rounds]
    verdict = stats.evaluate(Budget.parse("loss <= 2%"), values, attempts=_weights("loss", rounds))
    assert verdict.estimate == pytest.approx(0.0125)
    assert verdict.status.value == "PASS"
    assert stats.evaluate(Budget.parse("loss <= 1%"), values, attempts=_weights("loss", rounds)).status.value == "FAIL"
