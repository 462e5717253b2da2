"""The spec schema: every field, its type and constraints, and the checks.

``normalize(data, source)`` turns a plain mapping (parsed YAML) into the
keyword arguments of :class:`~tilesolve.specs.spec.HardwareSpec`, or raises
:class:`SpecError` with a message naming the source (file), the field and what
was expected, e.g.::

    h100.yaml: field 'sm_count': expected a positive integer, got -4

``SCHEMA.md`` documents the same table for people; a test keeps them in step.
"""
from __future__ import annotations

import difflib
import math
import re
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Tuple

from ..errors import SpecError, SpecWarning
from .cost_params import cost_params_from

__all__ = ["Rule", "RULES", "KINDS", "fields_for_kind", "normalize"]

KINDS = ("cpu", "gpu")
MAX_CLOCK_GHZ = 10.0  # no machine runs faster; a larger value is a clock given in MHz
_BAD = object()  # a checker's answer for "invalid"


@dataclass(frozen=True)
class Rule:
    """One field: which kinds have it, what it must be, and how to check it."""

    name: str
    group: str  # "common", "cpu" or "gpu"
    expected: str  # phrase used in error messages: "expected <expected>"
    check: Callable[[Any], Any]  # returns the normalized value or _BAD
    optional: bool = False  # may be left out (None: the model's built-in value)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return (_is_int(v) or isinstance(v, float)) and math.isfinite(v)


def _pos_int(v: Any) -> Any:
    return v if _is_int(v) and v > 0 else _BAD


def _nonneg_int(v: Any) -> Any:
    return v if _is_int(v) and v >= 0 else _BAD


def _pow2_int(v: Any) -> Any:
    return v if _is_int(v) and v > 0 and v & (v - 1) == 0 else _BAD


def _pos_number(v: Any) -> Any:
    return float(v) if _is_number(v) and v > 0 else _BAD


def _nonneg_number(v: Any) -> Any:
    return float(v) if _is_number(v) and v >= 0 else _BAD


def _fraction(v: Any) -> Any:
    return float(v) if _is_number(v) and 0 < v <= 1 else _BAD


def _text(v: Any) -> Any:
    return v.strip() if isinstance(v, str) and v.strip() else _BAD


def _kind(v: Any) -> Any:
    return v if v in KINDS else _BAD


def _vector_bits(v: Any) -> Any:
    # a power of two: vector widths (lanes = bits / element bits) must be powers of two
    return v if _is_int(v) and 64 <= v <= 2048 and v & (v - 1) == 0 else _BAD


def _clock(v: Any) -> Any:
    return float(v) if _is_number(v) and 0 < v <= MAX_CLOCK_GHZ else _BAD


def _capability(v: Any) -> Any:
    return v if isinstance(v, str) and re.fullmatch(r"\d+\.\d+", v) else _BAD


def _bool(v: Any) -> Any:
    return v if isinstance(v, bool) else _BAD


def _caches(v: Any) -> Any:  # element checks happen in _check_caches
    return v if isinstance(v, (list, tuple)) and len(v) > 0 else _BAD


def _cost_params(v: Any) -> Any:  # each parameter is checked by cost_params_from
    from .cost_params import CostParams
    return v if isinstance(v, (Mapping, CostParams)) else _BAD


