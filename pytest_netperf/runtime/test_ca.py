"""A test certificate authority for one session, minted with trustme: the CA, a server and a
client certificate as PEM files in a temporary folder, removed when the CA is closed.

The server certificate names ``localhost``, ``127.0.0.1`` and ``::1`` (and any further names
given); the client certificate is for mutual TLS. Keys are ECDSA P-256 by default, RSA-2048
with ``key_type="rsa"``. No pytest imports: the plugin, tests and benchmarks share it.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Optional

import trustme

#: Names every server certificate carries.
DEFAULT_SERVER_NAMES = ("localhost", "127.0.0.1", "::1")
_KEY_TYPES = {"ecdsa": trustme.KeyType.ECDSA, "rsa": trustme.KeyType.RSA}


@dataclass(frozen=True)
class TlsFiles:
    """Paths of the PEM files of a :class:`SessionCA`."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


class SessionCA:
    """A throw-away CA with one server and one client certificate on disk.

    Use as a context manager, or call :meth:`close`; ``folder`` (default: a new temporary
    folder, removed on close) is where the files go.
    """

    def __init__(
        self,
        server_names: tuple[str, ...] = (),
        key_type: str = "ecdsa",
        folder: Optional[Path] = None,
    ) -> None:
        if key_type not in _KEY_TYPES:
            raise ValueError(f"key_type {key_type!r}: expected one of {', '.join(sorted(_KEY_TYPES))}")
        kind = _KEY_TYPES[key_type]
        self._owned = folder is None
        self.folder = Path(tempfile.mkdtemp(prefix="netperf-test-ca-")) if folder is None else Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        names = tuple(dict.fromkeys(DEFAULT_SERVER_NAMES + tuple(server_names)))
        ca = trustme.CA(organization_name="pytest-netperf test CA", key_type=kind)
        server = ca.issue_cert(*names, key_type=kind)
        client = ca.issue_cert("client.netperf.test", key_type=kind)
        self.files = TlsFiles(
            ca=self.folder / "ca.pem",
            server_cert=self.folder / "server.pem",
            server_key=self.folder / "server.key",
            client_cert=self.folder / "client.pem",
            client_key=self.folder / "client.key",
        )
        ca.cert_pem.write_to_path(str(self.files.ca))
        server.cert_chain_pems[0].write_to_path(str(self.files.server_cert))
        for extra in server.cert_chain_pems[1:]:
            extra.write_to_path(str(self.files.server_cert), append=True)
        server.private_key_pem.write_to_path(str(self.files.server_key))
        client.cert_chain_pems[0].write_to_path(str(self.files.client_cert))
        client.private_key_pem.write_to_path(str(self.files.client_key))
        for key in (self.files.server_key, self.files.client_key):
            key.chmod(0o600)

    def echo_args(self, mutual: bool = False) -> list[str]:
        """``netperf-driver echo`` options serving HTTPS with the server certificate (and
        requiring client certificates of this CA when ``mutual``)."""
        args = ["--tls-cert", str(self.files.server_cert), "--tls-key", str(self.files.server_key)]
        if mutual:
            args += ["--tls-client-ca", str(self.files.ca)]
        return args

    def close(self) -> None:
        """Remove the files (the whole folder when this CA made it)."""
        if self._owned:
            shutil.rmtree(self.folder, ignore_errors=True)
        else:
            for path in vars(self.files).values():
                Path(path).unlink(missing_ok=True)

    def __enter__(self) -> SessionCA:
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()
