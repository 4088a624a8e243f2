"""Who a caller is, as the last look-up found it, kept in Redis for a few seconds:
bearer tokens (with their service account and tenant), and for a person signed in to
the console their session, their own account and the memberships they hold (with each
tenant and its home region), and the tenants an operator's switcher offers.

Each look-up costs PostgreSQL a statement or a transaction of its own (tokens and
memberships are row-level security rows, read in the system scope), on every API
request and every console page. The cache answers with one Redis round trip instead,
shared by every web process.

What keeps it exact: every entry carries the *generation* it was read under, and
every change to a token, a service account, a tenant, a membership or a region
(revocation, rotation, a disabled account, a tenant's status, a role given or taken
away) increments the generation, inside the changing
transaction and again after it commits. A request reads the entry and the current
generation in one MGET, and uses the entry only when the two match, so a token
revoked in one process is refused by every other one at once. The order makes the
race harmless: the generation is read before PostgreSQL, so an entry written from a
read that still saw the token live carries the old generation and is never used.
Expiry is checked against the cached `expires_at` on every request, so it is exact
too; the TTL only bounds how long an unused entry stays in Redis.

A person's account and a session each have a generation of their own instead, which
every save or deletion of that account or session increments (a sign-in's new
`last_login`, a sign-out, a second factor reset), so one person's sign-in never makes
anyone else's entries stale. An account is kept without its password hash: the entry
carries the session hash Django checks every session against instead
(apps.tenancy.models.User), and the password itself is read from PostgreSQL should
anything ask for it. A session is kept under a digest of its key.

Sessions and accounts are read before the request's transaction opens (the scope
middleware asks who the caller is first), so an entry never holds what a transaction
later rolled back; the switcher's tenants, read while a page renders, are written once
the page's transaction commits.

A console page asks who is calling three times in a row: its session, the session's
person, then their memberships (or, for an operator, the tenants they may switch to).
A session's entry names its person, so within a request
(`reads_together`, which apps.tenancy.middleware.SignedInReadsMiddleware opens) the
session is read by one script that reads the person's entries and their generations
too, and the look-ups that follow take them from it, each once. The script reads keys
it was not given, as a single Redis allows (a Redis Cluster would refuse it).

When Redis does not answer, everything is looked up in PostgreSQL.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator
from contextvars import ContextVar
from datetime import datetime

from django.db import transaction

from apps.core.redis import REDIS_ERRORS, get_redis, script
from apps.tenancy.models import ApiToken, Membership, Region, ServiceAccount, Tenant, User

TTL_SECONDS = 10
GENERATION_KEY = "steward:auth:generation"
_MODELS = (ApiToken, ServiceAccount, Tenant, Membership, Region)
# A generation of one person's or one session's own outlives any entry written under it,
# so an entry read before a change never meets a generation that expired and started
# again from nothing.
_OWN_GENERATION_TTL_SECONDS = 6 * TTL_SECONDS


def _encode(value):
    # Full microseconds (DjangoJSONEncoder keeps milliseconds): the entry restores the
    # instances exactly as PostgreSQL gave them.
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _key(digest: str) -> str:
    return f"steward:auth:token:{digest}"


def _fields(instance) -> dict:
    return {
        field.attname: getattr(instance, field.attname)
        for field in type(instance)._meta.concrete_fields
    }


def _restore(model, values: dict):
    return model(
        **{
            field.attname: field.to_python(values[field.attname])
            for field in model._meta.concrete_fields
        }
    )


# Within `reads_together`: {(key, generation key): (entry, generation)} read with the
# session, each taken by the first look-up that asks for it.
_together: ContextVar[dict | None] = ContextVar("steward_auth_together", default=None)


@contextlib.contextmanager
def reads_together() -> Iterator[None]:
    """Within the block, reading a session reads its person's entries in the same round
    trip, for the look-ups that follow in the block."""
    token = _together.set({})
    try:
        yield
    finally:
        _together.reset(token)


def _forget_read_together() -> None:
    # A change in this request makes what was read with the session stale.
    together = _together.get()
    if together:
        together.clear()


def _read(key: str, generation_key: str = GENERATION_KEY) -> tuple[dict | None, bytes | None]:
    """The entry at `key` if it was written under the current generation, and that
    generation (None when Redis does not answer: then nothing is stored either)."""
    together = _together.get()
    read = together.pop((key, generation_key), None) if together else None
    if read is not None:
        return _current(*read)
    try:
        entry, generation = get_redis().mget([key, generation_key])
    except REDIS_ERRORS:
        return None, None
    return _current(entry, generation)


def _current(entry: bytes | None, generation: bytes | None) -> tuple[dict | None, bytes]:
    generation = generation or b"0"
    if entry is None:
        return None, generation
    cached = json.loads(entry)
    return (cached if cached["generation"] == generation.decode() else None), generation


def _write(key: str, generation: bytes | None, entry: dict) -> None:
    if generation is None:
        return
    entry = {"generation": generation.decode(), **entry}
    with contextlib.suppress(REDIS_ERRORS):
        get_redis().set(key, json.dumps(entry, default=_encode), ex=TTL_SECONDS)


def lookup(digest: str) -> tuple[ApiToken | None, bytes | None]:
    """The cached token (with its service account and tenant) and the generation read
    with it; (None, generation) on a miss. The generation is what `store` is given."""
    cached, generation = _read(_key(digest))
    if cached is None:
        return None, generation
    token = _restore(ApiToken, cached["token"])
    account = _restore(ServiceAccount, cached["account"])
    account.tenant = _restore(Tenant, cached["tenant"]) if cached["tenant"] else None
    token.service_account = account
    return token, generation


def store(token: ApiToken, generation: bytes | None) -> None:
    """Keep `token` as read under `generation` (from `lookup`, before PostgreSQL was)."""
    account = token.service_account
    entry = {
        "token": _fields(token),
        "account": _fields(account),
        "tenant": _fields(account.tenant) if account.tenant_id else None,
    }
    _write(_key(token.digest), generation, entry)


def _memberships_key(user_id) -> str:
    return f"{_MEMBERSHIPS_PREFIX}{user_id}"


def memberships_lookup(user_id) -> tuple[list[Membership] | None, bytes | None]:
    """The person's cached memberships (each with its tenant and the tenant's home
    region) and the generation read with them; (None, generation) on a miss."""
    cached, generation = _read(_memberships_key(user_id))
    if cached is None:
        return None, generation
    memberships = []
    for held in cached["memberships"]:
        membership = _restore(Membership, held["membership"])
        membership.tenant = _restore(Tenant, held["tenant"])
        membership.tenant.home_region = _restore(Region, held["region"])
        memberships.append(membership)
    return memberships, generation


def memberships_store(user_id, memberships: list[Membership], generation: bytes | None) -> None:
    """Keep `memberships` as read under `generation` (from `memberships_lookup`)."""
    held = [
        {
            "membership": _fields(m),
            "tenant": _fields(m.tenant),
            "region": _fields(m.tenant.home_region),
        }
        for m in memberships
    ]
    _write(_memberships_key(user_id), generation, {"memberships": held})


_TENANT_CHOICES_KEY = "steward:auth:tenant-choices"


def tenant_choices_lookup() -> tuple[list[tuple[str, str]] | None, bytes | None]:
    """Every tenant an operator may switch to, as (id, slug), and the generation read
    with them; (None, generation) on a miss."""
    cached, generation = _read(_TENANT_CHOICES_KEY)
    if cached is None:
        return None, generation
    return [(pk, slug) for pk, slug in cached["choices"]], generation


def tenant_choices_store(choices: list[tuple[str, str]], generation: bytes | None) -> None:
    _write(_TENANT_CHOICES_KEY, generation, {"choices": choices})


def _bump_own(generation_key: str) -> None:
    with contextlib.suppress(REDIS_ERRORS):
        with get_redis().pipeline(transaction=False) as pipe:
            pipe.incr(generation_key)
            pipe.expire(generation_key, _OWN_GENERATION_TTL_SECONDS)
            pipe.execute()


def _invalidate_own(generation_key: str) -> None:
    # Now, and again once the change commits, as `invalidate` does.
    _forget_read_together()
    _bump_own(generation_key)
    transaction.on_commit(lambda: _bump_own(generation_key))


def _person_keys(user_id) -> tuple[str, str]:
    entry, generation = _PERSON_PREFIXES
    return f"{entry}{user_id}", f"{generation}{user_id}"


# Never cached: Django reads it only to check or change a password, and then from
# PostgreSQL (the restored account leaves it deferred).
_PERSON_FIELDS = tuple(f for f in User._meta.concrete_fields if f.attname != "password")
_PERSON_NAMES = tuple(f.attname for f in _PERSON_FIELDS)


def person_lookup(user_id) -> tuple[User | None, bytes | None]:
    """The person's cached account, its password deferred and its session hash as it
    was computed from the password, and the generation read with it."""
    cached, generation = _read(*_person_keys(user_id))
    if cached is None:
        return None, generation
    values = cached["person"]
    user = User.from_db(
        "default", _PERSON_NAMES, [f.to_python(values[f.attname]) for f in _PERSON_FIELDS]
    )
    user.cached_session_auth_hash = cached["session_auth_hash"]
    return user, generation


def person_store(user: User, generation: bytes | None) -> None:
    """Keep `user` as read under `generation` (from `person_lookup`)."""
    entry = {
        "person": {name: getattr(user, name) for name in _PERSON_NAMES},
        "session_auth_hash": user.get_session_auth_hash(),
    }
    _write(_person_keys(user.pk)[0], generation, entry)


def person_invalidate(user_id) -> None:
    """The person's cached account is stale: call inside the transaction that changes it
    without a save (a queryset update); saves and deletions call it themselves."""
    _invalidate_own(_person_keys(user_id)[1])


def _session_keys(session_key: str) -> tuple[str, str]:
    # The key is a bearer credential: Redis holds only its digest.
    digest = hashlib.sha256(session_key.encode()).hexdigest()
    return f"steward:auth:session:{digest}", f"steward:auth:session-generation:{digest}"


# KEYS: the session's entry and generation. ARGV: the key prefixes of a person's entry
# and generation, of their memberships, the tenant choices' key and the generation
# key. Answers the session's entry and generation, then, when the entry names a person,
# their id, entry and generation, and when that entry says which they are, "memberships"
# or "choices", that entry, and the generation: false for each it did not read.
_READ_SIGNED_IN = """
local session, session_generation = redis.call('GET', KEYS[1]), redis.call('GET', KEYS[2])
local found = {session, session_generation, false, false, false, false, false, false}
if not session then return found end
local ok, entry = pcall(cjson.decode, session)
if not ok or type(entry['person']) ~= 'string' then return found end
local id = entry['person']
local person = redis.call('GET', ARGV[1] .. id)
found[3], found[4], found[5] = id, person, redis.call('GET', ARGV[2] .. id)
if not person then return found end
local read, held = pcall(cjson.decode, person)
if not read or type(held['person']) ~= 'table' then return found end
local account = held['person']
if account['is_active'] == true and account['is_staff'] == true then  -- User.is_operator
    found[6], found[7] = 'choices', redis.call('GET', ARGV[4])
