"""``--set NAME=VALUE`` cost parameters for the benchmark scripts (VALUE is YAML;
docs/cost_params.md lists the names)."""
from __future__ import annotations

import yaml


def cost_sets(items) -> dict:
    """``{name: value}`` of ``--set NAME=VALUE`` items."""
    out = {}
    for item in items or ():
        name, sep, text = item.partition("=")
        if not sep:
            raise SystemExit(f"--set {item!r}: expected NAME=VALUE")
        out[name] = yaml.safe_load(text)
    return out


def spec_with(spec, items):
    """``spec`` (a spec or its name) with the ``--set`` cost parameters of ``items``."""
    import tilesolve as ts
    spec = ts.load_spec(spec)
    sets = cost_sets(items)
    return spec.with_cost_params(**sets) if sets else spec
