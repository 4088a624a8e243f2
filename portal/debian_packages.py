"""Servers some tests need that pip does not bring (PgBouncer, Redis Sentinel): found on
the machine, or installed from Debian's packages when the run may, as the browser
journeys' Chromium is (portal.devstack.ensure_browser). A machine that has neither stops
the run with one sentence; the tests are never skipped."""

from __future__ import annotations

import os
import shutil

from portal.devstack import StackError, _apt_install


def ensure_binary(binary: str, *, package: str, needed_for: str) -> str:
    """The path of `binary` (a name on PATH or an absolute path), installing Debian's
    `package` first when it is missing and we may."""
    path = shutil.which(binary)
    may_install = hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get")
    if path is None and may_install:
        print(f"Installing Debian's {package} for {needed_for}...", flush=True)
        if _apt_install(package):
            path = shutil.which(binary)
    if path is None:
        raise StackError(
            f"{needed_for.capitalize()} need {binary}: install Debian's package "
            f"(sudo apt-get install {package})."
        )
    return path