else
    found[6], found[7] = 'memberships', redis.call('GET', ARGV[3] .. id)
end
found[8] = redis.call('GET', ARGV[5])
return found
"""
_PERSON_PREFIXES = ("steward:auth:person:", "steward:auth:person-generation:")
_MEMBERSHIPS_PREFIX = "steward:auth:memberships:"


def session_lookup(session_key: str) -> tuple[dict | None, bytes | None]:
    """The session's cached row ({"data": encoded data, "expire_date": ISO time}) and
    the session's own generation read with it. Within `reads_together`, its person's
    entries are read too, for their look-ups."""
    key, generation_key = _session_keys(session_key)
    together = _together.get()
    if together is None:
        return _read(key, generation_key)
    try:
        found = script(_READ_SIGNED_IN)(
            keys=[key, generation_key],
            args=[*_PERSON_PREFIXES, _MEMBERSHIPS_PREFIX, _TENANT_CHOICES_KEY, GENERATION_KEY],
        )
    except REDIS_ERRORS:
        return None, None
    session, session_generation, person_id, person, person_generation, which, held, generation = (
        found
    )
    if person_id:
        person_id = person_id.decode()
        together[_person_keys(person_id)] = (person, person_generation)
        if which == b"memberships":
            together[(_memberships_key(person_id), GENERATION_KEY)] = (held, generation)
        elif which == b"choices":
            together[(_TENANT_CHOICES_KEY, GENERATION_KEY)] = (held, generation)
    return _current(session, session_generation)


def session_store(
    session_key: str, data: str, expire_date, generation: bytes | None, person: str | None
) -> None:
    """Keep the session's row as read under `generation`; `person` is the id of the
    person signed in with it, if any (what `session_lookup` reads with it)."""
    key, _ = _session_keys(session_key)
    _write(key, generation, {"data": data, "expire_date": expire_date, "person": person})


def session_invalidate(session_key: str) -> None:
    """The session's cached row is stale: call when it is saved or deleted."""
    _invalidate_own(_session_keys(session_key)[1])


