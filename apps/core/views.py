"""Liveness and readiness probes, unauthenticated and outside any tenant scope."""

import sys
from urllib.parse import urlsplit, urlunsplit

import psycopg
from django.core.cache import cache
from django.core.exceptions import DisallowedHost
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpResponse, HttpResponseServerError, JsonResponse
from django.template import loader
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from psycopg_pool import PoolTimeout

from apps.core.api.exceptions import problem_response
from apps.core.codes import CoreCode
from apps.core.schedules import schedule_health
from apps.core.view_scope import unscoped


@unscoped
@require_GET
@never_cache
def healthz(request):
    return JsonResponse({"status": "ok"})


def _database() -> str:
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SELECT 1")
    return "ok"


def _redis() -> str:
    client = cache._cache.get_client(write=True)  # the configured Redis connection pool
    client.ping()
    return "ok"


def _migrations() -> str:
    executor = MigrationExecutor(connections[DEFAULT_DB_ALIAS])
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return "ok" if not plan else f"{len(plan)} pending"


@unscoped
@require_GET
@never_cache
def readyz(request):
    checks = {}
    for name, check in (("database", _database), ("redis", _redis), ("migrations", _migrations)):
        try:
            checks[name] = check()
        except Exception as exc:  # noqa: BLE001 - any failure means not ready
            checks[name] = f"error: {type(exc).__name__}"
    ready = all(value == "ok" for value in checks.values())
    answer = {"status": "ok" if ready else "unavailable", "checks": checks}
    if checks["database"] == "ok":
        # Detail, not readiness: a late nightly job is no reason to stop serving.
        answer["late_schedules"] = [
            {"job": j.name, "last_succeeded_at": j.last_succeeded_at, "last_error": j.last_error}
            for j in schedule_health()
            if j.late
        ]
    return JsonResponse(answer, status=200 if ready else 503)


API_PREFIX = "/api/"
SCHEMA_REGISTRY_PREFIX = "/api/schema-registry/"
# The Schema Registry API's own media type, its answers' (apps.registry.confluent.wire)
SCHEMA_REGISTRY_MEDIA_TYPE = "application/vnd.schemaregistry.v1+json"


def error_page(request, *, status: int, heading: str, message: str) -> HttpResponse:
    """Steward's own page for a refusal a person's browser receives, with the way back:
    to the page the person came from, when it was one of this console's, and home."""
    context = {
        "heading": heading,
        "message": message,
        "request_id": getattr(request, "request_id", ""),
        "back": _came_from(request),
    }
    return HttpResponse(loader.get_template("error.html").render(context), status=status)


def _came_from(request) -> str:
    """The Referer's path when it is this site's (never another site's address, which
    a link on the page would turn into an open redirect), else ""."""
    referer = request.META.get("HTTP_REFERER", "")
    parts = urlsplit(referer)
    if not referer or parts.path == request.path:
        return ""
    try:
        same = parts.netloc == request.get_host()
    except DisallowedHost:
        return ""
    return urlunsplit(("", "", parts.path, parts.query, "")) if same else ""


def bad_input_response(
    request,
    *,
    status: int,
    code: str,
    title: str,
    detail: str,
    registry: tuple[int, int] | None = None,
):
    """The answer to input refused before any view ran, in the shape its caller reads:
    the Schema Registry's error body (in its media type; `registry`: the status and
    error code the reference answers it with, where it has its own, else the status as
    both), a problem for the API, Steward's page otherwise."""
    path = request.path
    if path.startswith(SCHEMA_REGISTRY_PREFIX):
        status, error_code = registry or (status, status)
        return JsonResponse(
            {"error_code": error_code, "message": detail},
            status=status,
            content_type=SCHEMA_REGISTRY_MEDIA_TYPE,
        )
    if path.startswith(API_PREFIX):
        return problem_response(status_code=status, code=code, title=title, detail=detail)
    return error_page(request, status=status, heading=title, message=detail)


