"""The endpoint contract (:mod:`pytest_netperf.measure.endpoint`): what every runtime hands
the gate, and what reaches the base twin."""

from __future__ import annotations

import pytest

from pytest_netperf.measure.endpoint import ENDPOINT_MEMBERS
from pytest_netperf.measure.gate import checked_target
from pytest_netperf.measure.targets import with_query
from pytest_netperf.runtime.endpoints import Endpoint

HEAD, BASE = "http://10.0.0.2:8080/api", "http://10.0.1.2:8080/api?tenant=a"


def test_with_query_reaches_the_base_twin() -> None:
    head = Endpoint(HEAD, None, "host", host_header="api.example.com", base=Endpoint(BASE, None, "host"))
    sized = with_query(head, size=16384)
    assert sized.url == "http://10.0.0.2:8080/api?size=16384"
    assert sized.base is not None and sized.base.url == "http://10.0.1.2:8080/api?tenant=a&size=16384"
    assert sized.host_header == "api.example.com" and sized.where == "host"
    assert head.url == HEAD, "the original endpoint is left as it was"


def test_with_query_on_a_plain_url_and_an_endpoint_without_a_twin() -> None:
    assert with_query("http://127.0.0.1:9000", delay="1ms") == "http://127.0.0.1:9000/?delay=1ms"
    alone = with_query(Endpoint(HEAD, None, "host", base_note="new at head"), depth=3)
    assert alone.base is None and alone.base_note == "new at head" and alone.url.endswith("?depth=3")


def test_the_runtime_endpoint_has_every_member_of_the_contract() -> None:
    endpoint = Endpoint(HEAD, None, "host")
    assert all(hasattr(endpoint, name) for name in ENDPOINT_MEMBERS)
    assert checked_target(endpoint) is endpoint and checked_target(HEAD) == HEAD


def test_something_else_is_a_type_error_naming_what_it_lacks() -> None:
    class UrlOnly:
        url = HEAD

    with pytest.raises(TypeError, match=r"a netperf target is a URL string or an endpoint .* it has no runner"):
        checked_target(UrlOnly())
