"""A test certificate authority for one session, minted with trustme: the CA, a server and a
client certificate as PEM files in a temporary folder, removed when the CA is closed.

The server certificate names ``localhost``, ``127.0.0.1`` and ``::1`` (and any further names
given); the client certificate is for mutual TLS. Keys are ECDSA P-256 by default, RSA-2048
with ``key_type="rsa"``. :meth:`SessionCA.issue_server` mints further server certificates
for the topologies' TLS listeners, of any key type of
:data:`~pytest_netperf.topology.tls.KEY_TYPES` (RSA-4096 too, which trustme does not make:
those are signed with ``cryptography``). No pytest imports: the plugin, tests and benchmarks
share it.
"""

from __future__ import annotations

import datetime
import ipaddress
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Optional, Union

import trustme
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from pytest_netperf.topology.tls import KEY_TYPES, ServerCertificate

#: Names every server certificate carries.
DEFAULT_SERVER_NAMES = ("localhost", "127.0.0.1", "::1")
_KEY_TYPES = {"ecdsa": trustme.KeyType.ECDSA, "rsa": trustme.KeyType.RSA}
#: How long a minted certificate is valid (a session is far shorter).
_VALIDITY = datetime.timedelta(days=2)
_PrivateKey = Union[ec.EllipticCurvePrivateKey, rsa.RSAPrivateKey]


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
        self._ca = ca
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

    def issue_server(self, names: tuple[str, ...], key_type: str = "ecdsa-p256") -> ServerCertificate:
        """A further server certificate of this CA for ``names`` (DNS names or IP addresses,
        beside ``localhost``, ``127.0.0.1`` and ``::1``) with a new key of ``key_type``
        (``ecdsa-p256``, ``rsa-2048`` or ``rsa-4096``); its ``ca_file`` is this CA's bundle."""
        if key_type not in KEY_TYPES:
            raise ValueError(f"key_type {key_type!r}: expected one of {', '.join(KEY_TYPES)}")
        all_names = tuple(dict.fromkeys((*names, *DEFAULT_SERVER_NAMES)))
        key = _new_key(key_type)
        ca_cert = x509.load_pem_x509_certificate(self._ca.cert_pem.bytes())
        ca_key = serialization.load_pem_private_key(self._ca.private_key_pem.bytes(), password=None)
        if not isinstance(ca_key, (ec.EllipticCurvePrivateKey, rsa.RSAPrivateKey)):
            raise TypeError(f"unexpected CA key type {type(ca_key).__name__}")
        now = datetime.datetime.now(datetime.timezone.utc)
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, all_names[0])]))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.SubjectAlternativeName([_general_name(n) for n in all_names]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(_key_usage(key_type), critical=True)
            # client authentication too: an Envoy sidecar presents its certificate to its peers
            .add_extension(
                x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                critical=False,
            )
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        )
        certificate = builder.sign(ca_key, hashes.SHA256())
        key_pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        return ServerCertificate(
            chain_pem=certificate.public_bytes(serialization.Encoding.PEM).decode(),
            key_pem=key_pem.decode(),
            key_type=key_type,
            names=all_names,
            ca_file=str(self.files.ca),
            ca_pem=self._ca.cert_pem.bytes().decode(),
            client_files=(str(self.files.client_cert), str(self.files.client_key)),
        )

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


def _new_key(key_type: str) -> _PrivateKey:
    if key_type == "ecdsa-p256":
        return ec.generate_private_key(ec.SECP256R1())
    return rsa.generate_private_key(public_exponent=65537, key_size=int(key_type.removeprefix("rsa-")))


def _key_usage(key_type: str) -> x509.KeyUsage:
    """Digital signature for every key; RSA keys also key encipherment (TLS 1.2 RSA key exchange)."""
    rsa_key = key_type.startswith("rsa-")
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=rsa_key,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=False,
        crl_sign=False,
        encipher_only=False,
        decipher_only=False,
    )


def _general_name(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)
