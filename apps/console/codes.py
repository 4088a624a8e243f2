"""The codes the console's two-factor check refuses API calls from a session with."""

from __future__ import annotations

from apps.core.codes import Codes


class ConsoleCode(Codes):
    TWO_FACTOR_REQUIRED = (
        "two_factor_required",
        "The session never gave its person's authenticator code; sign in again.",
    )
    TWO_FACTOR_ENROLMENT_REQUIRED = (
        "two_factor_enrolment_required",
        "Operators must set up two-factor sign-in in the console first.",
    )
