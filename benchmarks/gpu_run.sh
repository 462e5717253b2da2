#!/bin/bash
# Measure the CUDA backend (the blur and the apps) on a real H100/H200. Not run in CI.
#
# Two phases, because the GPU machine has no nvcc and no pycuda, and the development
# machine has no GPU (docs/gpu.md explains the setup):
#
#   bash benchmarks/gpu_run.sh prepare      # development machine: pycuda wheel + cubins
#   bash benchmarks/gpu_run.sh run          # GPU machine, in the repository root
#
# With the device tool, phase 2 is one call that carries the two git-ignored folders:
#   run(command="bash benchmarks/gpu_run.sh run", carry=[".whl", "build/gpu_bench"],
#       kind="nvidia-h100-x1", timeout_s=600)
# and the results come back in $OUT/gpu_results.json (plus the printed table).
#
# Check the whole flow without a GPU (CPU shim, small sizes):
#   bash benchmarks/gpu_run.sh check
set -euo pipefail
cd "$(dirname "$0")/.."
PHASE=${1:-help}
PY=${PY:-python}                                 # the project's environment (phase 1)
SPEC=${SPEC:-h100}                               # H100 and H200 are both sm_90

case "$PHASE" in
prepare)
    # 1. pycuda for the GPU machine's Python 3.12, built against the toolkit with a stub
    #    driver (about 2 minutes); the CI stub it also makes must NOT go to that machine.
    PY312=${PY312:-$(ls -d "$(pyenv root 2>/dev/null || echo ~/.pyenv)"/versions/3.12*/bin/python3.12 | tail -1)}
    # the toolkit folder holding include/cuda.h (nvcc on the PATH may be a wrapper script)
    CUDA_ROOT=${CUDA_ROOT:-$(dirname "$(dirname "$(ls -d /usr/local/cuda*/include/cuda.h | tail -1)")")}
    TMPW=$(mktemp -d)
    CUDA_ROOT="$CUDA_ROOT" bash benchmarks/build_pycuda_wheel.sh "$PY312" "$TMPW"
    mkdir -p .whl && cp "$TMPW"/pycuda-*.whl .whl/ && rm -rf "$TMPW"
    # 2. the pure-Python (and cp312) wheels pycuda and tilesolve import there
    "$PY312" -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --no-deps -d .whl \
        pytools platformdirs siphash24 mako markupsafe typing_extensions networkx pyyaml
    # 3. lower + generate + nvcc -cubin (sm_90) every case, checked against the spec's limits
    "$PY" benchmarks/gpu_bench.py build --out build/gpu_bench --spec "$SPEC" --size paper
    du -sh .whl build/gpu_bench                  # must stay under 64 MiB together
    ;;
run)
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site:$PWD
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv || true
    python3 benchmarks/gpu_bench.py run --builds build/gpu_bench --json "${OUT:-.}/gpu_results.json"
    ;;
check)
    "$PY" benchmarks/gpu_bench.py build --out build/gpu_small --size small --apps blur,unsharp,harris
    "$PY" benchmarks/gpu_bench.py run --builds build/gpu_small --emulate
    ;;
*)
    sed -n '2,16p' "$0"; exit 2 ;;
esac
