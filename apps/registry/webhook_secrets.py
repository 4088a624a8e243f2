"""Webhook signing secrets: a subscription holds a *reference* to its secret, never the
secret, and the reference is resolved at the moment the secret is needed.

The registry owns the reference (it checks one when a subscription is created or
changed); eventing resolves it again at each delivery (`WebhookTransport`).
"""

from __future__ import annotations

import os

from django.conf import settings


class SecretUnavailable(Exception):
    """The reference does not resolve to a secret (now)."""


def resolve_secret(reference: str) -> bytes:
    """Turn a secret reference into the secret.

    `env:NAME` reads an environment variable whose name starts with
    STEWARD_SECRET_ENV_PREFIX, so a reference can never name Steward's own secrets
    (its secret key, database password). The reference, not the secret, is what the
    database holds; the secret never reaches a log line.
    """
    scheme, _, name = reference.partition(":")
    prefix = settings.STEWARD_SECRET_ENV_PREFIX
    if scheme != "env" or not name:
        raise SecretUnavailable("a secret reference looks like env:NAME")
    if not name.startswith(prefix):
        raise SecretUnavailable(f"secret references name variables starting with {prefix}")
    value = os.environ.get(name)
    if not value:
        raise SecretUnavailable(f"the secret reference {reference} resolves to nothing")
    return value.encode()