_POS = "a positive integer"
RULES: Tuple[Rule, ...] = (
    Rule("name", "common", "a non-empty string", _text),
    Rule("kind", "common", "'cpu' or 'gpu'", _kind),
    Rule("description", "common", "a non-empty string", _text),
    Rule("clock_ghz", "common", f"a positive number of GHz, at most {MAX_CLOCK_GHZ:g} "
                                "(a clock in MHz?)", _clock),
    Rule("memory_bandwidth_gbs", "common", "a positive number (GB/s)", _pos_number),
    Rule("cores", "cpu", _POS, _pos_int),
    Rule("threads", "cpu", _POS, _pos_int),
    Rule("vector_bits", "cpu", "a power of two from 64 to 2048 (bits)", _vector_bits),
    Rule("caches", "cpu", "a non-empty list of cache levels", _caches),
    Rule("parallelism_threshold", "cpu", _POS, _pos_int),
    Rule("load_cost", "cpu", "a positive number", _pos_number),
    Rule("vector_multiple", "cpu", _POS, _pos_int),
    Rule("cache_for_tiles", "cpu", "a positive integer (a cache level)", _pos_int),
    Rule("heap_cache_bytes", "cpu", "a non-negative integer (bytes)", _nonneg_int,
         optional=True),
    Rule("compute_capability", "gpu", 'a string like "9.0" (quote it in YAML)', _capability),
    Rule("sm_count", "gpu", _POS, _pos_int),
    Rule("warp_size", "gpu", "a positive power of two", _pow2_int),
    Rule("max_threads_per_block", "gpu", _POS, _pos_int),
    Rule("max_threads_per_sm", "gpu", _POS, _pos_int),
    Rule("max_blocks_per_sm", "gpu", _POS, _pos_int),
    Rule("shared_mem_per_block_bytes", "gpu", _POS, _pos_int),
    Rule("shared_mem_per_sm_bytes", "gpu", _POS, _pos_int),
    Rule("registers_per_sm", "gpu", _POS, _pos_int),
    Rule("max_registers_per_thread", "gpu", _POS, _pos_int),
    Rule("register_allocation_unit", "gpu", _POS, _pos_int),
    Rule("l2_bytes", "gpu", _POS, _pos_int),
    Rule("occupancy_threshold", "gpu", "a number in (0, 1]", _fraction),
    Rule("launch_overhead_us", "gpu", "a non-negative number (microseconds)", _nonneg_number),
    Rule("warp_schedulers_per_sm", "gpu", _POS, _pos_int, optional=True),
    Rule("l1_bytes_per_cycle", "gpu", "a positive number (bytes an SM's L1 delivers a cycle)",
         _pos_number, optional=True),
    Rule("l2_bandwidth_gbs", "gpu", "a positive number (GB/s)", _pos_number, optional=True),
    Rule("dram_latency_cycles", "gpu", "a positive number (cycles)", _pos_number, optional=True),
    Rule("block_overhead_cycles", "gpu", "a non-negative number (cycles)", _nonneg_number,
         optional=True),
    Rule("barrier_cycles", "gpu", "a non-negative number (cycles)", _nonneg_number,
         optional=True),
    Rule("cost_params", "common", "a mapping of cost parameter names to values",
         _cost_params, optional=True),
)
_BY_NAME: Dict[str, Rule] = {r.name: r for r in RULES}

CACHE_RULES: Tuple[Rule, ...] = (
    Rule("level", "cache", _POS, _pos_int),
    Rule("size_bytes", "cache", _POS, _pos_int),
    Rule("shared", "cache", "true or false", _bool),
    Rule("line_bytes", "cache", "a positive power of two", _pow2_int),
)


def fields_for_kind(kind: str) -> List[str]:
    """The field names a spec of ``kind`` must have, in schema order."""
    return [r.name for r in RULES if r.group in ("common", kind)]


def is_optional(name: str) -> bool:
    """Whether field ``name`` may be left out of a spec."""
    rule = _BY_NAME.get(name)
    return bool(rule and rule.optional)


def _fail(source: str, field: str, expected: str, value: Any) -> SpecError:
    return SpecError(f"{source}: field '{field}': expected {expected}, got {value!r}")


def normalize(data: Any, source: str, *, warn: bool = True) -> Dict[str, Any]:
    """Validate ``data`` (a mapping) and return HardwareSpec keyword arguments.

    Checks, in order: the mapping itself, ``kind``, unknown fields, missing
    fields, each field's type and range, then relations between fields.
    """
    if not isinstance(data, Mapping):
        raise SpecError(f"{source}: expected a mapping of field names to values at the "
                        f"top level, got {type(data).__name__}")
    if "kind" not in data:
        raise SpecError(f"{source}: field 'kind' is missing: expected 'cpu' or 'gpu'")
    kind = data["kind"]
    if _kind(kind) is _BAD:
        raise _fail(source, "kind", _BY_NAME["kind"].expected, kind)
    allowed = fields_for_kind(kind)
    for key in data:
        if key not in allowed:
            raise _unknown(source, key, kind, allowed)
    out: Dict[str, Any] = {}
    for name in allowed:
        rule = _BY_NAME[name]
        if name not in data and rule.optional:
            out[name] = None
            continue
        if name not in data:
            raise SpecError(f"{source}: field '{name}' is missing: expected {rule.expected}")
        value = rule.check(data[name])
        if value is _BAD:
            raise _fail(source, name, rule.expected, data[name])
        out[name] = value
    out["cost_params"] = cost_params_from(kind, out["cost_params"], source)
    if kind == "cpu":
        out["caches"] = _check_caches(out["caches"], source, warn)
        _check_cpu(out, source)
    else:
        _check_gpu(out, source)
    return out