def bad_request(request, exception):
    """Django's 400, for what it refuses as suspicious before or around a view: a Host
    header not in ALLOWED_HOSTS above all (the request's host must not be read again
    here: asking for it raises once more)."""
    if isinstance(exception, DisallowedHost):
        code, title = CoreCode.BAD_HOST, "Unknown host"
        detail = "The Host header names a host this server does not serve."
    else:
        code, title = CoreCode.BAD_REQUEST, "Bad request"
        detail = "The request's headers or form are not ones Steward accepts."
    return bad_input_response(request, status=400, code=code, title=title, detail=detail)


def not_found(request, exception):
    """Django's 404 for URLs no route matches: API clients get the API's error shapes,
    not an HTML page (an identifier with a dot, say, matches no API route)."""
    if request.path.startswith(SCHEMA_REGISTRY_PREFIX):
        return JsonResponse({"error_code": 404, "message": "Not found."}, status=404)
    if request.path.startswith(API_PREFIX):
        return problem_response(status_code=404, code=CoreCode.NOT_FOUND, title="Not found.")
    return error_page(
        request,
        status=404,
        heading="Not found",
        message="There is no such page, or nothing here you may see.",
    )


def permission_denied(request, exception):
    """Django's 403 (a view's PermissionDenied), Steward's way: the API's problem for
    API clients, for people Steward's page saying what to do, never the bare one."""
    if request.path.startswith(API_PREFIX):
        return problem_response(
            status_code=403, code=CoreCode.PERMISSION_DENIED, title="Permission denied."
        )
    return error_page(
        request,
        status=403,
        heading="Not open to you",
        message=(
            "Your role does not open this page. If your work needs it, ask an operator "
            "or your tenant's admin."
        ),
    )


def database_unavailable(exc: BaseException | None) -> bool:
    """Whether `exc` says the database could not be reached, rather than that a query
    failed: no connection came free in the pool in time, or the server refused or lost
    the connection (too many clients, shutting down, restarting, unreachable, or a
    connection that broke under a command)."""
    while exc is not None:
        if isinstance(exc, PoolTimeout):
            return True
        if isinstance(exc, psycopg.OperationalError):
            state = getattr(exc, "sqlstate", None) or ""
            # No SQLSTATE: a connection-level failure; 08: connection exception; 53:
            # insufficient resources (53300 too many connections); 57P: the server is
            # shutting down, crashed or not yet accepting connections.
            return state == "" or state.startswith(("08", "53", "57P"))
        if isinstance(exc, psycopg.InternalError | psycopg.InterfaceError):
            # Without a SQLSTATE these are the client library's own: the connection was
            # already closed, or broke mid-command (a COMMIT through PgBouncer as the
            # primary died came back as two results). A server's XX000 keeps its 500.
            return not getattr(exc, "sqlstate", None)
        exc = exc.__cause__ or exc.__context__
    return False


RETRY_AFTER_SECONDS = "2"


def server_error(request):
    """Django's 500, Steward's way: API clients get a problem, people Steward's page
    (never the debug page); the traceback is logged by django.request either way.
    A request that found no database connection is a 503 `database_unavailable` with
    Retry-After instead: the client should come back, nothing is wrong with its request."""
    rid = getattr(request, "request_id", "")
    if database_unavailable(sys.exc_info()[1]):
        return _database_unavailable(request, rid)
    if request.path.startswith("/api/"):
        return problem_response(
            status_code=500,
            code=CoreCode.SERVER_ERROR,
            title="Server error",
            detail="Steward could not answer this request; the error is logged.",
            request_id=rid,
        )
    body = loader.get_template("500.html").render({"request_id": rid})
    return HttpResponseServerError(body)


def _database_unavailable(request, rid: str):
    detail = "Steward cannot reach its database just now; try again shortly."
    if request.path.startswith("/api/schema-registry/"):
        response = JsonResponse({"error_code": 50302, "message": detail}, status=503)
    elif request.path.startswith("/api/"):
        response = problem_response(
            status_code=503,
            code=CoreCode.DATABASE_UNAVAILABLE,
            title="Database unavailable",
            detail=detail,
            request_id=rid,
        )
    else:
        body = loader.get_template("500.html").render({"request_id": rid, "unavailable": True})
        response = HttpResponse(body, status=503)
    response["Retry-After"] = RETRY_AFTER_SECONDS
    return response
