"""Steward's one settings module.

Everything configurable comes from environment variables, read here and nowhere
else. Development defaults run on the embedded stack that `make run` starts; in
production (STEWARD_ENV=production) missing secrets stop the process at start-up.
"""

from __future__ import annotations

import ipaddress
import os
import re
import sys
import warnings
from datetime import timedelta
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from apps.core.redisurl import cache_settings, celery_broker, sentinel_service
from portal.dburl import settings_from_url

BASE_DIR = Path(__file__).resolve().parent.parent


def env(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(name)
    return default if value in (None, "") else value


def env_bool(name: str, default: bool) -> bool:
    value = env(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = env(name)
    return default if value is None else int(value)


def _web_process() -> bool:
    """gunicorn, or `manage.py runserver`: the processes that serve requests."""
    return Path(sys.argv[0]).name == "gunicorn" or sys.argv[1:2] == ["runserver"]


# A web process shares a bounded pool of connections among its threads, so no number of
# concurrent requests opens more than this many (runserver starts a thread per request,
# and each thread kept a connection of its own for DATABASE_CONN_MAX_AGE). A request
# that waits STEWARD_DB_POOL_TIMEOUT for one answers 503 database_unavailable. Every
# other process keeps one connection per thread, as before: a Celery process runs one
# task at a time and forks its children (a pool opened before a fork would be shared
# across it), and run_consumers' runner threads each hold theirs for good, so a pool
# smaller than the runners would starve them.
DB_POOL_SIZE = env_int("STEWARD_DB_POOL_SIZE", 4) if _web_process() else 0
DB_POOL_TIMEOUT = float(env("STEWARD_DB_POOL_TIMEOUT", "3"))


def prepare_threshold(value: str) -> int | None:
    """psycopg's prepare_threshold: "off" (None) for a connection pooler in transaction
    mode that cannot keep prepared statements (PgBouncer before 1.21)."""
    value = value.strip().lower()
    if value == "off":
        return None
    if not value.isdigit():
        raise ImproperlyConfigured("STEWARD_DB_PREPARE_THRESHOLD must be a count or 'off'.")
    return int(value)


# A pooler between Steward and PostgreSQL (docs/operations.md, Connection pooler). In
# transaction mode a statement prepared on one server connection is not there on the
# next, so preparing is off unless STEWARD_DB_PREPARE_THRESHOLD says otherwise (PgBouncer
# 1.21 and later keeps prepared statements with max_prepared_statements set).
DB_POOLER = env("STEWARD_DB_POOLER", "none")
if DB_POOLER not in {"none", "session", "transaction"}:
    raise ImproperlyConfigured("STEWARD_DB_POOLER must be 'none', 'session' or 'transaction'.")
DB_PREPARE_THRESHOLD = prepare_threshold(
    env("STEWARD_DB_PREPARE_THRESHOLD", "off" if DB_POOLER == "transaction" else "5")
)


def database_from_url(url: str) -> dict:
    try:
        connection = settings_from_url(url)
    except ValueError as exc:
        raise ImproperlyConfigured(str(exc)) from None
    pooled = DB_POOL_SIZE > 0
    # Parameters are bound by PostgreSQL, not spliced into the text by psycopg, so a
    # statement run DB_PREPARE_THRESHOLD times on a connection is prepared there: parsed,
    # rewritten (row-level policies are applied then) and planned once, not on every
    # request. The policies read the scope's settings when the plan runs, so a prepared
    # statement sees the rows of the scope it runs in (tests/core/test_prepared.py).
    connection["OPTIONS"] = {
        **connection.get("OPTIONS", {}),
        "server_side_binding": True,
        "prepare_threshold": DB_PREPARE_THRESHOLD,
    }
    if pooled:
        pool = {"min_size": 1, "max_size": DB_POOL_SIZE, "timeout": DB_POOL_TIMEOUT}
        connection["OPTIONS"] = {**connection.get("OPTIONS", {}), "pool": pool}
    return {
        "ENGINE": "portal.postgresql",  # Django's, with a health check without a round trip
        **connection,
        # A pooled connection goes back to the pool at the end of each request.
        "CONN_MAX_AGE": 0 if pooled else env_int("DATABASE_CONN_MAX_AGE", 60),
        # Pooled, psycopg_pool checks each connection as it leaves the pool (Django
        # passes it ConnectionPool.check_connection), so a restart's dead ones are replaced.
        "CONN_HEALTH_CHECKS": True,
        # Tenant scope is set per transaction (see apps.core.scope); the
        # TenantScopeMiddleware opens that transaction for every request.
        "ATOMIC_REQUESTS": False,
    }


STEWARD_ENV = env("STEWARD_ENV", "development")
if STEWARD_ENV not in {"development", "production"}:
    raise ImproperlyConfigured("STEWARD_ENV must be 'development' or 'production'.")
PRODUCTION = STEWARD_ENV == "production"

# Off unless a person opts in: Django's debug pages show settings and paths to anyone.
DEBUG = env_bool("STEWARD_DEBUG", False)
SECRET_KEY = env("STEWARD_SECRET_KEY")
if not SECRET_KEY:
    if PRODUCTION:
        raise ImproperlyConfigured("STEWARD_SECRET_KEY must be set in production.")
    SECRET_KEY = "steward-development-only-secret-key-do-not-use-in-production"  # noqa: S105
# Former keys, still accepted while a rotation settles: sessions and the TOTP seeds
# sealed under them stay readable (apps.tenancy.totp).
SECRET_KEY_FALLBACKS = [
    k.strip() for k in (env("STEWARD_SECRET_KEY_FALLBACKS", "") or "").split(",") if k.strip()
]

DATABASE_URL = env("DATABASE_URL")
REDIS_URL = env("REDIS_URL")
if PRODUCTION and not (DATABASE_URL and REDIS_URL):
    raise ImproperlyConfigured("DATABASE_URL and REDIS_URL must be set in production.")
# Outside `make run`/`make test` (an editor, a stray `manage.py`), fall back to the
# URLs the embedded stack uses, so commands fail with a connection error, not a KeyError.
DATABASE_URL = DATABASE_URL or "postgresql://steward@/steward?host=/tmp"  # noqa: S108
REDIS_URL = REDIS_URL or "redis://127.0.0.1:6379/0"
try:
    sentinel_service(REDIS_URL)
except ValueError as _exc:
    raise ImproperlyConfigured(str(_exc)) from None

ALLOWED_HOSTS = [
    h.strip()
    for h in env("STEWARD_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver").split(",")
    if h.strip()
]


def networks(name: str) -> list[str]:
    """A comma-separated list of IP networks, checked at start-up."""
    listed = [n.strip() for n in (env(name, "") or "").split(",") if n.strip()]
    for network in listed:
        try:
            ipaddress.ip_network(network, strict=False)
        except ValueError:
            raise ImproperlyConfigured(f"{name}: {network!r} is not an IP network.") from None
    return listed


# The reverse proxies in front of Steward whose X-Forwarded-For is believed
# (apps.core.addresses). None by default: a client's own header must not choose the
# address its sign-in attempts and API rate are counted under.
STEWARD_TRUSTED_PROXIES = networks("STEWARD_TRUSTED_PROXIES")
CSRF_TRUSTED_ORIGINS = [
    o.strip() for o in (env("STEWARD_CSRF_TRUSTED_ORIGINS", "") or "").split(",") if o.strip()
]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "guardian",
    "django_celery_beat",
    "apps.core",
    "apps.tenancy",
    "apps.registry",
    "apps.eventing",
    "apps.compute",
    "apps.assets",
    "apps.stores",
    "apps.governance",
    "apps.attention",
    "apps.console",
]

MIDDLEWARE = [
    "apps.core.metrics.MetricsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Above WhiteNoise, so static files carry the policy too.
    "apps.core.middleware.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "apps.core.middleware.RequestIdMiddleware",
    # Before sessions and URL resolution: NUL bytes, oversized bodies, API 404 shapes.
    "apps.core.middleware.BadInputMiddleware",
    # Around everything that reads the session, the person or their tenants.
    "apps.tenancy.middleware.SignedInReadsMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "apps.tenancy.middleware.ApiTokenMiddleware",
    # Operators without a second factor reach only enrolment (docs/operations.md).
    "apps.console.twofactor.TwoFactorMiddleware",
    "apps.tenancy.middleware.TenantScopeMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "portal.urls"
WSGI_APPLICATION = "portal.wsgi.application"
ASGI_APPLICATION = "portal.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "apps.console.context_processors.console",
            ],
            "builtins": ["apps.console.templatetags.urls"],
        },
    },
]