def _bump() -> None:
    # Should Redis be away for the bump and back before an entry expires, that entry
    # could be served for at most TTL_SECONDS more: the bound on a lost invalidation.
    with contextlib.suppress(REDIS_ERRORS):
        get_redis().incr(GENERATION_KEY)


def invalidate() -> None:
    """Every cached entry is stale: call inside the transaction that changes a token, a
    service account, a tenant or a membership (it bumps now, and again once the change
    commits)."""
    _forget_read_together()
    _bump()
    transaction.on_commit(_bump)


def _changed(sender, **kwargs) -> None:
    invalidate()


def _person_changed(sender, instance, **kwargs) -> None:
    person_invalidate(instance.pk)


def connect_signals() -> None:
    """Saves and deletes of these models invalidate too (the admin, a shell), on top
    of the services' own calls for their queryset updates (which send no signal)."""
    from django.db.models.signals import post_delete, post_save

    for model in _MODELS:
        post_save.connect(_changed, sender=model, dispatch_uid=f"token-cache-{model.__name__}")
        post_delete.connect(_changed, sender=model, dispatch_uid=f"token-cache-{model.__name__}-d")
    post_save.connect(_person_changed, sender=User, dispatch_uid="auth-cache-person")
    post_delete.connect(_person_changed, sender=User, dispatch_uid="auth-cache-person-d")
