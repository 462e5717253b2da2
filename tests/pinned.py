"""A CPU spec built in the tests, so that every decision a test checks is the same on
every machine (the detected ``host`` spec depends on the machine the tests run on)."""
import dataclasses

from tilesolve.specs import load_spec
from tilesolve.specs.spec import CacheLevel


def pinned_cpu(l2_bytes: int = 1 << 20, vector_bits: int = 512, cores: int = 2):
    """A ``vector_bits``-wide CPU of ``cores`` cores (one thread each) with an
    ``l2_bytes`` L2 a core, a 48 KiB L1 and a shared 32 MiB L3."""
    base = load_spec("xeon-e5-2620v3")
    caches = (CacheLevel(1, 48 << 10, False, 64), CacheLevel(2, l2_bytes, False, 64),
              CacheLevel(3, 32 << 20, True, 64))
    return dataclasses.replace(base, name=f"pinned-{vector_bits}b", vector_bits=vector_bits,
                               cores=cores, threads=cores, parallelism_threshold=2 * cores,
                               caches=caches, description="a CPU pinned by the tests")


PINNED = pinned_cpu()
