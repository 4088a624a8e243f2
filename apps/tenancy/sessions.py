"""Console sessions: Django's database sessions, read through the auth cache.

Every console page read its session row from PostgreSQL before anything else, for data
that changes a few times a session (sign-in, the second factor, a tenant switch). The
row is served from apps.tenancy.auth_cache while the session's own generation is the
one it was read under; each save and each deletion increments that generation, so a
sign-out or a switch is seen by every web process at the next request. PostgreSQL
stays the record: a session is written there as before, and read there when Redis does
not answer.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.backends import db
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from apps.tenancy import auth_cache

STOCK_BACKEND = "django.contrib.auth.backends.ModelBackend"
PERSON_BACKEND = "apps.tenancy.backends.PersonBackend"


def _signed_in_before_person_backend(data: dict) -> dict:
    """A session opened before PersonBackend replaced Django's ModelBackend names the
    stock one, which Django would refuse as no longer configured: the person was
    signed in by the same rules, so the session goes on under PersonBackend rather
    than signing everyone out at the upgrade. (Nothing is rewritten while the stock
    backend is configured itself.)"""
    if data.get(BACKEND_SESSION_KEY) == STOCK_BACKEND and (
        STOCK_BACKEND not in settings.AUTHENTICATION_BACKENDS
        and PERSON_BACKEND in settings.AUTHENTICATION_BACKENDS
    ):
        data[BACKEND_SESSION_KEY] = PERSON_BACKEND
    return data


class SessionStore(db.SessionStore):
    def load(self):
        cached, generation = auth_cache.session_lookup(self.session_key)
        if cached is not None and parse_datetime(cached["expire_date"]) > timezone.now():
            return _signed_in_before_person_backend(self.decode(cached["data"]))
        row = self._get_session_from_db()
        if row is None:
            return {}
        data = self.decode(row.session_data)
        person = data.get(SESSION_KEY)
        auth_cache.session_store(
            row.session_key,
            row.session_data,
            row.expire_date,
            generation,
            person=str(person) if person is not None else None,
        )
        return _signed_in_before_person_backend(data)

    def save(self, must_create=False):
        super().save(must_create=must_create)
        # A key just made was never read, so nothing holds it yet.
        if not must_create and self.session_key:
            auth_cache.session_invalidate(self.session_key)

    def delete(self, session_key=None):
        session_key = session_key or self.session_key
        super().delete(session_key)
        if session_key:
            auth_cache.session_invalidate(session_key)

    async def asave(self, must_create=False):
        await super().asave(must_create=must_create)
        if not must_create and self.session_key:
            await sync_to_async(auth_cache.session_invalidate)(self.session_key)

    async def adelete(self, session_key=None):
        session_key = session_key or self.session_key
        await super().adelete(session_key)
        if session_key:
            await sync_to_async(auth_cache.session_invalidate)(session_key)
