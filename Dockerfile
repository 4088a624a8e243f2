# Steward's production image: web (gunicorn), worker, beat and consumers all run from it.
#
# Reproducible: the base image is pinned by digest and every Python package by version
# and hash (requirements.lock, made from pyproject.toml by `uv pip compile`; docs/
# operations.md, "Upgrading"). Move the digest deliberately, to take Debian's and
# Python's fixes, and rebuild.
ARG PYTHON_IMAGE=python:3.12.8-slim-bookworm@sha256:2199a62885a12290dc9c5be3ca0681d367576ab7bf037da120e564723292a2f0

# ------------------------------------------------------------------ builder
# Compilers for any package without a wheel for this platform; none of them reaches
# the image Steward runs in.
FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential \
    && rm -rf /var/lib/apt/lists/*
RUN python -m venv /opt/steward
COPY requirements.lock /tmp/requirements.lock
# --require-hashes: a package whose file is not the one locked stops the build.
RUN /opt/steward/bin/pip install --require-hashes --no-deps -r /tmp/requirements.lock

# ------------------------------------------------------------------ runtime
FROM ${PYTHON_IMAGE}

# Steward runs from its source tree in /app (PYTHONPATH), not installed as a package:
# settings.py finds templates/ and static/ beside the code, and gunicorn, celery and
# manage.py all import the same copy. So the virtualenv holds exactly the lock file's
# packages and nothing a build backend fetched unpinned.
ENV PATH=/opt/steward/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PYTHONPATH=/app

COPY --from=builder /opt/steward /opt/steward
WORKDIR /app
COPY . .
# Compiled once here: the image is read-only to the processes, which would otherwise
# compile Steward's modules again at every start.
RUN python -m compileall -q apps portal bench manage.py

# Collected at build time so containers start without writing to the image. The
# values below only satisfy settings at import; collectstatic touches neither the
# database nor Redis, and development mode is used because production refuses to
# start without real secrets.
RUN STEWARD_ENV=development \
    STEWARD_SECRET_KEY=collectstatic-only \
    DATABASE_URL=postgresql://build@localhost/build \
    REDIS_URL=redis://localhost:6379/0 \
    python manage.py collectstatic --no-input

RUN useradd --create-home --uid 10001 --user-group steward
USER steward

EXPOSE 8000
# Liveness of the web process the image runs by default; docker-compose.yml gives
# web (readiness), worker, beat and consumers their own checks.
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 \
    CMD ["python", "/app/deploy/healthcheck.py", "http", "/healthz"]
# Processes and threads: gunicorn.conf.py in /app.
CMD ["gunicorn", "portal.wsgi:application", "-b", "0.0.0.0:8000"]
