"""Time-based one-time passwords (RFC 6238 over RFC 4226) and the sealing of their seeds.

Steward keeps no secret in clear in its database. A TOTP seed must be read back to check
codes, so it is stored sealed with Fernet under a key derived from STEWARD_SECRET_KEY
(and, to read seeds sealed before a key rotation, from SECRET_KEY_FALLBACKS).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import struct
from dataclasses import dataclass
from urllib.parse import quote, urlencode

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

DIGITS = 6
STEP_SECONDS = 30
# Codes of one step before and after now are accepted: clocks drift and people type slowly.
DRIFT_STEPS = 1
SEED_BYTES = 20  # 160 bits, RFC 4226's recommendation for HMAC-SHA1
ISSUER = "Steward"


def hotp(key: bytes, counter: int, *, digits: int = DIGITS, digest=hashlib.sha1) -> str:
    """RFC 4226 HOTP value of `counter`, as a zero-padded string."""
    mac = hmac.new(key, struct.pack(">Q", counter), digest).digest()
    offset = mac[-1] & 0x0F
    value = struct.unpack(">I", mac[offset : offset + 4])[0] & 0x7FFFFFFF
    return str(value % 10**digits).zfill(digits)


def time_step(unix_time: float) -> int:
    return int(unix_time // STEP_SECONDS)


def totp(key: bytes, unix_time: float, *, digits: int = DIGITS, digest=hashlib.sha1) -> str:
    """RFC 6238 TOTP value at `unix_time` (T0 = 0, 30-second steps)."""
    return hotp(key, time_step(unix_time), digits=digits, digest=digest)


def matching_step(key: bytes, code: str, unix_time: float, *, after: int | None) -> int | None:
    """The time step whose code `code` is, within the drift allowed around `unix_time`,
    and later than step `after` (a code once used is not accepted again); else None."""
    code = normalize_code(code)
    if len(code) != DIGITS or not code.isdigit():
        return None
    now = time_step(unix_time)
    for step in range(now - DRIFT_STEPS, now + DRIFT_STEPS + 1):
        if (after is None or step > after) and hmac.compare_digest(hotp(key, step), code):
            return step
    return None


def normalize_code(code: str) -> str:
    return "".join(code.split()).replace("-", "").upper()


def new_seed() -> bytes:
    return secrets.token_bytes(SEED_BYTES)


def seed_text(seed: bytes) -> str:
    """The seed as authenticator apps take it typed in: base32, without padding."""
    return base64.b32encode(seed).decode().rstrip("=")


def provisioning_uri(seed: bytes, *, account: str) -> str:
    """The otpauth:// URI authenticator apps read (Google Authenticator's key URI format)."""
    label = quote(f"{ISSUER}:{account}", safe=":@")
    query = urlencode(
        {
            "secret": seed_text(seed),
            "issuer": ISSUER,
            "algorithm": "SHA1",
            "digits": DIGITS,
            "period": STEP_SECONDS,
        }
    )
    return f"otpauth://totp/{label}?{query}"


@dataclass(frozen=True)
class Enrolment:
    """What a person copies into their authenticator app: shown to them, never logged."""

    seed_text: str
    uri: str


def enrolment(seed: bytes, *, account: str) -> Enrolment:
    return Enrolment(seed_text=seed_text(seed), uri=provisioning_uri(seed, account=account))


def _fernet_key(secret_key: str) -> bytes:
    # A key of its own for this one purpose, so a leak elsewhere of something derived
    # from SECRET_KEY does not open the seeds.
    derived = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=None, info=b"steward totp seed v1"
    ).derive(secret_key.encode())
    return base64.urlsafe_b64encode(derived)


def _box() -> MultiFernet:
    keys = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
    return MultiFernet([Fernet(_fernet_key(key)) for key in keys])


def seal(seed: bytes) -> str:
    return _box().encrypt(seed).decode()


class SeedUnreadable(Exception):
    """The sealed seed was sealed under a key Steward no longer has."""


def unseal(sealed: str) -> bytes:
    try:
        return _box().decrypt(sealed.encode())
    except InvalidToken:
        raise SeedUnreadable from None
