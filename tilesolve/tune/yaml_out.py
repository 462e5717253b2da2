"""The calibrated spec as YAML, each value with a comment saying where it came from.

``spec_yaml(...)`` returns ``(text, spec)``: the final spec (name ``host`` for a
CPU base, a description saying when it was calibrated) and its YAML, fields in
schema order as ``spec_to_yaml`` writes them, plus a comment per field (measured,
fitted, detected or kept from the base, and how) and a header with the machine
line that ``load_spec("host")`` checks, the fit summary, the fitted scale and the
microbenchmarks that have no field of their own.
"""
from __future__ import annotations

from typing import Dict, List

import yaml

__all__ = ["spec_yaml"]

_COLUMN = 34


def _dump(key: str, value) -> str:
    return yaml.safe_dump({key: value}, sort_keys=False, allow_unicode=True,
                          width=1000).strip()


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _field_comments(base, new, detected: bool, micro, fit, pipelines: int) -> Dict[str, str]:
    src = "detected" if detected else f"from base spec {base.name}"
    c: Dict[str, str] = {k: f"{src}, not measured" for k in new.to_dict()}
    c["name"] = "calibrated host spec" if new.is_cpu else f"from base spec {base.name}"
    c["kind"] = src
    c["description"] = "written by tilesolve calibrate"
    c["caches"] = "levels and sizes detected; bandwidth of one core measured per level"
    c["clock_ghz"] = (f"{src} (cpufreq maximum or /proc/cpuinfo), not measured" if detected
                      else f"{src}, not measured")
    if new.is_gpu:
        from .gpu_micro import GPU_FIELDS
        for field_, name in GPU_FIELDS:
            m = micro.items.get(name)
            c[field_] = (m.how if m is not None and m.measured else
                         f"kept from base spec {base.name}; " + (m.how if m is not None
                                                                  else "not measured"))
        return c
    bw = micro.items.get("memory_bandwidth_gbs")
    if bw is not None and bw.measured:
        c["memory_bandwidth_gbs"] = f"measured: {bw.how}"
    if detected:
        c["cores"] = "detected (sysfs topology)"
        c["threads"] = "detected (CPUs this process may use)"
        c["vector_bits"] = "detected (CPU flags)"
    vec, sca = micro.get("vector_ns_per_op"), micro.get("scalar_ns_per_op")
    if vec and sca:
        c["vector_bits"] += (f"; measured one core: {vec:.3g} ns/op vectorized, {sca:.3g} "
                             f"without vectorize ({sca / vec:.1f}x)")
    task, loop = micro.get("parallel_task_us"), micro.get("parallel_loop_us")
    c["parallelism_threshold"] = f"{src if not detected else '2 x threads (detected)'}"
    if task is not None and loop is not None:
        c["parallelism_threshold"] += (f"; measured parallel overhead {task:.3g} us per task, "
                                       f"{loop:.3g} us per parallel loop")
    c["vector_multiple"] = f"{'tilesolve default' if detected else src}, not fitted"
    c["cache_for_tiles"] = f"{'tilesolve default' if detected else src}, not fitted"
    c["load_cost"] = _load_cost_comment(base, fit, pipelines, micro)
    c["cost_params"] = "the cost model's parameters that differ from its defaults"
    streams = micro.items.get("stream_miss_loads")
    if streams is not None:
        c["cost_params.stream_miss_loads"] = streams.how
    return c


def _load_cost_comment(base, fit, pipelines: int, micro) -> str:
    hint = ""
    bw, vec = micro.get("memory_bandwidth_gbs"), micro.get("vector_ns_per_op")
    if bw and vec:
        # one 4-byte word from memory over the whole machine vs one vector op on every core
        est = (4.0 / bw) / (vec / (base.threads or 1))
        hint = f"; microbenchmarks alone suggest {est:.3g}"
    if fit is None:
        return f"kept from base spec {base.name}: nothing was fitted{hint}"
    errs = (f"log-error {fit.log_error_before:.2f} -> {fit.log_error_after:.2f}, Spearman "
            f"{fit.spearman_before:.2f} -> {fit.spearman_after:.2f}")
    if "load_cost" in fit.fitted and not fit.applied:
        from .calibrate import LOAD_COST_NOT_APPLIED
        return (f"kept from base ({base.load_cost:g}); the training pipelines ({fit.n_samples} "
                f"samples of {pipelines}) are best explained by {fit.load_cost_after:.4g} "
                f"({errs}), not applied: {LOAD_COST_NOT_APPLIED} (calibrate "
                f"--fit-load-cost applies it){hint}")
    if "load_cost" in fit.fitted:
        span = ""
        if fit.load_cost_range:
            lo, hi = fit.load_cost_range
            span = f", within 5 % of the best error from {lo:.3g} to {hi:.3g}"
        return (f"fitted to {fit.n_samples} samples of {pipelines} random pipelines, "
                f"{errs}{span}{hint}")
    why = "; ".join(n.replace("load_cost kept: ", "") for n in fit.notes) or \
        "the data do not support a fit"
    return f"kept from base ({base.load_cost:g}): {why}; {errs}{hint}"


