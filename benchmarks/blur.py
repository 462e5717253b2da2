"""Benchmark: the 3x3 box blur (repeat_edge) compiled by tilesolve vs numpy vs bandwidth.

    python benchmarks/blur.py [--size 6400x4800] [--repeats 9]
                                             [--threads N] [--tiles 256x32,128x64]

Everything is measured in one run on this machine: the copy bandwidth
(``dst[:] = src`` on 256 MiB, read + written bytes), plain numpy, the naive default
schedule, and the hand schedule (Halide's classic)::

    s[blur_y].tile(x, y, xo, yo, xi, yi, TX, TY).parallel(yo).vectorize(xi, 16)
    s[blur_x].compute_at(blur_y, xo).vectorize(x, 16)

for a few tile sizes.  Times are min and median of ``--repeats`` runs writing into a
preallocated output (``out=``); the hand schedule is also timed with a fresh output per
call (page faults included).  The bandwidth bound is (bytes in + bytes out) / copy
bandwidth.  Compile times: cold (empty cache dir) and cached (same dir, new compile).
This is not a test: nothing is asserted except that the results match numpy.
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np

import tilesolve as ts


def blur_pipeline():
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    clamped = ts.boundary.repeat_edge(inp)
    blur_x, blur_y = ts.Func("blur_x"), ts.Func("blur_y")
    blur_x[x, y] = (clamped[x - 1, y] + clamped[x, y] + clamped[x + 1, y]) / 3
    blur_y[x, y] = (blur_x[x, y - 1] + blur_x[x, y] + blur_x[x, y + 1]) / 3
    return ts.Pipeline(blur_y), blur_x, blur_y, x, y


def hand_schedule(pipe, blur_x, blur_y, x, y, tx: int, ty: int):
    s = ts.Schedule(pipe)
    xo, yo, xi, yi = ts.Var("xo"), ts.Var("yo"), ts.Var("xi"), ts.Var("yi")
    s[blur_y].tile(x, y, xo, yo, xi, yi, tx, ty).parallel(yo).vectorize(xi, 16)
    s[blur_x].compute_at(blur_y, xo).vectorize(x, 16)
    return s


def numpy_blur(a: np.ndarray) -> np.ndarray:
    third = np.float32(3)
    p = np.pad(a, 1, mode="edge")
    bx = (p[:, :-2] + p[:, 1:-1] + p[:, 2:]) / third
    return (bx[:-2] + bx[1:-1] + bx[2:]) / third


def timed(fn, repeats: int) -> tuple[float, float]:
    fn()                                   # warm up (page faults, caches, thread pool)
    ts_ = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        ts_.append(time.perf_counter() - t)
    return min(ts_), statistics.median(ts_)


def copy_bandwidth(repeats: int) -> float:
    src = np.ones(64 * 1024 * 1024, np.float32)          # 256 MiB
    dst = np.empty_like(src)

    def run():
        dst[:] = src
    best, _ = timed(run, repeats)
    return 2 * src.nbytes / best


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="6400x4800")
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--tiles", default="256x32,128x64,256x64,512x32,64x128")
    args = ap.parse_args(argv)
    w, h = (int(v) for v in args.size.split("x"))
    tiles = [tuple(int(v) for v in t.split("x")) for t in args.tiles.split(",")]
    rng = np.random.default_rng(0)
    img = rng.random((h, w), dtype=np.float32)
    want = numpy_blur(img)
    io_bytes = 2 * img.nbytes

    bw = copy_bandwidth(args.repeats)
    bound = io_bytes / bw
    rows = []

    def report(name, best, med, extra=""):
        rows.append((name, best, med))
        print(f"{name:<28} min {best * 1e3:8.2f} ms  median {med * 1e3:8.2f} ms  "
              f"x{best / bound:5.2f} of bound{extra}", flush=True)

    print(f"blur {w}x{h} float32, {args.repeats} runs; copy bandwidth {bw / 1e9:.2f} GB/s, "
          f"bandwidth bound {bound * 1e3:.2f} ms ({io_bytes / 1e6:.0f} MB in+out); "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    np_best, np_med = timed(lambda: numpy_blur(img), args.repeats)
    report("numpy", np_best, np_med)

    pipe, blur_x, blur_y, x, y = blur_pipeline()
    out = np.empty_like(want)
    with tempfile.TemporaryDirectory() as cache:
        t = time.perf_counter()
        naive = ts.compile(pipe, num_threads=args.threads, cache_dir=cache)
        cold_naive = time.perf_counter() - t
        naive.realize([w, h], input=img, out=out)
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
        best, med = timed(lambda: naive.realize([w, h], input=img, out=out), args.repeats)
        report("naive (default schedule)", best, med, f"  numpy/naive {np_best / best:5.2f}")

        results = []
        for tx, ty in tiles:
            sched = hand_schedule(pipe, blur_x, blur_y, x, y, tx, ty)
            t = time.perf_counter()
            c = ts.compile(pipe, sched, num_threads=args.threads, cache_dir=cache)
            cold = time.perf_counter() - t
            t = time.perf_counter()
            c = ts.compile(pipe, sched, num_threads=args.threads, cache_dir=cache)
            warm = time.perf_counter() - t
            assert c.cache_hit
            out[...] = 0
            c.realize([w, h], input=img, out=out)
            np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
            best, med = timed(lambda: c.realize([w, h], input=img, out=out), args.repeats)
            report(f"hand {tx}x{ty}", best, med,
                   f"  numpy/hand {np_best / best:5.2f}  compile cold {cold:.2f} s, "
                   f"cached {warm:.2f} s")
            results.append((best, (tx, ty), c))
        best, (tx, ty), c = min(results, key=lambda r: r[0])
        fb, fm = timed(lambda: c.realize([w, h], input=img), args.repeats)
        report(f"hand {tx}x{ty}, fresh output", fb, fm)
    print(f"\nbest hand schedule {tx}x{ty}: {best * 1e3:.2f} ms = {np_best / best:.2f}x faster "
          f"than numpy, {best / bound:.2f}x the bandwidth bound; naive compile cold "
          f"{cold_naive:.2f} s; threads {c.num_threads}; notes: {list(c.notes) or 'none'}; "
          f"load average now {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