def _unknown(source: str, key: Any, kind: str, allowed: List[str]) -> SpecError:
    other = [r.name for r in RULES if r.group not in ("common", kind)]
    if key in other:
        return SpecError(f"{source}: field '{key}' is unknown in a {kind} spec: expected only "
                         f"{kind} fields (it belongs in a {'gpu' if kind == 'cpu' else 'cpu'} spec)")
    hint = difflib.get_close_matches(str(key), allowed, n=1)
    more = f" (did you mean '{hint[0]}'?)" if hint else ""
    return SpecError(f"{source}: field '{key}' is unknown{more}: expected one of the {kind} "
                     f"fields {', '.join(allowed)}")


def _check_caches(caches: Any, source: str, warn: bool = True) -> tuple:
    """Check each cache level and return a tuple of CacheLevel."""
    from .spec import CacheLevel

    names = [r.name for r in CACHE_RULES]
    levels = []
    for i, entry in enumerate(caches):
        where = f"caches[{i}]"
        if not isinstance(entry, Mapping):
            raise _fail(source, where, f"a mapping with fields {', '.join(names)}", entry)
        for key in entry:
            if key not in names:
                raise SpecError(f"{source}: field '{where}.{key}' is unknown: expected one of "
                                f"{', '.join(names)}")
        clean = {}
        for rule in CACHE_RULES:
            if rule.name not in entry:
                raise SpecError(f"{source}: field '{where}.{rule.name}' is missing: "
                                f"expected {rule.expected}")
            value = rule.check(entry[rule.name])
            if value is _BAD:
                raise _fail(source, f"{where}.{rule.name}", rule.expected, entry[rule.name])
            clean[rule.name] = value
        if not levels and clean["level"] != 1:
            raise _fail(source, f"{where}.level", "1 (the list starts at L1)", clean["level"])
        if levels and clean["level"] <= levels[-1].level:
            raise _fail(source, f"{where}.level",
                        f"a level above {levels[-1].level} (levels in increasing order)",
                        clean["level"])
        if clean["line_bytes"] > clean["size_bytes"]:
            raise _fail(source, f"{where}.line_bytes",
                        f"at most the cache's size_bytes ({clean['size_bytes']})",
                        clean["line_bytes"])
        if levels and clean["size_bytes"] < levels[-1].size_bytes:
            below = f"caches[{i - 1}].size_bytes ({levels[-1].size_bytes}, L{levels[-1].level})"
            if levels[-1].level == 1:    # no machine has a data L1 larger than its L2
                raise _fail(source, f"{where}.size_bytes", f"at least {below}",
                            clean["size_bytes"])
            # exclusive (victim) outer caches can be smaller than the level below
            if warn:
                warnings.warn(SpecWarning(
                    f"{source}: field '{where}.size_bytes': L{clean['level']} "
                    f"({clean['size_bytes']} bytes) is smaller than {below}; fine for an "
                    "exclusive cache, otherwise check the sizes (a shared cache's size_bytes "
                    "is its total)"), stacklevel=4)
        levels.append(CacheLevel(**clean))
    return tuple(levels)


def _check_cpu(out: Dict[str, Any], source: str) -> None:
    if out["threads"] < out["cores"]:
        raise _fail(source, "threads", f"at least cores ({out['cores']})", out["threads"])
    levels = [c.level for c in out["caches"]]
    if out["cache_for_tiles"] not in levels:
        raise _fail(source, "cache_for_tiles",
                    f"one of the cache levels {levels}", out["cache_for_tiles"])


def _check_gpu(out: Dict[str, Any], source: str) -> None:
    warp = out["warp_size"]
    for name in ("max_threads_per_block", "max_threads_per_sm"):
        if out[name] % warp:
            raise _fail(source, name, f"a multiple of warp_size ({warp})", out[name])
    pairs = (("max_threads_per_block", "max_threads_per_sm"),
             ("shared_mem_per_block_bytes", "shared_mem_per_sm_bytes"),
             ("max_registers_per_thread", "registers_per_sm"),
             ("register_allocation_unit", "registers_per_sm"))
    for small, big in pairs:
        if out[small] > out[big]:
            raise _fail(source, small, f"at most {big} ({out[big]})", out[small])
    if out["registers_per_sm"] % out["register_allocation_unit"]:
        raise _fail(source, "register_allocation_unit",
                    f"a divisor of registers_per_sm ({out['registers_per_sm']})",
                    out["register_allocation_unit"])
