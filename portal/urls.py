from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from apps.assets.api.callbacks import WorkflowCallbackView
from apps.core import views as core_views
from apps.core.metrics import metrics
from apps.core.middleware import content_security_policy
from apps.tenancy.api.views import WhoAmIView

api_v1 = [
    # First: the Workflow Service's callbacks are the busiest path, and URL resolution
    # tries the patterns in order.
    path(
        "assets/workflow-callbacks/",
        WorkflowCallbackView.as_view(),
        name="assets-workflow-callbacks",
    ),
    path("tenancy/", include("apps.tenancy.api.urls")),
    path("eventing/", include("apps.eventing.api.urls")),
    path("registry/", include("apps.registry.api.urls")),
    path("compute/", include("apps.compute.api.urls")),
    path("assets/", include("apps.assets.api.urls")),
    path("stores/", include("apps.stores.api.urls")),
    path("governance/retention/", include("apps.governance.api.retention_urls")),
    path("governance/", include("apps.governance.api.urls")),
    path("attention/", include("apps.attention.api.urls")),
    path("whoami/", WhoAmIView.as_view(), name="whoami"),
]

handler400 = "apps.core.views.bad_request"
handler403 = "apps.core.views.permission_denied"
handler404 = "apps.core.views.not_found"
handler500 = "apps.core.views.server_error"

urlpatterns = [
    path("api/v1/", include((api_v1, "api"), namespace="v1")),
    path("healthz", core_views.healthz, name="healthz"),
    path("readyz", core_views.readyz, name="readyz"),
    path("metrics", metrics, name="metrics"),
    # Confluent-compatible Schema Registry clients point their `url` here.
    path("api/schema-registry/", include("apps.registry.confluent.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves its start-up script from a URL instead of inline, so the
    # page needs no 'unsafe-inline' for scripts.
    path(
        "api/docs/",
        content_security_policy("STEWARD_CSP_API_DOCS")(
            SpectacularSwaggerSplitView.as_view(url_name="api-schema")
        ),
        name="api-docs",
    ),
    # The admin signs in through the console, so lockout applies there too.
    path("admin/login/", RedirectView.as_view(pattern_name="console:login", query_string=True)),
    path("admin/", admin.site.urls),
    path("eventing/", include("apps.eventing.urls")),
    path("registry/", include("apps.registry.urls")),
    path("compute/", include("apps.compute.urls")),
    path("assets/", include("apps.assets.urls")),
    path("stores/", include("apps.stores.urls")),
    path("governance/retention/", include("apps.governance.retention.urls")),
    path("governance/", include("apps.governance.orders.urls")),
    path("attention/", include("apps.attention.urls")),
    path("", include("apps.console.urls")),
]
