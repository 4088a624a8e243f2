"""The codes the attention queue refuses with, besides core's."""

from __future__ import annotations

from apps.core.codes import Codes


class AttentionCode(Codes):
    UNKNOWN_ACTION = (
        "unknown_action",
        "The item's kind has no such action, or the action is done on its own page.",
    )
