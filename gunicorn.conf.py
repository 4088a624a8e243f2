"""How gunicorn serves Steward: read by `gunicorn` from the working directory, so the
image (docker-compose.yml, Dockerfile) and the benchmarks run the same.

Four sync processes on two cores. A request spends much of its time waiting for
PostgreSQL (a commit waits for its WAL flush) and for the client, so one process per
core leaves the cores idle; four keep them busy. Threads (3 processes x 4 threads)
did as well only on a machine busy with other work; on a quieter one, alternated
runs of `bench assets --quick` gave 4 sync processes 747 and 759 accepted callbacks/s
against 507 and 729 for the threads (docs/performance.md). Raise `workers` with the
cores (about two per core); each holds one database connection.
"""

workers = 4

# gunicorn's maximum (its default is 4094): a request line up to this reaches Steward,
# which refuses URLs over STEWARD_MAX_URL_LENGTH (4096) with a 414 in the caller's shape,
# a problem+json for the API, instead of gunicorn's HTML page.
limit_request_line = 8190
