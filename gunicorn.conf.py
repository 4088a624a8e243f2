"""How gunicorn serves Steward: read by `gunicorn` from the working directory, so the
image (docker-compose.yml, Dockerfile) and `python -m bench assets` run the same.

Three processes of four threads each. A request spends much of its time waiting for
PostgreSQL (a commit waits for its WAL flush) and for the client; with sync workers
each process sat idle meanwhile. On two busy cores, four threads a process took the
accepted callbacks from about 300/s to 520/s; two threads, 460/s (docs/performance.md).
Django and Steward are thread-safe (`make run` serves with the threaded runserver);
each thread keeps its own database connection, so a web container holds up to
workers × threads of them.
"""

workers = 3
threads = 4  # the gthread worker
