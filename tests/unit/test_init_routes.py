"""``netperf init`` gates the routes a proxy's own config names (#41), not only ``/``: nginx
``location`` blocks, HAProxy path ACLs and ``use_backend`` rules, Envoy route matches. Exact and
prefix routes are gated (the interesting ones first: a cached location before a health check),
regex routes are named for the user to choose a path."""

from __future__ import annotations

import ast
from pathlib import Path

from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.starter import render
from pytest_netperf.starter.routes import choose_routes, envoy, haproxy, nginx
from pytest_netperf.starter.survey import classify

NGINX = r"""
# edge: a cache in front of the app
proxy_cache_path /var/cache/nginx keys_zone=edge:10m;
upstream app { server app:8080; keepalive 16; }
server {
    listen 80 default_server;
    server_name _;
    location / { proxy_pass http://app; }
    location = /healthz { access_log off; return 200 "ok {fine}"; }
    location /cache-me {
        proxy_cache edge;
        proxy_pass http://app;
    }
    location ~ \.php$ { return 403; }
    location ^~ /static/ {
        location /static/img/ { expires 1d; }
    }
    location @fallback { proxy_pass http://app; }
    location /old { return 301 /new; }
}
server {
    listen 8080;
    location /admin/ { proxy_pass http://app; }
}
"""


def test_nginx_locations_are_read_with_their_kind_port_and_traits() -> None:
    routes = nginx.routes(NGINX, "edge.conf")
    by_path = {r.written: r for r in routes}
    assert [r.written for r in routes] == [
        "location /",
        "location = /healthz",
        "location /cache-me",
        "location ~ \\.php$",
        "location ^~ /static/",
        "location /static/img/",
        "location /old",
        "location /admin/",
    ]
    assert (by_path["location = /healthz"].match, by_path["location = /healthz"].path) == ("exact", "/healthz")
    assert by_path["location /cache-me"].traits == ("cached",)
    assert by_path["location ~ \\.php$"].match == "regex" and not by_path["location ~ \\.php$"].gateable
    assert by_path["location /old"].traits == ("redirect",)
    assert by_path["location /admin/"].port == 8080 and by_path["location /"].port == 80
    assert by_path["location /cache-me"].source == "edge.conf:10"


def test_the_interesting_routes_of_the_gated_port_are_chosen_and_the_rest_named() -> None:
    gated, others = choose_routes(nginx.routes(NGINX, "edge.conf"), port=80)
    assert [r.path for r in gated] == ["/", "/cache-me", "/static/"]
    assert [r.written for r in others] == [
        "location /static/img/",
        "location = /healthz",
        "location /old",
        "location ~ \\.php$",
    ]


def test_a_catch_all_that_only_answers_404_is_not_gated() -> None:
    config = "server { listen 80; location /api/ { proxy_pass http://a; } location / { return 404; } }"
    gated, others = choose_routes(nginx.routes(config, "e.conf"), port=80)
    assert [r.path for r in gated] == ["/api/"]
    assert [r.written for r in others] == ["location /"]


def test_nginx_server_names_become_the_host_where_a_port_has_several_servers() -> None:
    config = """
    server { listen 80; server_name api.example.com; location /v1/ { proxy_pass http://a; } }
    server { listen 80; server_name shop.example.com *.shop.example.com; location / { proxy_pass http://b; } }
    """
    routes = nginx.routes(config, "e.conf")
    assert [(r.path, r.host) for r in routes] == [("/v1/", "api.example.com"), ("/", "shop.example.com")]


HAPROXY = """
global
    maxconn 1000
frontend web
    bind *:80
    bind *:443 ssl crt /etc/ssl/site.pem
    acl is_api path_beg /api /v2
    acl is_img path_end .png
    acl is_exact path /login
    acl is_re path_reg ^/u/[0-9]+$
    http-request redirect location /new if { path_beg /old }
    use_backend api if is_api
    use_backend auth if is_exact
    default_backend app
backend app
    server a app:8080
"""


