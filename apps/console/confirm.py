"""Destructive console actions are confirmed on the server as well as on the page.

The page holds the real submit button inside a <details> disclosure, beside a sentence
saying what it will do; that button alone sends `confirm=yes`. A POST without it (an
old form, a script, a stray replay) changes nothing and says so, with or without
JavaScript."""

from __future__ import annotations

from django.contrib import messages

CONFIRM_FIELD = "confirm"


def confirmed(request, what: str) -> bool:
    """Whether the POST carries the confirmation; if not, tell the person nothing was
    done (`what` names the act: "withdrawing the version")."""
    if request.POST.get(CONFIRM_FIELD) == "yes":
        return True
    messages.warning(request, f"Nothing was done: {what} needs its confirmation.")
    return False
