"""Who a caller is, as the last look-up found it, kept in Redis for a few seconds:
bearer tokens (with their service account and tenant), and the memberships a person
signed in to the console holds (with each tenant and its home region).

Each look-up costs a transaction of its own (tokens and memberships are row-level
security rows, read in the system scope): four round trips to PostgreSQL and a few
model instances, on every API request and every console page. The cache answers with
one Redis round trip instead, shared by every web process.

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

When Redis does not answer, both are looked up in PostgreSQL as before. The person
themselves (their account, whether it is active, their session's hash) is still read
from PostgreSQL on every request, by Django's authentication.
"""

from __future__ import annotations

import contextlib
import json
from datetime import datetime

from django.db import transaction

from apps.core.redis import REDIS_ERRORS, get_redis
from apps.tenancy.models import ApiToken, Membership, Region, ServiceAccount, Tenant

TTL_SECONDS = 10
GENERATION_KEY = "steward:auth:generation"
_MODELS = (ApiToken, ServiceAccount, Tenant, Membership, Region)


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


def _read(key: str) -> tuple[dict | None, bytes | None]:
    """The entry at `key` if it was written under the current generation, and that
    generation (None when Redis does not answer: then nothing is stored either)."""
    try:
        entry, generation = get_redis().mget([key, GENERATION_KEY])
    except REDIS_ERRORS:
        return None, None
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
    return f"steward:auth:memberships:{user_id}"


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


def _bump() -> None:
    # Should Redis be away for the bump and back before an entry expires, that entry
    # could be served for at most TTL_SECONDS more: the bound on a lost invalidation.
    with contextlib.suppress(REDIS_ERRORS):
        get_redis().incr(GENERATION_KEY)


def invalidate() -> None:
    """Every cached entry is stale: call inside the transaction that changes a token, a
    service account, a tenant or a membership (it bumps now, and again once the change
    commits)."""
    _bump()
    transaction.on_commit(_bump)


def _changed(sender, **kwargs) -> None:
    invalidate()


def connect_signals() -> None:
    """Saves and deletes of these models invalidate too (the admin, a shell), on top
    of the services' own calls for their queryset updates (which send no signal)."""
    from django.db.models.signals import post_delete, post_save

    for model in _MODELS:
        post_save.connect(_changed, sender=model, dispatch_uid=f"token-cache-{model.__name__}")
        post_delete.connect(_changed, sender=model, dispatch_uid=f"token-cache-{model.__name__}-d")
