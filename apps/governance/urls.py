"""Only for portal/urls.py, until it includes apps.governance.orders.urls: delete then."""

from apps.governance.orders.urls import app_name, urlpatterns

__all__ = ["app_name", "urlpatterns"]
