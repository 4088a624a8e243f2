"""Liveness and readiness probes, unauthenticated and outside any tenant scope."""

from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpResponseServerError, JsonResponse
from django.template import loader
from django.views import defaults
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from apps.core.api.exceptions import problem_response
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


def not_found(request, exception):
    """Django's 404 for URLs no route matches: API clients get the API's error shapes,
    not an HTML page (an identifier with a dot, say, matches no API route)."""
    if request.path.startswith("/api/schema-registry/"):
        return JsonResponse({"error_code": 404, "message": "Not found."}, status=404)
    if request.path.startswith("/api/"):
        return problem_response(status_code=404, code="not_found", title="Not found.")
    return defaults.page_not_found(request, exception)


def server_error(request):
    """Django's 500, Steward's way: API clients get a problem, people Steward's page
    (never the debug page); the traceback is logged by django.request either way."""
    rid = getattr(request, "request_id", "")
    if request.path.startswith("/api/"):
        return problem_response(
            status_code=500,
            code="server_error",
            title="Server error",
            detail="Steward could not answer this request; the error is logged.",
            request_id=rid,
        )
    body = loader.get_template("500.html").render({"request_id": rid})
    return HttpResponseServerError(body)
