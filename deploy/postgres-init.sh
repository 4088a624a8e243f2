#!/bin/sh
# Creates the role Steward connects as and the database it owns. The official
# postgres image runs this once, when it initialises an empty data volume; later
# password changes are made with ALTER ROLE, not by editing this file.
#
# The role is deliberately ordinary: a superuser or BYPASSRLS role would skip
# row-level security and with it tenant isolation. It owns its database, so
# migrations can create tables, policies and triggers, and FORCE ROW LEVEL SECURITY
# keeps the policies binding on it as table owner too.
#
# The image either executes or sources this file, so it avoids `set -u` and `exit`,
# which would leak into the entrypoint when sourced.

: "${STEWARD_DB_PASSWORD:?STEWARD_DB_PASSWORD must be set for the postgres service}"

# psql's :'name' quotes the password as a literal, so no character in it can break
# out of the statement.
psql -v ON_ERROR_STOP=1 \
    --username "${POSTGRES_USER:-postgres}" \
    --dbname "${POSTGRES_DB:-postgres}" \
    --set app_password="$STEWARD_DB_PASSWORD" <<'SQL'
CREATE ROLE steward LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE
    PASSWORD :'app_password';
CREATE DATABASE steward OWNER steward;
SQL
