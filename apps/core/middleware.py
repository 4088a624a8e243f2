import functools
import re
import uuid

from django.conf import settings

from apps.core.context import request_id

_SAFE_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class RequestIdMiddleware:
    """Give every request an id (the caller's X-Request-ID when it is sane), echo it back,
    and make it available to audit rows and log lines written while serving it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        incoming = request.headers.get("X-Request-ID", "")
        rid = incoming if _SAFE_ID.match(incoming) else uuid.uuid4().hex
        request.request_id = rid
        token = request_id.set(rid)
        try:
            response = self.get_response(request)
        finally:
            request_id.reset(token)
        response["X-Request-ID"] = rid
        return response


class ContentSecurityPolicyMiddleware:
    """Send STEWARD_CSP on every answer that has no policy of its own.

    Placed above WhiteNoise so static files carry it too. A view that needs another
    policy sets the header itself (see `content_security_policy`); the header it set
    is kept. Django 5.2 has no CSP support of its own, and one fixed policy does not
    justify django-csp's nonce and report machinery.
    """

    def __init__(self, get_response):
        self.get_response = get_response
        self.policy = settings.STEWARD_CSP

    def __call__(self, request):
        response = self.get_response(request)
        if "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = self.policy
        return response


def content_security_policy(policy_setting: str):
    """Decorate a view to answer under the policy in settings.`policy_setting` instead."""

    def decorate(view):
        @functools.wraps(view)
        def wrapped(request, *args, **kwargs):
            response = view(request, *args, **kwargs)
            response["Content-Security-Policy"] = getattr(settings, policy_setting)
            return response

        return wrapped

    return decorate