def test_haproxy_path_acls_and_inline_conditions_are_routes() -> None:
    routes = haproxy.routes(HAPROXY, "haproxy.cfg")
    assert [(r.written, r.match, r.path, r.port) for r in routes] == [
        ("acl is_api path_beg /api", "prefix", "/api", 80),
        ("acl is_api path_beg /v2", "prefix", "/v2", 80),
        ("acl is_img path_end .png", "suffix", ".png", 80),
        ("acl is_exact path /login", "exact", "/login", 80),
        ("acl is_re path_reg ^/u/[0-9]+$", "regex", "^/u/[0-9]+$", 80),
        ("{ path_beg /old }", "prefix", "/old", 80),
        ("default_backend app", "prefix", "/", 80),
    ]
    assert routes[5].traits == ("redirect",)
    gated, _ = choose_routes(routes, port=80)
    assert [r.path for r in gated] == ["/", "/api", "/v2"]


ENVOY = """
static_resources:
  listeners:
  - address: { socket_address: { address: 0.0.0.0, port_value: 10000 } }
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          route_config:
            virtual_hosts:
            - name: shop
              domains: ["shop.example", "shop.example:10000"]
              routes:
              - match: { prefix: "/service/1" }
                route: { cluster: s1 }
              - match: { path: "/health" }
                direct_response: { status: 200 }
              - match: { safe_regex: { regex: "/u/[0-9]+" } }
                route: { cluster: s1 }
            - name: rest
              domains: ["*"]
              routes:
              - match: { prefix: "/" }
                redirect: { path_redirect: "/service/1" }
"""


def test_envoy_route_matches_with_their_virtual_host_and_listener_port() -> None:
    routes = envoy.routes(ENVOY, "envoy.yaml")
    assert [(r.written, r.match, r.path, r.host, r.port) for r in routes] == [
        ("prefix: /service/1", "prefix", "/service/1", "shop.example", 10000),
        ("path: /health", "exact", "/health", "shop.example", 10000),
        ("safe_regex: /u/[0-9]+", "regex", "/u/[0-9]+", "shop.example", 10000),
        ("prefix: /", "prefix", "/", None, 10000),
    ]
    assert routes[3].traits == ("redirect",)
    gated, _ = choose_routes(routes, port=10000)
    assert [r.path for r in gated] == ["/service/1"]
    assert envoy.routes("not: [yaml", "bad.yaml") == []


def test_init_writes_parametrized_gates_for_the_routes_of_a_mounted_nginx_config(tmp_path: Path) -> None:
    (tmp_path / "nginx").mkdir()
    (tmp_path / "nginx" / "default.conf").write_text(NGINX)
    config = {
        "services": {
            "edge": {
                "image": "nginx:1.27",
                "ports": ["8080:80"],
                "volumes": [f"{tmp_path}/nginx/default.conf:/etc/nginx/conf.d/default.conf:ro"],
            }
        }
    }
    stack = classify(config, tmp_path / "compose.yml")
    text = render.test_module(render.StarterPlan(survey=stack, compose_path="compose.yml"))
    ast.parse(text)
    assert 'pytest.param("/cache-me", None, id="/cache-me")' in text
    assert "EDGE_ROUTES = [" in text and '@pytest.mark.parametrize(("path", "host"), EDGE_ROUTES)' in text
    assert 'stack.endpoint("edge", port=80, path=path, host=host), connections=32' in text
    assert "location = /healthz" in text and "location ~ \\.php$ (regex" in text
    # the counted cost gate runs once, on the first route
    assert 'stack.endpoint("edge", port=80, path="/")' in text
    for line in text.splitlines():
        if line.startswith("@pytest.mark.netperf(") and line.endswith(")"):
            for budget in ast.literal_eval(line.removeprefix("@pytest.mark.netperf")):
                parse_budget(budget)
