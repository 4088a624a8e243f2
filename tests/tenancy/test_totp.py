"""RFC 6238 / RFC 4226 codes against the RFCs' own test vectors, and sealed seeds."""

import hashlib
from urllib.parse import parse_qs, urlparse

import pytest

from apps.tenancy import totp

RFC4226_KEY = b"12345678901234567890"
RFC4226_VALUES = [
    "755224",
    "287082",
    "359152",
    "969429",
    "338314",
    "254676",
    "287922",
    "162583",
    "399871",
    "520489",
]

# RFC 6238 appendix B: 8 digits, T0 = 0, X = 30, one key per hash function.
RFC6238_KEYS = {
    hashlib.sha1: b"12345678901234567890",
    hashlib.sha256: b"12345678901234567890123456789012",
    hashlib.sha512: b"1234567890123456789012345678901234567890123456789012345678901234",
}
RFC6238_VECTORS = [
    (59, {"sha1": "94287082", "sha256": "46119246", "sha512": "90693936"}),
    (1111111109, {"sha1": "07081804", "sha256": "68084774", "sha512": "25091201"}),
    (1111111111, {"sha1": "14050471", "sha256": "67062674", "sha512": "99943326"}),
    (1234567890, {"sha1": "89005924", "sha256": "91819424", "sha512": "93441116"}),
    (2000000000, {"sha1": "69279037", "sha256": "90698825", "sha512": "38618901"}),
    (20000000000, {"sha1": "65353130", "sha256": "77737706", "sha512": "47863826"}),
]


def test_hotp_matches_rfc_4226():
    assert [totp.hotp(RFC4226_KEY, counter) for counter in range(10)] == RFC4226_VALUES


@pytest.mark.parametrize("unix_time,expected", RFC6238_VECTORS)
def test_totp_matches_rfc_6238(unix_time, expected):
    for digest, key in RFC6238_KEYS.items():
        name = digest().name
        assert totp.totp(key, unix_time, digits=8, digest=digest) == expected[name], name


def test_a_code_is_accepted_one_step_either_side_and_not_again():
    key = totp.new_seed()
    now = 1_800_000_015.0
    step = totp.time_step(now)
    for offset in (-1, 0, 1):
        code = totp.hotp(key, step + offset)
        assert totp.matching_step(key, code, now, after=None) == step + offset
    assert totp.matching_step(key, totp.hotp(key, step + 2), now, after=None) is None
    assert totp.matching_step(key, totp.hotp(key, step - 2), now, after=None) is None
    # a step already used, or earlier, is not taken again
    assert totp.matching_step(key, totp.hotp(key, step), now, after=step) is None
    assert totp.matching_step(key, totp.hotp(key, step + 1), now, after=step) == step + 1
    assert totp.matching_step(key, "12 34", now, after=None) is None
    assert totp.matching_step(key, "abcdef", now, after=None) is None


def test_the_provisioning_uri_is_what_authenticator_apps_read():
    key = RFC4226_KEY
    uri = urlparse(totp.provisioning_uri(key, account="ada"))
    assert (uri.scheme, uri.netloc, uri.path) == ("otpauth", "totp", "/Steward:ada")
    query = {k: v[0] for k, v in parse_qs(uri.query).items()}
    assert query == {
        "secret": "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ",
        "issuer": "Steward",
        "algorithm": "SHA1",
        "digits": "6",
        "period": "30",
    }


def test_seeds_are_sealed_under_a_key_derived_from_the_secret_key(settings):
    seed = totp.new_seed()
    sealed = totp.seal(seed)
    assert seed not in sealed.encode()
    assert totp.seed_text(seed) not in sealed
    assert totp.unseal(sealed) == seed
    # after a rotation, the old key as a fallback still opens it
    old_key = settings.SECRET_KEY
    settings.SECRET_KEY = "another-secret-key-" + "k" * 40
    with pytest.raises(totp.SeedUnreadable):
        totp.unseal(sealed)
    settings.SECRET_KEY_FALLBACKS = [old_key]
    assert totp.unseal(sealed) == seed
