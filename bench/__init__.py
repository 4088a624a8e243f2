"""Steward's benchmarks: `python -m bench NAME [--quick]` (or `make bench` for all).

Each case builds its own data in a scratch database (`<name>_bench`) on the same
PostgreSQL and Redis that `make test` uses, measures Steward doing the work and a
baseline doing the same work directly against PostgreSQL and Redis, and prints one
JSON object on its last line with both figures and their `ratio`.
"""
