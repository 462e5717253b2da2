"""``tilesolve specs``: list the hardware specs or print one as YAML.

    tilesolve specs               # name, kind and description of each spec
    tilesolve specs h100          # the h100 spec as YAML
    tilesolve specs host          # this machine, detected (save it, edit it)
    tilesolve specs my.yaml       # validate a file and print it normalized

The project's top-level CLI dispatches ``specs`` to :func:`main_specs`;
``python -m tilesolve.specs`` runs it standalone.
"""
from __future__ import annotations

import argparse
import sys
from typing import List, Optional, Sequence, TextIO

from ..errors import SpecError
from .loader import HOST, list_specs, load_spec, spec_to_yaml

__all__ = ["main_specs"]


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog, description="List the hardware specs, or print one as YAML.")
    parser.add_argument("name", nargs="?", metavar="NAME",
                        help="a spec name (see the list), 'host', or a path to a YAML file")
    parser.add_argument("--no-measure", action="store_true",
                        help="for 'host': skip the memory-bandwidth measurement "
                             "and use a conservative default (10 GB/s)")
    return parser


def _listing() -> List[List[str]]:
    rows = []
    for name in list_specs():
        if name == HOST:
            rows.append([HOST, "cpu", "this machine, detected at run time "
                                      "(`specs host` prints it)"])
        else:
            spec = load_spec(name)
            rows.append([name, spec.kind, spec.description.splitlines()[0]])
    return rows


def main_specs(argv: Optional[Sequence[str]] = None, *, prog: str = "tilesolve specs",
               out: Optional[TextIO] = None, err: Optional[TextIO] = None) -> int:
    """Run ``tilesolve specs [NAME]``; returns the exit status (0, or 2 on error)."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    args = _parser(prog).parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        if args.name is None:
            rows = [["NAME", "KIND", "DESCRIPTION"]] + _listing()
            width = max(len(r[0]) for r in rows)
            for name, kind, description in rows:
                out.write(f"{name:<{width}}  {kind:<4}  {description}\n")
        else:
            spec = load_spec(args.name, measure_bandwidth=not args.no_measure)
            out.write(spec_to_yaml(spec))
    except SpecError as exc:
        err.write(f"error: {exc}\n")
        return 2
    return 0
