"""Console sessions: Django's database sessions, read through the auth cache.

Every console page reads its session before anything else, for data that changes a
few times a session (sign-in, the second factor, a tenant switch). The row is served
from apps.tenancy.auth_cache while the session's own generation is the one it was
read under; each save and each deletion increments that generation, so a sign-out or
a switch is seen by every web process at the next request. PostgreSQL stays the
record: a session is written there, and read there when Redis does not answer.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.contrib.auth import SESSION_KEY
from django.contrib.sessions.backends import db
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from apps.tenancy import auth_cache


class SessionStore(db.SessionStore):
    def load(self):
        cached, generation = auth_cache.session_lookup(self.session_key)
        if cached is not None and parse_datetime(cached["expire_date"]) > timezone.now():
            return self.decode(cached["data"])
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
        return data

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
