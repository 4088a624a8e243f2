"""Only for portal/urls.py, until it includes apps.governance.retention.urls: delete then."""

from apps.governance.retention.urls import app_name, urlpatterns

__all__ = ["app_name", "urlpatterns"]