def _cache_comments(new, micro) -> List[str]:
    by_name = {m.name: m for m in micro.cache_levels}
    out = []
    for c in new.caches:
        m = by_name.get(f"L{c.level}")
        text = "detected (sysfs)"
        if m is not None:
            text += (f"; measured {m.value:g} GB/s: {m.how}" if m.measured else f"; {m.how}")
        out.append(text)
    return out


def _header(base, new, detected, micro, fit, pipelines, quick, stamp, machine) -> List[str]:
    from ..specs.host import FINGERPRINT_PREFIX
    mode = "--quick" if quick else "full"
    lines = [f"# tilesolve hardware spec '{new.name}' ({new.kind}); fields: see SCHEMA.md",
             f"# Calibrated by `tilesolve calibrate` ({mode}) on {stamp}, from "
             f"{'the detected host' if detected else 'base spec ' + base.name}.",
             "# As host.yaml in the spec cache directory (TILESOLVE_CACHE_DIR) it is what",
             "# load_spec('host') returns on the machine named here:",
             f"{FINGERPRINT_PREFIX}{machine}"]
    if fit is not None:
        lines.append(f"# fit: {_one_line(fit.summary())}")
        lines.append(f"# ms_per_cost_unit: {fit.scale_ms_per_unit:.4g}  (fitted scale: "
                     "predicted cost x this = milliseconds here; not a spec field)")
    lines.append("# microbenchmarks (realize() call overhead subtracted; other load on the "
                 "machine inflates them):")
    beyond = [m for m in micro.cache_levels if not m.name.startswith("L")]
    for m in list(micro.items.values()) + beyond:
        value = f"{m.value:g} {m.unit}" if m.measured else "not measured"
        name = f"{m.name}_sweep_gbs" if m in beyond else m.name
        lines.append(f"#   {name}: {value} ({_one_line(m.how)})")
    return lines


def spec_yaml(base, new, *, detected: bool, micro, fit, pipelines: int, quick: bool,
              stamp: str, machine: str):
    """(YAML text, final spec) for the calibrated ``new`` made from ``base``."""
    if new.is_cpu:
        head = base.description.split(" (detected")[0].split(" (calibrated")[0]
        new = new.replace(name="host", description=_one_line(
            f"{head} (calibrated {stamp}{', quick' if quick else ''})"))
    comments = _field_comments(base, new, detected, micro, fit, pipelines)
    lines = _header(base, new, detected, micro, fit, pipelines, quick, stamp, machine)
    for key, value in new.to_dict().items():
        if key == "caches":
            lines.append(f"caches:  # {comments.get('caches', '')}".rstrip())
            for level, note in zip(value, _cache_comments(new, micro)):
                flow = yaml.safe_dump(level, default_flow_style=True, sort_keys=False,
                                      width=1000).strip()
                lines.append(f"  - {flow}  # {_one_line(note)}")
            continue
        if key == "cost_params":
            lines.append(f"cost_params:  # {comments['cost_params']}")
            for name, v in value.items():
                dumped = "  " + _dump(name, v)
                note = comments.get(f"cost_params.{name}", f"from base spec {base.name}")
                lines.append(f"{dumped:<{_COLUMN}}  # {_one_line(note)}")
            continue
        dumped = _dump(key, value)
        note = comments.get(key)
        lines.append(f"{dumped:<{_COLUMN}}  # {_one_line(note)}" if note else dumped)
    return "\n".join(lines) + "\n", new
