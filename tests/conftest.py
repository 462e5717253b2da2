"""Test configuration: Hypothesis profiles and shared helpers.

Profiles: ``ci`` (bounded, the default under CI), ``dev`` (default locally)
and ``fuzz`` (thousands of examples: ``pytest --hypothesis-profile=fuzz``).
"""
import os

from hypothesis import HealthCheck, settings

_common = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                     HealthCheck.data_too_large])
settings.register_profile("ci", max_examples=25, derandomize=True, **_common)
settings.register_profile("dev", max_examples=60, **_common)
settings.register_profile("fuzz", max_examples=1000, **_common)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
