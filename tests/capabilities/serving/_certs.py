"""A throwaway certificate authority and a server certificate it signed, made with ``cryptography``.

The leaf names ``localhost``, ``127.0.0.1`` and ``::1``; a client trusts it through
:attr:`TestPKI.client_context`, which holds only the CA (so a verified connection proves the chain).
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

__all__ = ["TestPKI", "make_pki", "write_key"]


@dataclass(frozen=True)
class TestPKI:
    """Paths of the CA certificate, the server certificate and its key."""

    __test__ = False  # not a test class, whatever its name

    ca_cert: Path
    cert: Path
    key: Path

    def client_context(self) -> ssl.SSLContext:
        """A client context trusting only this CA, hostname checked."""
        return ssl.create_default_context(cafile=str(self.ca_cert))


def write_key(path: Path, key: ec.EllipticCurvePrivateKey, *, passphrase: bytes | None = None) -> Path:
    """Write ``key`` as PEM (PKCS#8), encrypted with ``passphrase`` when given, mode 0600."""
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(passphrase) if passphrase else serialization.NoEncryption()
    )
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    path.write_bytes(pem)
    path.chmod(0o600)
    return path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def make_pki(folder: Path) -> TestPKI:
    """A CA and a server certificate for the loopback names, written under ``folder``."""
    now = datetime.datetime.now(datetime.UTC)
    valid = (now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=1))
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("roundtable test CA"))
        .issuer_name(_name("roundtable test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid[0])
        .not_valid_after(valid[1])
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                key_encipherment=False, data_encipherment=False, key_agreement=False,
                encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    key = ec.generate_private_key(ec.SECP256R1())
    names = [
        x509.DNSName("localhost"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        x509.IPAddress(ipaddress.ip_address("::1")),
    ]
    leaf = (
        x509.CertificateBuilder()
        .subject_name(_name("localhost"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid[0])
        .not_valid_after(valid[1])
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    folder.mkdir(parents=True, exist_ok=True)
    ca_path, cert_path = folder / "ca.pem", folder / "server.pem"
    ca_path.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_path.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    return TestPKI(ca_cert=ca_path, cert=cert_path, key=write_key(folder / "server.key", key))
