"""The probes: liveness and readiness, unauthenticated."""

import pytest


def test_healthz_answers_without_authentication(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.django_db
def test_readyz_checks_database_redis_and_migrations(client):
    response = client.get("/readyz")
    assert response.status_code == 200, response.content
    assert response.json()["checks"] == {"database": "ok", "redis": "ok", "migrations": "ok"}


@pytest.mark.django_db
def test_readyz_reports_unavailable_when_redis_is_gone(client, settings):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",
        }
    }
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["redis"].startswith("error")
    assert response.json()["checks"]["database"] == "ok"
