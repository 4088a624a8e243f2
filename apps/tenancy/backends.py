"""How Django's authentication finds the person a session belongs to."""

from __future__ import annotations

from django.contrib.auth.backends import ModelBackend

from apps.tenancy import auth_cache


class PersonBackend(ModelBackend):
    """Django's ModelBackend, but the signed-in person of every request is read through
    the auth cache (apps.tenancy.auth_cache): their account changes far less often than
    they load a page. Signing in, permissions and the session check are Django's own;
    the cached account carries the session hash Django checks, and every change to an
    account (a save, a second factor reset) makes the entry stale at once."""

    def get_user(self, user_id):
        user, generation = auth_cache.person_lookup(user_id)
        if user is None:
            user = super().get_user(user_id)
            if user is not None:
                auth_cache.person_store(user, generation)
            return user
        return user if self.user_can_authenticate(user) else None
