"""Tenants, people, service accounts and tokens, row-level security and the audit
trail. Above core and beneath every other app: tenancy imports only core (see
apps/core/__init__.py for the whole order)."""
