"""Retention: the rules and legal holds, the policy that plans from them, and the nightly
sweep that issues purge owner tasks and sweeps Steward's own expirable tables."""
