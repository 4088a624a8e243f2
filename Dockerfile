# Steward's production image: web (gunicorn), worker and beat all run from it.
FROM python:3.11-slim

# PYTHONPATH: settings.py finds templates/ and static/ next to the source tree, which
# the installed wheel does not carry, so Steward's packages are imported from /app and
# gunicorn, celery and manage.py all see the same copy.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONPATH=/app

WORKDIR /app

# Dependencies first, in their own layer, so a code change does not reinstall them.
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
        > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt

COPY . .
RUN pip install --no-deps . \
    && rm -rf build *.egg-info

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
# Processes and threads: gunicorn.conf.py in /app.
CMD ["gunicorn", "portal.wsgi:application", "-b", "0.0.0.0:8000"]
