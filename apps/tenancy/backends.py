"""How Django's authentication finds the person a session belongs to, and checks a
password without holding a database connection while it hashes."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.db import connection

from apps.tenancy import auth_cache


def release_connection() -> None:
    """Hand the request's database connection back to the web process's pool before
    slow work that needs none (a password hash, 0.3–0.7 s of CPU): a burst of wrong
    passwords must not hold every pooled connection while other callers wait for one.
    Without a pool (one connection per thread) or inside a transaction there is
    nothing to hand back."""
    if connection.pool is not None and not connection.in_atomic_block:
        connection.close()


class PersonBackend(ModelBackend):
    """Django's ModelBackend, but the signed-in person of every request is read through
    the auth cache (apps.tenancy.auth_cache): their account changes far less often than
    they load a page. Signing in, permissions and the session check are Django's own;
    the cached account carries the session hash Django checks, and every change to an
    account (a save, a second factor reset) makes the entry stale at once."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        """ModelBackend's check, the account read first and the connection released
        before the password is hashed. An unknown name is hashed as long as a known one
        (Django's own remedy, #20760), so the time does not tell them apart."""
        model = get_user_model()
        if username is None:
            username = kwargs.get(model.USERNAME_FIELD)
        if username is None or password is None:
            return None
        user = model._default_manager.filter(**{model.USERNAME_FIELD: username}).first()
        release_connection()
        if user is None:
            model().set_password(password)
            return None
        if user.check_password(password) and self.user_can_authenticate(user):
            return user
        return None

    def get_user(self, user_id):
        user, generation = auth_cache.person_lookup(user_id)
        if user is None:
            user = super().get_user(user_id)
            if user is not None:
                auth_cache.person_store(user, generation)
            return user
        return user if self.user_can_authenticate(user) else None
