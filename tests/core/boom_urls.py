"""portal.urls with two routes that fail outright, for the error page tests."""

from django.urls import path

from portal.urls import handler404, handler500
from portal.urls import urlpatterns as portal_urlpatterns


def boom(request):
    raise RuntimeError("boom: an error nobody expected")


urlpatterns = [path("boom", boom), path("api/v1/boom", boom), *portal_urlpatterns]

__all__ = ["handler404", "handler500", "urlpatterns"]
