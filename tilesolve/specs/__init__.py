"""Hardware specs: what the scheduler knows about the target machine.

A :class:`HardwareSpec` is loaded from a YAML file (one per device ships in
``data/``; the schema is in ``SCHEMA.md``), detected on the host, or built by
hand; it is immutable and validated, and a bad spec raises
:class:`~tilesolve.errors.SpecError` naming the file, the field and what was
expected.

    >>> from tilesolve.specs import load_spec
    >>> spec = load_spec("h100")
    >>> spec.sm_count, spec.is_gpu
    (132, True)
"""
from .cli import main_specs
from .host import detect_host, measure_memory_bandwidth
from .loader import (calibrated_host, default_cache_dir, list_specs, load_spec,
                     require_kind, spec_from_yaml, spec_to_yaml)
from .spec import CacheLevel, HardwareSpec

__all__ = [
    "HardwareSpec", "CacheLevel", "load_spec", "list_specs", "spec_to_yaml",
    "spec_from_yaml", "require_kind", "detect_host", "measure_memory_bandwidth",
    "default_cache_dir", "calibrated_host", "main_specs",
]
