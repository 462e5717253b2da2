"""What the Halide bridge's modules share: the names Halide accepts, and the one line
of a Halide error worth reporting.  Nothing here imports ``halide``."""
from __future__ import annotations

import re

__all__ = ["halide_name"]

_RESERVED = re.compile(r"^_\d*$")


def halide_name(name: str) -> str:
    """A name Halide accepts for a Var/Func/loop: ``.`` -> ``_``, reserved names prefixed."""
    s = name.replace(".", "_").replace("$", "_")
    if _RESERVED.match(s):
        s = "v" + s
    return s


def _halide_message(exc) -> str:
    msg = str(exc).strip()
    return msg.splitlines()[-1] if msg else type(exc).__name__
