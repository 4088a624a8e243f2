import functools
import re
import uuid

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.urls import Resolver404, resolve

from apps.core.codes import CoreCode
from apps.core.context import request_id
from apps.core.views import API_PREFIX, bad_input_response, not_found

_SAFE_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class RequestIdMiddleware:
    """Give every request an id (the caller's X-Request-ID when it is sane), echo it back,
    and make it available to audit rows and log lines written while serving it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        incoming = request.META.get("HTTP_X_REQUEST_ID", "")  # no headers mapping built
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


# The names other modules import from here: refusals are written in apps.core.views,
# beside the error handlers that answer in the same shapes.
__all__ = ["bad_input_response", "bounds_its_own_body"]


def bounds_its_own_body(view):
    """Mark a view, or a viewset's action, that reads its request body as a stream and
    limits it itself (an export bundle, up to its own setting): the body limit of
    BadInputMiddleware, meant for bodies read whole into memory, leaves it alone."""
    view.bounds_its_own_body = True
    return view


def _bounds_its_own_body(request) -> bool:
    try:
        view = resolve(request.path_info).func
    except Resolver404:
        return False
    actions = getattr(view, "actions", None)  # a viewset's route: method -> action
    if actions:
        view = getattr(view.cls, actions.get(request.method.lower(), ""), None)
    return getattr(view, "bounds_its_own_body", False)


def body_too_large(request):
    """413; the Schema Registry API's 422, 42209, as the reference refuses a schema too
    large for its store (the body holds the schema)."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return bad_input_response(
        request,
        status=413,
        code=CoreCode.BODY_TOO_LARGE,
        title="Request body too large",
        detail=f"The request body is larger than {limit} bytes.",
        registry=(422, 42209),
    )


class BadInputMiddleware:
    """Refuse, in one place, the input no view can mean: a NUL byte in the path or the
    query string (PostgreSQL's text cannot hold one, so it would reach the database as
    an error), a URL over STEWARD_MAX_URL_LENGTH (414: gunicorn's own limit is set above
    it, so Steward rather than the server answers, in the caller's shape), and a body
    over DATA_UPLOAD_MAX_MEMORY_SIZE (413, before it is read; file uploads, and views
    marked `bounds_its_own_body`, are bounded by the views). An API URL that no route
    matches, or a 404 rendered as a page (DEBUG's technical page), is answered in the
    API's shape."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        meta = request.META
        query = meta.get("QUERY_STRING", "")
        if "\x00" in request.path or "%00" in query or "\x00" in query:
            return bad_input_response(
                request,
                status=400,
                code=CoreCode.NUL_CHARACTER,
                title="NUL character",
                detail="The URL contains a NUL character.",
            )
        limit = settings.STEWARD_MAX_URL_LENGTH
        if len(meta.get("PATH_INFO", "")) + len(query) > limit:
            return bad_input_response(
                request,
                status=414,
                code=CoreCode.URL_TOO_LONG,
                title="URL too long",
                detail=f"The URL is longer than {limit} characters.",
            )
        length = meta.get("CONTENT_LENGTH") or ""
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if (
            limit is not None
            and length.isdigit()
            and int(length) > limit
            and not meta.get("CONTENT_TYPE", "").startswith("multipart/form-data")
            and not _bounds_its_own_body(request)
        ):
            return body_too_large(request)
        response = self.get_response(request)
        if (
            response.status_code == 404
            and request.path.startswith(API_PREFIX)
            and response.get("Content-Type", "").startswith("text/html")
        ):
            return not_found(request, None)
        return response

    def process_exception(self, request, exception):
        if isinstance(exception, RequestDataTooBig):
            return body_too_large(request)
        return None
