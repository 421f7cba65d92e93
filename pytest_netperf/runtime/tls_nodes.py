"""Certificates for a topology's TLS listeners, minted when it comes up, and what a driver
needs to trust them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from pytest_netperf.runtime.test_ca import SessionCA
from pytest_netperf.tls_options import TlsOptions
from pytest_netperf.topology.model import Target, Topology

__all__ = ["trust_for", "with_certificates"]


def with_certificates(topology: Topology, ca: Callable[[], SessionCA]) -> Topology:
    """``topology`` with a server certificate of ``ca()`` for every TLS listener that has none.

    Each certificate names the node, its aliases and its pod's DNS name (the SNI a driver
    sends), of the key type the node's ``params["tls"]`` asks for. A topology without TLS
    listeners is returned as it is and ``ca`` is not called.
    """
    if not any(node.tls is not None and node.tls.certificate is None for node in topology.nodes):
        return topology
    authority = ca()
    nodes = []
    for node in topology.nodes:
        tls = node.tls
        if tls is not None and tls.certificate is None:
            names = tuple(dict.fromkeys((node.name, *node.aliases, topology.dns_name(node.name))))
            certificate = authority.issue_server(names, tls.key_type)
            node = replace(node, params={**node.params, "tls": tls.with_certificate(certificate)})
        nodes.append(node)
    return replace(topology, nodes=tuple(nodes))


def trust_for(topology: Topology, target: Target) -> TlsOptions | None:
    """The driver's TLS options for an ``https`` target: trust the CA that signed its node's
    certificate, and present a client certificate of that CA to a mutual listener (None for
    other schemes, or before a certificate was minted)."""
    if target.scheme != "https":
        return None
    tls = topology.node(target.node).tls
    if tls is None or tls.certificate is None:
        return None
    cert, key = (tls.certificate.client_files or (None, None)) if tls.mutual else (None, None)
    return TlsOptions(ca=tls.certificate.ca_file, cert=cert, key=key)
