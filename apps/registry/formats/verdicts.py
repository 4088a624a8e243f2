"""What every schema type's check answers: a Verdict of Differences, in one of the modes
and policies the registry offers."""

from __future__ import annotations

from dataclasses import dataclass

MODES = (
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
    "NONE",
)
POLICIES = ("STRICT", "LENIENT")


@dataclass(frozen=True, slots=True)
class Difference:
    kind: str  # UPPER_SNAKE, one of KINDS
    path: str  # JSON pointer style: "#/properties/address/properties/zip"
    message: str  # one human sentence

    def as_dict(self) -> dict:
        return {"kind": self.kind, "path": self.path, "message": self.message}


@dataclass(frozen=True, slots=True)
class Verdict:
    compatible: bool
    mode: str
    policy: str
    differences: tuple[Difference, ...] = ()  # over all compared versions, deduplicated
    breaking: tuple[Difference, ...] = ()  # the differences the policy does not allow

    def as_dict(self) -> dict:
        return {
            "compatible": self.compatible,
            "mode": self.mode,
            "policy": self.policy,
            "differences": [d.as_dict() for d in self.differences],
            "breaking": [d.as_dict() for d in self.breaking],
        }


def choose(value, choices, what):
    if isinstance(value, str) and value.upper() in choices:
        return value.upper()
    raise ValueError(f"unknown compatibility {what} {value!r}; choose one of {', '.join(choices)}")