DATABASES = {"default": database_from_url(DATABASE_URL)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CACHES = {"default": {**cache_settings(REDIS_URL), "KEY_PREFIX": "steward"}}

AUTH_USER_MODEL = "tenancy.User"
AUTHENTICATION_BACKENDS = [
    # Django's ModelBackend, the signed-in person read through the auth cache.
    "apps.tenancy.backends.PersonBackend",
    "guardian.backends.ObjectPermissionBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "console:login"
LOGIN_REDIRECT_URL = "console:dashboard"
LOGOUT_REDIRECT_URL = "console:login"

# Failed sign-ins, counted in Redis over a sliding window (apps.tenancy.attempts): this
# many wrong passwords for one username lock it against the password alone (the right
# password and a second factor still pass), this many wrong codes lock a person's code
# step and two-factor pages, and STEWARD_LOGIN_ADDRESS_MAX_FAILURES failures of any kind
# from one client address refuse that address, before any password is hashed.
STEWARD_LOGIN_MAX_FAILURES = env_int("STEWARD_LOGIN_MAX_FAILURES", 5)
STEWARD_LOGIN_LOCKOUT = timedelta(seconds=env_int("STEWARD_LOGIN_LOCKOUT_SECONDS", 900))
STEWARD_LOGIN_ADDRESS_MAX_FAILURES = env_int("STEWARD_LOGIN_ADDRESS_MAX_FAILURES", 20)
# Between the password and the code of a two-step login: the password step is redone after.
STEWARD_LOGIN_CODE_SECONDS = env_int("STEWARD_LOGIN_CODE_SECONDS", 300)

# Guardian's anonymous user is not used: anonymous requests are denied by default.
ANONYMOUS_USER_NAME = None
GUARDIAN_MONKEY_PATCH_USER = False

# Cookies and transport (docs/operations.md, "Console security").
# Database sessions, read through the auth cache (apps/tenancy/sessions.py).
SESSION_ENGINE = "apps.tenancy.sessions"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_AGE = env_int("STEWARD_SESSION_SECONDS", 8 * 3600)
# Shared workstations: end the session when the browser closes, whatever its age.
SESSION_EXPIRE_AT_BROWSER_CLOSE = env_bool("STEWARD_SESSION_EXPIRE_AT_BROWSER_CLOSE", False)
SESSION_COOKIE_SECURE = PRODUCTION
CSRF_COOKIE_SECURE = PRODUCTION
# No script of Steward's reads the CSRF cookie: forms carry the token in a hidden field.
CSRF_COOKIE_HTTPONLY = True
CSRF_COOKIE_SAMESITE = "Lax"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
if PRODUCTION:
    # The __Host- prefix makes browsers refuse the cookies unless they are Secure, sent
    # for the whole site and not set by a sibling domain.
    SESSION_COOKIE_NAME = "__Host-steward_session"
    CSRF_COOKIE_NAME = "__Host-steward_csrftoken"
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("STEWARD_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("STEWARD_HSTS_SECONDS", 3600)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("STEWARD_HSTS_INCLUDE_SUBDOMAINS", False)
    SECURE_HSTS_PRELOAD = env_bool("STEWARD_HSTS_PRELOAD", False)

# Content-Security-Policy of every answer (apps.core.middleware): only Steward's own
# static files; no inline script or style, no plugins, no framing, forms post here only.
STEWARD_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)
# The Swagger UI page alone: its bundle sets inline styles as it renders
# (swagger-api/swagger-ui#10655), so styles may be inline there; scripts may not.
STEWARD_CSP_API_DOCS = STEWARD_CSP.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'")

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
# Steward speaks English only (no locale, no LocaleMiddleware): without the translation
# machinery every label, month name and "a.m." is the same text, and a console list page
# costs about a tenth less (docs/performance.md, the load case).
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True
if not PRODUCTION:
    # Development serves static files from the finders; collectstatic is for production.
    warnings.filterwarnings("ignore", message="No directory at", module="whitenoise.base")

# ----------------------------------------------------------------------------- API

# Bad input is refused before it is read (apps.core.middleware.BadInputMiddleware and
# apps.core.api.parsers): JSON nested deeper than this, bodies over the upload limit.
STEWARD_JSON_MAX_DEPTH = env_int("STEWARD_JSON_MAX_DEPTH", 64)
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("STEWARD_MAX_BODY_BYTES", 2_621_440)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "apps.tenancy.api.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # Default deny: every view names the permissions it grants.
    "DEFAULT_PERMISSION_CLASSES": ["apps.core.api.permissions.DenyAll"],
    "DEFAULT_PAGINATION_CLASS": "apps.core.api.pagination.CursorPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": [
        "apps.core.api.filtering.FilterBackend",
        "rest_framework.filters.SearchFilter",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_RENDERER_CLASSES": ["apps.core.api.renderers.FastJSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["apps.core.api.parsers.JSONParser"],
    "DEFAULT_THROTTLE_CLASSES": ["apps.core.api.throttling.CallerRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {"caller": env("STEWARD_API_RATE", "1200/min")},
    "EXCEPTION_HANDLER": "apps.core.api.exceptions.problem_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "apps.core.api.schema.StewardAutoSchema",
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Steward API",
    "DESCRIPTION": "Control-plane API of the Steward portal.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # The Schema Registry API's subject converter (apps.registry.confluent.urls) routes
    # with a look-ahead; its parameter is documented as the string it is.
    "PATH_CONVERTER_OVERRIDES": {"subject": str},
    # Several models have a `status`: name each choice set after its model.
    "ENUM_NAME_OVERRIDES": {
        "TenantStatusEnum": "apps.tenancy.models.Tenant.Status",
        "ComputeBatchStatusEnum": "apps.compute.models.ComputeBatch.Status",
        "GovernanceOrderKindEnum": "apps.governance.models.GovernanceOrder.Kind",
        "GovernanceTaskKindEnum": "apps.governance.models.GovernanceTask.Kind",
    },
}

# How long a stored Idempotency-Key answer is replayed.
STEWARD_IDEMPOTENCY_TTL = timedelta(hours=env_int("STEWARD_IDEMPOTENCY_TTL_HOURS", 24))

# ----------------------------------------------------------------------------- Eventing

# The outbox every app writes its events to (apps.core.outbox); eventing provides it.
STEWARD_OUTBOX_EMITTER = "apps.eventing.services.emit_many"
# The inboxes' deduplication window, which a re-drive of lost events must not exceed
# (apps.eventing.redrive): the retention rule steward-event-receipts decides it, and
# governance answers for it. A port, as the outbox's: no number here to contradict it.
STEWARD_INBOX_WINDOW_SOURCE = "apps.governance.retention.selectors.inbox_window"

STEWARD_EVENTING = {
    # Envelopes claimed per dispatcher batch, and how long a lane lease lasts before
    # another dispatcher may take the lane over from one that died.
    "DISPATCH_BATCH": env_int("STEWARD_DISPATCH_BATCH", 500),
    "LANE_LEASE_SECONDS": env_int("STEWARD_LANE_LEASE_SECONDS", 30),
    # Hard cap of each topic's Redis stream. Entries every consumer group has read are
    # trimmed every minute; past the cap, a group that far behind loses its oldest.
    "STREAM_MAXLEN": env_int("STEWARD_STREAM_MAXLEN", 100_000),
    # A subscription's attempts at one envelope before it goes to dead letters, and the
    # exponential back-off between attempts (base × 2^n, capped).
    "MAX_ATTEMPTS": env_int("STEWARD_DELIVERY_MAX_ATTEMPTS", 8),
    "BACKOFF_BASE_SECONDS": float(env("STEWARD_BACKOFF_BASE_SECONDS", "0.5")),
    "BACKOFF_MAX_SECONDS": float(env("STEWARD_BACKOFF_MAX_SECONDS", "300")),
    # Stream entries pending this long with a consumer are taken over by another.
    "RECLAIM_IDLE_SECONDS": env_int("STEWARD_RECLAIM_IDLE_SECONDS", 60),
    "WEBHOOK_TIMEOUT_SECONDS": float(env("STEWARD_WEBHOOK_TIMEOUT_SECONDS", "5")),
    # Only the first period of the rule steward-event-receipts that set-up installs
    # (never below 72 h); from then on the rule alone is the dedup and re-drive window.
    "INBOX_RETENTION_HOURS": env_int("STEWARD_INBOX_RETENTION_HOURS", 72),
    # Start a dispatcher as soon as a transaction with events commits (beat sweeps too).
    "KICK_ON_COMMIT": env_bool("STEWARD_KICK_ON_COMMIT", True),
    # Where the dispatcher publishes: Redis streams, or RabbitMQ (docs/eventing.md,
    # "RabbitMQ"): its URL (a secret: never logged), and how many lane queues each
    # consumer has there (change it only with those queues empty).
    "TRANSPORT": env("STEWARD_EVENT_TRANSPORT", "redis_stream"),
    "AMQP_URL": env("STEWARD_AMQP_URL", ""),
    "AMQP_LANES": env_int("STEWARD_AMQP_LANES", 4),
    # How long a new quorum queue waits before it is bound (apps.eventing.amqp,
    # declare_groups): RabbitMQ 3.10's Ra saves the queue's registration lazily (DETS
    # auto-save, 500 ms), and a queue killed before that loses its leader.
    "AMQP_QUEUE_SETTLE_SECONDS": float(env("STEWARD_AMQP_QUEUE_SETTLE_SECONDS", "1.5")),
}
if STEWARD_EVENTING["TRANSPORT"] not in {"redis_stream", "amqp"}:
    raise ImproperlyConfigured("STEWARD_EVENT_TRANSPORT must be 'redis_stream' or 'amqp'.")
if STEWARD_EVENTING["TRANSPORT"] == "amqp" and not STEWARD_EVENTING["AMQP_URL"]:
    raise ImproperlyConfigured("STEWARD_EVENT_TRANSPORT=amqp needs STEWARD_AMQP_URL.")

# Compute: links claimed per poll, and the age at which an outstanding link shows as stale.
STEWARD_COMPUTE_POLL_BATCH = env_int("STEWARD_COMPUTE_POLL_BATCH", 5000)
STEWARD_COMPUTE_STALE_LINK_MINUTES = env_int("STEWARD_COMPUTE_STALE_LINK_MINUTES", 60)

# How long a delegation or a store binding may wait on its task before the sweep starts
# it again (a task that died with its worker is otherwise held for the broker's
# visibility timeout).
STEWARD_STALLED_WORK_SECONDS = env_int("STEWARD_STALLED_WORK_SECONDS", 60)
# Work the sweeps keep sending again that has still not moved after this long waits on
# a person: it enters the attention queue (apps.attention).
STEWARD_ATTENTION_STALLED_MINUTES = env_int("STEWARD_ATTENTION_STALLED_MINUTES", 15)

# The Workflow Service that decides delegated asset approvals.
STEWARD_WORKFLOW_SERVICE_URL = env("STEWARD_WORKFLOW_SERVICE_URL", "")
STEWARD_WORKFLOW_TIMEOUT_SECONDS = float(env("STEWARD_WORKFLOW_TIMEOUT_SECONDS", "5"))
STEWARD_WORKFLOW_RETRIES = env_int("STEWARD_WORKFLOW_RETRIES", 2)
# The shared secret the Workflow Service signs its callbacks with, and how old a
# callback's timestamp may be. Without a secret, every callback is refused.
STEWARD_WORKFLOW_CALLBACK_SECRET = env("STEWARD_WORKFLOW_CALLBACK_SECRET", "")
# Callbacks a worker applies per transaction (one conditional UPDATE for all of them).
STEWARD_WORKFLOW_CALLBACK_BATCH = env_int("STEWARD_WORKFLOW_CALLBACK_BATCH", 1000)
# A web process kicks a tenant's callback worker at once, then at most once per this
# many milliseconds however many of the tenant's callbacks it records meanwhile
# (apps.core.kick): the delay a decision may wait, against one Redis call per callback.
STEWARD_WORKFLOW_CALLBACK_KICK_COALESCE_MS = env_int(
    "STEWARD_WORKFLOW_CALLBACK_KICK_COALESCE_MS", 250
)
# The reconciler (schedule assets.periodic_reconcile_workflows) asks about assets
# Requested under a workflow for longer than this.
STEWARD_WORKFLOW_RECONCILE_AFTER_MINUTES = env_int("STEWARD_WORKFLOW_RECONCILE_AFTER_MINUTES", 60)
STEWARD_WORKFLOW_CALLBACK_TOLERANCE_SECONDS = env_int(
    "STEWARD_WORKFLOW_CALLBACK_TOLERANCE_SECONDS", 300
)


def days_by_tenant(name: str) -> dict[str, int]:
    """`slug=days,slug=days` as {slug: days}; anything else stops the process at start-up,
    rather than a tenant's bound silently falling back to the default."""
    found = {}
    for part in filter(None, (p.strip() for p in (env(name, "") or "").split(","))):
        slug, _, days = part.partition("=")
        if not slug.strip() or not days.strip().isdigit() or int(days) < 1:
            raise ImproperlyConfigured(f"{name}: {part!r} is not slug=days (days at least 1).")
        found[slug.strip()] = int(days)
    return found


# An asset waiting on the Workflow Service's decision for longer than this many days
# waits on a person too (attention kind overdue-decision: ask the service, delegate
# again, or retire it); a tenant named in the second setting gets its own bound.
STEWARD_WORKFLOW_DECISION_OVERDUE_DAYS = env_int("STEWARD_WORKFLOW_DECISION_OVERDUE_DAYS", 7)
STEWARD_WORKFLOW_DECISION_OVERDUE_DAYS_BY_TENANT = days_by_tenant(
    "STEWARD_WORKFLOW_DECISION_OVERDUE_DAYS_BY_TENANT"
)

# Schema registry: the compatibility mode of topics that set none.
STEWARD_REGISTRY_DEFAULT_MODE = env("STEWARD_REGISTRY_DEFAULT_MODE", "BACKWARD")
# The cluster ids the Schema Registry API's /v1/metadata/id answers, as the reference
# answers its `schema.registry.group.id` and the id of the Kafka cluster it serves: tools
# (role bindings, Control Center) name the registry by them.
STEWARD_REGISTRY_CLUSTER_ID = env("STEWARD_REGISTRY_CLUSTER_ID", "schema-registry")
STEWARD_REGISTRY_KAFKA_CLUSTER_ID = env("STEWARD_REGISTRY_KAFKA_CLUSTER_ID", "")

# Store bindings: the secret broker (a class implementing apps.stores.brokers.SecretBroker).
# Production's names credentials in every process's environment, so no replica needs a
# folder of its own; development's makes secrets up and keeps them in files (never the
# database) under STEWARD_SECRET_BROKER_DIR.
STEWARD_SECRET_BROKER = env(
    "STEWARD_SECRET_BROKER",
    "apps.stores.brokers.EnvironmentBroker"
    if PRODUCTION
    else "apps.stores.brokers.LocalFileBroker",
)
STEWARD_SECRET_BROKER_DIR = env("STEWARD_SECRET_BROKER_DIR", str(BASE_DIR / ".data" / "secrets"))

# Webhook signing secrets are referenced as env:NAME, NAME starting with this prefix.
STEWARD_SECRET_ENV_PREFIX = env("STEWARD_SECRET_ENV_PREFIX", "STEWARD_WEBHOOK_SECRET_")

# Webhook endpoints are called only at public addresses (apps.core.outbound); these
# ranges (CIDR, comma-separated) are allowed besides: a receiver on a private network.
# Empty by default: a listed range is an operator's decision, never a default. Checked
# here, so a mistyped range stops the process rather than allowing nothing silently.
STEWARD_WEBHOOK_ALLOWED_NETWORKS = [
    n.strip() for n in (env("STEWARD_WEBHOOK_ALLOWED_NETWORKS", "") or "").split(",") if n.strip()
]
for _network in STEWARD_WEBHOOK_ALLOWED_NETWORKS:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError as _exc:
        raise ImproperlyConfigured(f"STEWARD_WEBHOOK_ALLOWED_NETWORKS: {_exc}") from None

# ----------------------------------------------------------------------------- Retention

# The nightly retention sweep (apps.governance.retention.services.sweep_run): when it
# runs (a crontab line: minute hour day-of-month month day-of-week, UTC), how long an
# owning service has to report a purge task's receipt, and how Steward's own tables are
# swept: rows per batch to start with, adapted so a batch (its row locks) lasts about
# the target.
STEWARD_RETENTION_SWEEP_CRONTAB = env("STEWARD_RETENTION_SWEEP_CRONTAB", "30 2 * * *")
STEWARD_RETENTION_TASK_DUE_HOURS = env_int("STEWARD_RETENTION_TASK_DUE_HOURS", 72)
STEWARD_RETENTION_SWEEP_BATCH = env_int("STEWARD_RETENTION_SWEEP_BATCH", 2000)
STEWARD_RETENTION_SWEEP_BATCH_MAX = env_int("STEWARD_RETENTION_SWEEP_BATCH_MAX", 50_000)
STEWARD_RETENTION_BATCH_TARGET_MS = env_int("STEWARD_RETENTION_BATCH_TARGET_MS", 50)
# Replayed or discarded dead letters are kept this long after they were resolved.
STEWARD_RETENTION_DEAD_LETTERS_DAYS = env_int("STEWARD_RETENTION_DEAD_LETTERS_DAYS", 30)
# Traces expire in their own backend; shown with each sweep for information only.
STEWARD_TRACE_RETENTION_DAYS = env_int("STEWARD_TRACE_RETENTION_DAYS", 30)

# ----------------------------------------------------------------------------- Celery

# Celery's broker: REDIS_URL's Redis, unless STEWARD_CELERY_BROKER_URL names another
# (RabbitMQ: amqp://user:password@host:5672/vhost, a secret).
STEWARD_CELERY_BROKER_URL = env("STEWARD_CELERY_BROKER_URL", "")
if STEWARD_CELERY_BROKER_URL:
    CELERY_BROKER_URL, _broker_options = STEWARD_CELERY_BROKER_URL, {}
else:
    CELERY_BROKER_URL, _broker_options = celery_broker(REDIS_URL)
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_TIMEZONE = TIME_ZONE
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env_int("STEWARD_TASK_SOFT_TIME_LIMIT", 240)
CELERY_TASK_TIME_LIMIT = env_int("STEWARD_TASK_TIME_LIMIT", 300)
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ROUTES = {"*.periodic_*": {"queue": "periodic"}}
# Redis: with acks_late, a message is redelivered when unacknowledged for this long: keep
# it well above the longest task (CELERY_TASK_TIME_LIMIT) so no task runs twice by
# accident. RabbitMQ returns a message when its consumer's connection goes instead; there
# a task is sent with publisher confirms, so that one the broker did not take (a nack, a
# node lost before it wrote the message) fails its sender rather than vanishing, and the
# caller's retry or its sweep sees it at once.
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {"confirm_publish": True}
    if STEWARD_CELERY_BROKER_URL
    else {**_broker_options, "visibility_timeout": CELERY_TASK_TIME_LIMIT * 4}
)
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

# JSON lines with the request id, secrets masked (apps.core.logs); plain for a terminal.
STEWARD_LOG_FORMAT = env("STEWARD_LOG_FORMAT", "json" if PRODUCTION else "plain")
if STEWARD_LOG_FORMAT not in {"json", "plain"}:
    raise ImproperlyConfigured("STEWARD_LOG_FORMAT must be 'json' or 'plain'.")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "json": {"()": "apps.core.logs.JsonFormatter"},
        "plain": {"()": "apps.core.logs.PlainFormatter"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": STEWARD_LOG_FORMAT}},
    "root": {"handlers": ["console"], "level": env("STEWARD_LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "INFO"},
        "httpx": {"level": "WARNING"},  # one line per webhook request is noise
    },
}

# Governance orders (docs/governance.md).
STEWARD_GOVERNANCE_TASK_DUE_HOURS = env_int("STEWARD_GOVERNANCE_TASK_DUE_HOURS", 72)
# Between a deletion's approval and its first phase: the order can still be cancelled.
STEWARD_DELETION_GRACE_HOURS = env_int("STEWARD_DELETION_GRACE_HOURS", 24)
# The service that closes a deleted tenant's subscription (the last deletion phase).
STEWARD_COMMERCIAL_SERVICE = env("STEWARD_COMMERCIAL_SERVICE", "commercial")
STEWARD_EXPORT_TTL_HOURS = env_int("STEWARD_EXPORT_TTL_HOURS", 7 * 24)
STEWARD_EXPORT_BUNDLE_MAX_BYTES = env_int("STEWARD_EXPORT_BUNDLE_MAX_BYTES", 1 << 30)
EMAIL_BACKEND = env(
    "STEWARD_EMAIL_BACKEND",
    "django.core.mail.backends.smtp.EmailBackend"
    if PRODUCTION
    else "django.core.mail.backends.console.EmailBackend",
)
EMAIL_HOST = env("STEWARD_EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("STEWARD_EMAIL_PORT", 25)
DEFAULT_FROM_EMAIL = env("STEWARD_EMAIL_FROM", "steward@localhost")
# A relay that wants a login gets one; no user means none is attempted.
EMAIL_HOST_USER = env("STEWARD_EMAIL_USER", "")
EMAIL_HOST_PASSWORD = env("STEWARD_EMAIL_PASSWORD", "")
# STARTTLS after connecting (the submission port, 587), or TLS from the first byte (465).
EMAIL_USE_TLS = env_bool("STEWARD_EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("STEWARD_EMAIL_USE_SSL", False)
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    # Django would refuse only when the first notice is sent, in a worker's log.
    raise ImproperlyConfigured("Set STEWARD_EMAIL_USE_TLS or STEWARD_EMAIL_USE_SSL, not both.")
# Django waits for an unanswering relay forever, and with it the task sending the notice.
EMAIL_TIMEOUT = env_int("STEWARD_EMAIL_TIMEOUT_SECONDS", 10)

# The longest URL (path and query) Steward serves; longer ones are refused with 414 in
# the caller's shape (apps.core.middleware). gunicorn's own limit is above it
# (gunicorn.conf.py), so the answer is Steward's, not the server's HTML.
STEWARD_MAX_URL_LENGTH = env_int("STEWARD_MAX_URL_LENGTH", 4096)

# /metrics (apps.core.metrics): a bearer token, or else only these networks. In
# production no network is listed unless an operator lists it: behind a reverse proxy on
# the same host every visitor arrives from loopback, so loopback proves nothing there.
STEWARD_METRICS_TOKEN = env("STEWARD_METRICS_TOKEN", "")
STEWARD_METRICS_ALLOW = [
    n.strip()
    for n in env("STEWARD_METRICS_ALLOW", "" if PRODUCTION else "127.0.0.1/32,::1/128").split(",")
    if n.strip()
]
# The consumers process's own figures (apps.eventing.delivery_metrics), served by
# `run_consumers` at http://<host:port>/metrics, guarded as /metrics is; empty: not served.
STEWARD_CONSUMERS_METRICS_ADDRESS = env("STEWARD_CONSUMERS_METRICS_ADDRESS", "").strip()
if STEWARD_CONSUMERS_METRICS_ADDRESS and not re.fullmatch(
    r"(\[[0-9a-fA-F:.]+\]|[^:\s]*):\d{1,5}", STEWARD_CONSUMERS_METRICS_ADDRESS
):
    raise ImproperlyConfigured(
        "STEWARD_CONSUMERS_METRICS_ADDRESS is host:port (0.0.0.0:9108, [::]:9108, :9108)."
    )

# Bounded reconciliation of uncertain effects (apps/eventing/effects.py): checks of the
# other side, and time since reconciliation began, before an effect still unknown
# leaves reconciliation and waits on a person. With the default back-off (0.5 s doubling
# to 5 min) twenty checks take about an hour; six hours bounds an effect whose checks
# keep failing to run.
STEWARD_EFFECT_MAX_CHECKS = env_int("STEWARD_EFFECT_MAX_CHECKS", 20)
STEWARD_EFFECT_MAX_AGE_SECONDS = env_int("STEWARD_EFFECT_MAX_AGE_SECONDS", 6 * 3600)
