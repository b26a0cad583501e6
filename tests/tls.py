"""Certificate authorities and server certificates the tests make, as the clouds' database services make
theirs (RDS: a certificate naming the endpoint; Cloud SQL's per-instance CA: one naming the instance in its
common name only)."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

KeyAndCertificate = tuple[ec.EllipticCurvePrivateKey, x509.Certificate]


def common_name(name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])


def google_name(name: str) -> x509.Name:
    """A subject as Cloud SQL writes it: each instance's CA and server certificate its own dnQualifier."""
    return x509.Name(
        [
            x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Google, Inc"),
            x509.NameAttribute(NameOID.COMMON_NAME, name),
            x509.NameAttribute(NameOID.DN_QUALIFIER, str(uuid.uuid4())),
        ]
    )


def _builder(
    subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePrivateKey
) -> x509.CertificateBuilder:
    now = dt.datetime.now(dt.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=2))
    )


def certificate_authority(subject: x509.Name) -> KeyAndCertificate:
    """A self-signed CA."""
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        _builder(subject, subject, key)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def server_certificate(
    ca: KeyAndCertificate, subject: x509.Name, dns_names: Sequence[str] = ()
) -> KeyAndCertificate:
    """A server certificate `ca` signs, naming `dns_names` in a subjectAltName (none: no such extension)."""
    key = ec.generate_private_key(ec.SECP256R1())
    builder = _builder(subject, ca[1].subject, key)
    if dns_names:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName(name) for name in dns_names]), critical=False
        )
    return key, builder.sign(ca[0], hashes.SHA256())


def pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
