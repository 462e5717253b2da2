#!/bin/bash
# Measure the CUDA backend (the blur and the apps) on a real H100/H200. Not run in CI.
#
# Two phases, because the GPU machine has no nvcc and no pycuda, and the development
# machine has no GPU (docs/gpu.md explains the setup):
#
#   bash benchmarks/gpu_run.sh prepare      # development machine: pycuda wheel, cubins,
#                                           # Halide repacked for the GPU machine's Python
#   bash benchmarks/gpu_run.sh run          # GPU machine, in the repository root
#
# Phase 2 needs the three git-ignored folders .whl, build/gpu_bench and .hl copied beside
# the work tree (under 64 MiB together with it: move benchmarks/results aside if needed).
# It writes gpu_results.json (ours: device and host ms per realize), gpu_host.json (host
# time per realize, the interpreted host plan against the prepared one), halide_gpu.json
# (Halide's Li2018 and Anderson2021 on the same GPU) and h100_calibrated.yaml (the spec
# with the launch overhead and copy bandwidth measured there) into $OUT (default:
# build/gpu_out), plus the printed tables.
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
    "$PY" benchmarks/gpu_bench.py build --out build/gpu_bench --spec "$SPEC" --size paper \
        --schedules solver,solver_plain,solver_scalar,solver_staged,solver_registers,gpu_root,hand,hand_vector \
        --fma
    # 4. Halide 21 for Python 3.12, without what JIT needs not (headers, CMake files, the
    #    CPU-only autoschedulers), xz-compressed: 165 MB of libHalide.so become about 45 MB
    TMPH=$(mktemp -d)
    "$PY312" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 -d "$TMPH" "halide==21.*"
    (cd "$TMPH" && unzip -q halide-*.whl && cd halide && rm -rf include share bin lib*/cmake \
        lib*/*.a lib*/libautoschedule_adams2019.so lib*/libautoschedule_mullapudi2016.so)
    mkdir -p .hl && tar -C "$TMPH" -cf - halide | xz -9 -T0 > .hl/halide312.tar.xz && rm -rf "$TMPH"
    du -sh .whl build/gpu_bench .hl              # must stay under 64 MiB with the work tree
    ;;
run)
    OUT=${OUT:-build/gpu_out}; mkdir -p "$OUT"
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl
    if ls .hl/halide*.tar.xz >/dev/null 2>&1; then tar -xJf .hl/halide*.tar.xz -C /tmp/site; fi
    export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv || true
    # ours: every build, checked against the numpy reference (cached for Halide's runs),
    # the solver's schedules first; nothing starts after BENCH_DEADLINE seconds
    timeout "${BENCH_TIMEOUT:-900}" python3 benchmarks/gpu_bench.py run --builds build/gpu_bench \
        --json "$OUT/gpu_results.json" --deadline "${BENCH_DEADLINE:-600}" || true
    # host time per realize of the solver's schedules: interpreted plan vs prepared plan
    timeout "${HOST_TIMEOUT:-240}" python3 benchmarks/gpu_host.py --builds build/gpu_bench \
        --device pycuda --json "$OUT/gpu_host.json" || true
    # the GPU's launch overhead and copy bandwidth, written into a calibrated spec
    timeout "${CAL_TIMEOUT:-120}" python3 -c 'import sys; from tilesolve.cli import main; sys.exit(main())' \
        calibrate --base "$SPEC" --quick --out "$OUT/${SPEC}_calibrated.yaml" || true
    # Halide's GPU autoschedulers on the same GPU, the same inputs and references
    if python3 -c 'import halide' 2>/dev/null; then
        timeout "${HALIDE_TIMEOUT:-900}" python3 benchmarks/gpu_halide.py \
            --json "$OUT/halide_gpu.json" --autoschedulers "${HALIDE_AUTOSCHEDULERS:-li2018,anderson2021}" \
            --search-timeout "${SEARCH_TIMEOUT:-60}" --deadline "${HALIDE_DEADLINE:-300}" || true
    fi
    ;;
check)
    "$PY" benchmarks/gpu_bench.py build --out build/gpu_small --size small --apps blur,unsharp,harris
    "$PY" benchmarks/gpu_bench.py run --builds build/gpu_small --emulate
    "$PY" benchmarks/gpu_host.py --builds build/gpu_small --repeats 20
    ;;
*)
    sed -n '2,20p' "$0"; exit 2 ;;
esac
