# Steward's two commands: `make run` and `make test`. Both create the virtualenv,
# install, and bring their own PostgreSQL and Redis unless DATABASE_URL / REDIS_URL
# name servers to use instead (portal/devstack.py).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test bench lint format clean install openapi errors

# Steward runs on Python 3.11 to 3.13 (portal/devstack.py's PYTHON_VERSIONS checks the
# same each time); say so in one line before building a virtualenv on another.
$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; v = sys.version_info[:2]; sys.exit(None if (3, 11) <= v <= (3, 13) else "steward: Steward runs on Python 3.11 to 3.13, and $(PYTHON) is %d.%d; make PYTHON=python3.12 names another." % v)'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,embedded]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/python -m portal.devstack run

test: $(STAMP)
	$(BIN)/python -m portal.devstack test $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python -m portal.devstack bench

# The published API schema (docs/openapi.yaml); a test fails when it is out of date.
openapi: $(STAMP)
	$(BIN)/python -m portal.devstack env $(BIN)/python manage.py spectacular --file docs/openapi.yaml

# The list of every stable error code (docs/errors.md); a test fails when it is out of date.
errors: $(STAMP)
	$(BIN)/python -m portal.devstack env $(BIN)/python manage.py error_codes

# ruff, and lint-imports: the layers and rules of docs/architecture.md (pyproject.toml).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) .data
