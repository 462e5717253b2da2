"""Benchmark: a uint16 3x3 blur from a zarr store to a zarr store on a Dask LocalCluster.

    python benchmarks/dask_blur.py [--size 20000] [--chunk 2000] [--workers 2] [--dir D]
                                   [--store to_zarr|tilesolve]

The input (``size + 2`` squared, uint16: 800 MB at the default size) is written to
``D/in.zarr`` band by band, so this process never holds it either.  The blur (Halide's
``apps/blur`` with its hand schedule, no boundary condition) runs with
``ts.distributed.to_dask`` and ``to_zarr`` (or ``ts.distributed.store`` into a zarr
array of the same chunks: ``--store tilesolve``); each worker's peak RSS and peak data held
(Dask's managed memory plus the largest task's slices and output) are sampled.  Bands
of the result are checked against the app's numpy reference.  Not a test; the same
case runs as ``tests/test_distributed.py::test_zarr_to_zarr_20000_squared`` when
``TILESOLVE_BIG_DASK=1``.
"""
from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np

import tilesolve as ts


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=20000, help="output width = height")
    p.add_argument("--chunk", type=int, default=2000, help="chunk side, input and output")
    p.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes")
    p.add_argument("--dir", default=None, help="where the zarr stores go (default: a temp dir)")
    p.add_argument("--store", choices=("to_zarr", "tilesolve"), default="to_zarr",
                   help="write with Dask's to_zarr, or with tilesolve.distributed.store")
    args = p.parse_args(argv)

    import dask.array as da
    import distributed
    import zarr

    import tilesolve.distributed as tsd
    from tilesolve.apps import blur
    from tilesolve.distributed.worker import start_memory_sampler, stop_memory_sampler

    n, chunk = args.size, args.chunk
    where = args.dir or tempfile.mkdtemp(prefix="tilesolve-dask-")
    rng = np.random.default_rng(0)
    t = time.perf_counter()
    src = zarr.open_array(f"{where}/in.zarr", mode="w", shape=(n + 2, n + 2),
                          chunks=(chunk, chunk), dtype="uint16")
    for i in range(0, n + 2, chunk):
        src[i:i + chunk] = rng.integers(0, 2 ** 16, (min(chunk, n + 2 - i), n + 2),
                                        dtype=np.uint16)
    print(f"input {src.shape} uint16 ({src.nbytes / 2 ** 20:.0f} MB) written in "
          f"{time.perf_counter() - t:.1f} s to {where}")

    pipe, _ = blur.build([n, n], dtype="uint16")
    fast = ts.compile(pipe, blur.hand_schedule(pipe), num_threads=1)
    cluster = distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                       dashboard_address=None, silence_logs=40)
    client = distributed.Client(cluster)
    try:
        out = tsd.to_dask(fast, [n, n], chunks=(chunk, chunk),
                          input=da.from_zarr(f"{where}/in.zarr"))
        tsd.warm_up(client, out)
        client.run(start_memory_sampler)
        t = time.perf_counter()
        if args.store == "tilesolve":
            z = zarr.open_array(f"{where}/out.zarr", mode="w", shape=out.shape,
                                chunks=(chunk, chunk), dtype=out.dtype)
            tsd.store(out, z)
        else:
            out.to_zarr(f"{where}/out.zarr", overwrite=True)
        dt = time.perf_counter() - t
        peaks = client.run(stop_memory_sampler)
    finally:
        client.close()
        cluster.close()
    print(f"blur {n}x{n} zarr -> zarr ({args.store}): {dt:.2f} s, {n * n / dt / 1e6:.0f} Mpx/s, "
          f"{args.workers} workers, {len(out.__dask_keys__()) * len(out.__dask_keys__()[0])} "
          "chunks")
    for w, pk in peaks.items():
        print(f"  {w}: peak RSS {pk['rss'] / 2 ** 20:.0f} MB (at start "
              f"{pk['rss_start'] / 2 ** 20:.0f}), data held {pk['managed'] / 2 ** 20:.0f} MB "
              f"+ largest task {pk['task'] / 2 ** 20:.0f} MB; image {src.nbytes / 2 ** 20:.0f} MB")
    res = zarr.open_array(f"{where}/out.zarr", mode="r")
    for i in (0, n // 2, n - 100):
        band = src[i:i + 102]
        want = blur.numpy_reference({"input": band}, [n, 100], dtype="uint16")
        if not np.array_equal(res[i:i + 100], want):
            print(f"MISMATCH in rows {i}..{i + 99}")
            return 1
    print("bands checked against numpy: ok")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
