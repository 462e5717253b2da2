"""The runtime's heap (backend/cpu/heap.py): large blocks kept between realizations.

Checked: a freed large block serves the next request of a fitting size and nothing
else; small blocks, a full cache and the byte limit go back to the C library; threads
never get the same block; compiled pipelines that reuse a block (holding the values of
an earlier run) still equal the reference.
"""
import ctypes
import threading

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.backend.cpu import heap

MB = 1 << 20


@pytest.fixture
def cache():
    heap.install()
    heap.release()
    old = heap.set_limit(64 * MB)
    yield heap
    heap.set_limit(old)
    heap.release()


def test_a_freed_large_block_serves_the_next_request(cache):
    a = cache.raw_alloc(4 * MB)
    assert a and a % 64 == 0
    assert cache.held_bytes() == 0
    cache.raw_free(a)
    assert cache.held_bytes() == 4 * MB
    b = cache.raw_alloc(3 * MB)          # 3 MB <= 4 MB <= 2 x 3 MB: taken
    assert b == a
    assert cache.held_bytes() == 0
    cache.raw_free(b)


def test_blocks_of_the_wrong_size_are_not_handed_out(cache):
    a = cache.raw_alloc(4 * MB)
    cache.raw_free(a)
    big = cache.raw_alloc(5 * MB)        # larger than the block
    small = cache.raw_alloc(1 * MB)      # under half of it
    assert a not in (big, small)
    assert cache.held_bytes() == 4 * MB
    for p in (big, small):
        cache.raw_free(p)


def test_small_blocks_go_back_to_the_c_library(cache):
    p = cache.raw_alloc(heap.MIN_CACHED_BYTES - 64)
    cache.raw_free(p)
    assert cache.held_bytes() == 0


def test_the_byte_limit_keeps_the_newest_blocks(cache):
    cache.set_limit(5 * MB)
    blocks = [cache.raw_alloc(n * MB) for n in (2, 2, 3)]
    for p in blocks:
        cache.raw_free(p)
    assert cache.held_bytes() == 5 * MB          # the first 2 MB block made room
    assert cache.raw_alloc(3 * MB) == blocks[2]
    cache.raw_free(blocks[2])
    huge = cache.raw_alloc(6 * MB)               # over the limit alone: not kept
    cache.raw_free(huge)
    assert cache.held_bytes() == 5 * MB


def test_full_slots_keep_the_newest_block(cache):
    small = [cache.raw_alloc(1 * MB) for _ in range(heap.SLOTS + 3)]
    for p in small:
        cache.raw_free(p)
    assert cache.held_bytes() == heap.SLOTS * MB
    big = cache.raw_alloc(8 * MB)
    cache.raw_free(big)
    assert cache.held_bytes() == (heap.SLOTS - 1) * MB + 8 * MB
    assert cache.raw_alloc(8 * MB) == big        # what a run frees, the next one finds
    cache.raw_free(big)
    assert cache.release() == (heap.SLOTS - 1) * MB + 8 * MB
    assert cache.held_bytes() == 0


def test_limit_zero_turns_the_cache_off(cache):
    cache.set_limit(0)
    a = cache.raw_alloc(4 * MB)
    cache.raw_free(a)
    assert cache.held_bytes() == 0


def test_a_lower_limit_releases_what_is_over_it(cache):
    a = cache.raw_alloc(4 * MB)
    cache.raw_free(a)
    assert cache.set_limit(2 * MB) == 64 * MB
    assert cache.held_bytes() == 0


def test_impossible_sizes_fail_cleanly(cache):
    assert cache.raw_alloc(2 ** 63 - 10) == 0
    cache.raw_free(0)                            # null is ignored


def test_limit_from_env():
    assert heap.limit_from_env({}) == heap.default_limit()
    ram = heap.os.sysconf("SC_PHYS_PAGES") * heap.os.sysconf("SC_PAGE_SIZE")
    assert heap.default_limit() == min(heap.DEFAULT_LIMIT_MB * MB, ram // 8)
    assert heap.limit_from_env({"TILESOLVE_HEAP_CACHE_MB": "0"}) == 0
    assert heap.limit_from_env({"TILESOLVE_HEAP_CACHE_MB": " 12 "}) == 12 * MB
    for bad in ("x", "-1", "1.5"):
        with pytest.raises(ValueError, match="TILESOLVE_HEAP_CACHE_MB"):
            heap.limit_from_env({"TILESOLVE_HEAP_CACHE_MB": bad})
    with pytest.raises(ValueError, match="non-negative"):
        heap.set_limit(-1)


def test_threads_never_share_a_block(cache):
    errors = []

    def work(tid):
        rng = np.random.default_rng(tid)
        for _ in range(300):
            n = int(rng.integers(1, 4)) * MB
            p = cache.raw_alloc(n)
            if not p:
                errors.append("alloc failed")
                return
            words = (ctypes.c_int64 * (n // 8)).from_address(p)
            words[0] = words[-1] = tid
            for _ in range(50):                  # give the others time to interleave
                pass
            if words[0] != tid or words[-1] != tid:
                errors.append(f"thread {tid}: block {p:#x} written by {words[0]}/{words[-1]}")
            cache.raw_free(p)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert cache.held_bytes() <= 64 * MB


def _root_pipeline():
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    src = ts.boundary.repeat_edge(inp)
    f = ts.Func("f")
    f[x, y] = src[x, y] * 2.0 + 1.0
    g = ts.Func("g")
    g[x, y] = f[x - 1, y] + f[x + 1, y + 1]
    pipe = ts.Pipeline(g)
    s = ts.Schedule(pipe)
    s[f].compute_root().parallel(y).vectorize(x, 8)
    s[g].parallel(y).vectorize(x, 8)
    return pipe, s


def test_pipelines_reusing_a_cached_block_equal_the_reference(cache):
    pipe, sched = _root_pipeline()
    c = ts.compile(pipe, sched)
    sizes = [700, 600]                           # f: 702 x 601 float32, 1.6 MB
    rng = np.random.default_rng(3)
    for _ in range(3):                           # later runs reuse the block of the first
        a = rng.standard_normal((600, 700)).astype(np.float32)
        got = c.realize(sizes, input=a)
        want = ts.reference.realize(pipe, sizes, input=a)
        np.testing.assert_array_equal(got, want)
        assert cache.held_bytes() >= 702 * 601 * 4
    assert ts.release_memory() >= 702 * 601 * 4
    assert cache.held_bytes() == 0


def test_glibc_thresholds_are_fixed_unless_the_environment_rules(cache):
    """Per-tile buffers under the cache's size come from glibc's arenas: install()
    fixes its mmap and trim thresholds, unless turned off or set by the user."""
    if heap._libc() is None:
        pytest.skip("no glibc mallopt in this process (not glibc)")
    assert heap.tune_malloc({}) is True
    assert heap.tune_malloc({"TILESOLVE_MALLOC_TUNING": "0"}) is False
    assert heap.tune_malloc({"MALLOC_MMAP_THRESHOLD_": "131072"}) is False
    assert heap.tune_malloc({"MALLOC_TRIM_THRESHOLD_": "1"}) is False
    # blocks under the mmap threshold are reused from the arena: freeing and taking
    # one of 256 KB again faults no new pages in
    import resource
    libc = heap._libc()
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    p = libc.malloc(256 << 10)
    ctypes.memset(p, 1, 256 << 10)
    libc.free(p)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        q = libc.malloc(256 << 10)
        ctypes.memset(q, 2, 256 << 10)
        libc.free(q)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before < 20
