"""Reading callgrind's output with call stacks (``--separate-callers``): synthetic files with
known answers."""

from __future__ import annotations

import pytest

from pytest_netperf.runtime.callgrind_output import by_leaf, callgrind_profile, merge_callgrind
from pytest_netperf.runtime.trace_output import TraceOutputError, valgrind_problems

#: nginx's worker: main -> loop -> handler, with name compression, a call's inclusive cost
#: (not self cost), relative positions, an inlined file and code without symbols.
WORKER = """# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 9
cmd:  /usr/sbin/nginx -g daemon off;
part: 1

positions: line
events: Ir
summary: 1000

ob=(1) /usr/sbin/nginx
fl=(1) src/core/nginx.c
fn=(1) main
10 100
+2 50
cfl=(2) src/event/ngx_event.c
cfn=(2) ngx_process_events'main
calls=1 20
* 700

fl=(2)
fn=(2)
20 30
cfn=(3) ngx_http_handler'ngx_process_events'main
calls=3 40
20 500

fn=(3)
40 200
fi=(3) src/http/ngx_http.h
-1 100
fe=(1)
*
cob=(2) /usr/lib/x86_64-linux-gnu/libpcre2-8.so.0.11.2
cfn=(4) pcre2_match_8'ngx_http_handler'ngx_process_events'main
calls=1 0
0 170

ob=(2)
fl=(4) ???
fn=(4)
0 120
cfn=(5) 0x0000000000012340'pcre2_match_8'ngx_http_handler'ngx_process_events
calls=2 0
0 50

fn=(5)
0 50

totals: 1000
"""


def test_stacks_are_the_self_cost_of_each_calling_context_rooted_at_the_program() -> None:
    profile = callgrind_profile(WORKER)
    assert profile.total == 1000
    assert profile.stacks == {
        "nginx;main": 150.0,
        "nginx;main;ngx_process_events": 30.0,
        "nginx;main;ngx_process_events;ngx_http_handler": 300.0,
        "nginx;main;ngx_process_events;ngx_http_handler;pcre2_match_8": 120.0,
        # unnamed code: by its object (its file is unknown), its truncated context kept as it is
        "nginx;ngx_process_events;ngx_http_handler;pcre2_match_8;??? [libpcre2-8.so.0.11.2]": 50.0,
    }
    assert sum(profile.stacks.values()) == 650  # the rest of the total: the processes' other files


def test_functions_are_the_stacks_summed_by_leaf() -> None:
    functions = callgrind_profile(WORKER).by_leaf()
    assert functions["ngx_http_handler"] == 300
    assert functions["??? [libpcre2-8.so.0.11.2]"] == 50
    assert by_leaf({"a;b": 1.0, "c;b": 2.0, "b": 4.0, "a": 8.0}) == {"b": 7.0, "a": 8.0}


def test_unnamed_code_is_named_by_its_file_else_its_object_else_the_program() -> None:
    text = """cmd: /usr/sbin/haproxy -f /x.cfg
events: Ir
ob=(1) ???
fl=(1) ???
fn=(1) 0x0000000000401000
0 5
fl=(2) src/mux_h1.c
fn=(2) 0x0000000000402000'0x0000000000401000
0 7
ob=(3) /usr/lib/libssl.so.3
fl=(1)
fn=(3) ???'0x0000000000402000
0 11
summary: 23
"""
    assert callgrind_profile(text).stacks == {
        "haproxy;??? [haproxy]": 5.0,
        # a caller is named where it was a leaf itself
        "haproxy;??? [haproxy];??? [src/mux_h1.c]": 7.0,
        "haproxy;??? [src/mux_h1.c];??? [libssl.so.3]": 11.0,
    }


def test_the_instruction_column_is_read_when_there_are_more_events_and_positions() -> None:
    text = """cmd: envoy
positions: instr line
events: Dr Ir Dw
fn=(1) main
0x10 3 1 40 2
0x14 4 1 2
summary: 9 42 2
"""
    profile = callgrind_profile(text)
    assert profile.total == 42
    assert profile.stacks == {"envoy;main": 42.0}


def test_a_semicolon_in_a_name_does_not_split_a_frame() -> None:
    text = "cmd: app\nevents: Ir\nfn=(1) f<int; 8>\n0 3\ntotals: 3\n"
    assert callgrind_profile(text).stacks == {"app;f<int: 8>": 3.0}


def test_a_file_without_totals_is_an_error_naming_it() -> None:
    with pytest.raises(TraceOutputError, match=r"callgrind\.9: .*no summary or totals"):
        merge_callgrind({"callgrind.9": "events: Ir\nfn=main\n1 2\n"})


def test_an_id_used_before_it_is_named_is_an_error() -> None:
    with pytest.raises(TraceOutputError, match=r"fn=\(7\) before naming it"):
        callgrind_profile("events: Ir\nfn=(7)\n0 1\nsummary: 1\n")


def test_master_and_workers_are_summed() -> None:
    idle = "cmd: nginx\nevents: Ir\nsummary: 0\n"
    total, stacks, processes = merge_callgrind({"callgrind.9": WORKER, "callgrind.7": WORKER, "callgrind.8": idle})
    assert (total, processes) == (2000, 2)
    assert stacks["nginx;main;ngx_process_events;ngx_http_handler"] == 600


def test_callgrinds_unopened_output_is_a_problem() -> None:
    log = "==9== Error: can not open cache simulation output file `/tmp/netperf-cost/callgrind.9'\n"
    assert valgrind_problems({"valgrind.9.log": log}) == [f"valgrind.9.log: {log.strip()}"]


def test_an_inlined_file_names_code_only_until_the_next_function() -> None:
    text = """cmd: nginx
events: Ir
ob=(1) /usr/sbin/nginx
fl=(1) src/core/ngx_palloc.c
fn=(1) 0x0000000000401000
fi=(2) src/core/ngx_string.h
0 4
fn=(2) 0x0000000000402000
0 6
totals: 10
"""
    assert callgrind_profile(text).stacks == {
        "nginx;??? [src/core/ngx_string.h]": 4.0,
        "nginx;??? [src/core/ngx_palloc.c]": 6.0,
    }
