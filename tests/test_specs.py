"""Tests of tilesolve.specs: shipped specs, host detection, validation, CLI."""
import dataclasses
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tilesolve.errors import SpecError
from tilesolve.specs import (CacheLevel, HardwareSpec, list_specs, load_spec, main_specs,
                             require_kind, spec_from_yaml, spec_to_yaml)
from tilesolve.specs import host as host_mod
from tilesolve.specs.schema import RULES, fields_for_kind

SPECS_DIR = Path(__file__).resolve().parents[1] / "tilesolve" / "specs"
SHIPPED = ["a100", "agx-xavier", "cortex-a57", "h100", "h200", "k40", "rtx-2080-ti", "v100",
           "xeon-e5-2620v3"]


# --- shipped specs ----------------------------------------------------------------------

def test_list_specs_names_every_shipped_file_and_host():
    assert list_specs(include_host=False) == SHIPPED
    assert list_specs() == SHIPPED + ["host"]


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_spec_validates_and_round_trips(name, tmp_path):
    spec = load_spec(name)
    assert spec.name == name and spec.source == f"{name}.yaml"
    other = "cpu" if spec.is_gpu else "gpu"
    for field in fields_for_kind(other):
        if field not in fields_for_kind(spec.kind):
            assert getattr(spec, field) is None, field
    text = spec_to_yaml(spec)
    path = tmp_path / f"{name}-copy.yaml"
    path.write_text(text)
    again = load_spec(path)
    assert again == spec and again.source == str(path)
    assert spec_from_yaml(text) == spec
    assert load_spec(name.upper()) is spec  # cached, case-insensitive


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_values_carry_a_source_comment(name):
    bare = {"name", "kind", "description", "compute_capability", "caches"}
    for line in (SPECS_DIR / "data" / f"{name}.yaml").read_text().splitlines():
        if line and not line.startswith(("#", " ")):
            field = line.split(":", 1)[0]
            assert field in bare or "#" in line, f"{name}.yaml: {field} has no source comment"


def test_shipped_values_match_published_figures():
    h100, k40, turing = load_spec("h100"), load_spec("k40"), load_spec("rtx-2080-ti")
    assert (h100.sm_count, h100.compute_capability, h100.max_blocks_per_sm) == (132, "9.0", 32)
    assert h100.shared_mem_per_sm_bytes == 228 * 1024 and h100.l2_bytes == 50 * 2**20
    assert (k40.sm_count, k40.max_blocks_per_sm, k40.compute_capability) == (15, 16, "3.5")
    assert (turing.max_threads_per_sm, turing.max_blocks_per_sm) == (1024, 16)
    assert load_spec("a100").max_blocks_per_sm == 32
    xeon = load_spec("xeon-e5-2620v3")
    assert (xeon.cores, xeon.threads, xeon.vector_bits) == (6, 12, 256)
    assert [c.level for c in xeon.caches] == [1, 2, 3] and xeon.caches[2].shared


def test_schema_md_documents_every_field():
    doc = (SPECS_DIR / "SCHEMA.md").read_text()
    for rule in RULES:
        assert f"`{rule.name}`" in doc, rule.name
    for sub in ("level", "size_bytes", "shared", "line_bytes"):
        assert f"`caches[i].{sub}`" in doc


# --- the HardwareSpec value ---------------------------------------------------------------

def test_cpu_accessors():
    xeon, a57 = load_spec("xeon-e5-2620v3"), load_spec("cortex-a57")
    assert xeon.is_cpu and not xeon.is_gpu
    assert xeon.vector_lanes(4) == 8 and xeon.vector_lanes(8) == 4 and xeon.vector_lanes(1) == 32
    assert xeon.innermost_tile_multiple(4) == 16
    assert xeon.cache_bytes(3) == 15 * 2**20 and xeon.last_level_cache_bytes == 15 * 2**20
    assert xeon.tile_cache_bytes == 256 * 1024      # private L2
    assert a57.tile_cache_bytes == 2 * 2**20 // 4   # shared L2, per-core share
    assert isinstance(xeon.caches, tuple) and isinstance(xeon.caches[0], CacheLevel)
    with pytest.raises(SpecError, match=r"xeon-e5-2620v3\.yaml: field 'caches'.*level 4"):
        xeon.cache_bytes(4)
    with pytest.raises(ValueError):
        xeon.vector_lanes(0)


def test_gpu_accessors_and_occupancy():
    h100, k40 = load_spec("h100"), load_spec("k40")
    assert h100.vector_lanes(4) == 1 and h100.innermost_tile_multiple(4) == 32
    assert h100.cache_bytes(2) == h100.l2_bytes and h100.tile_cache_bytes == 49152
    assert h100.max_warps_per_sm == 64
    assert h100.occupancy(256, 32) == 1.0
    assert h100.occupancy(256, 128) == 0.25          # 4096 regs/warp -> 2 blocks of 8 warps
    assert h100.occupancy(256, 32, 100 * 1024) == 0.0  # over the per-block shared limit
    assert h100.occupancy(128, 32, 40 * 1024) == 5 * 4 / 64  # 228 KiB / 40 KiB -> 5 blocks
    assert k40.occupancy(64, 32) == 16 * 2 / 64      # capped by 16 blocks per SM
    assert h100.occupancy(2048) == 0.0
    with pytest.raises(SpecError, match="field 'kind'"):
        load_spec("xeon-e5-2620v3").occupancy(128)


def test_spec_is_immutable_hashable_and_revalidated():
    h100 = load_spec("h100")
    with pytest.raises(dataclasses.FrozenInstanceError):
        h100.sm_count = 1
    assert hash(h100) == hash(load_spec("h200").replace(name="h100", memory_bandwidth_gbs=3350.0,
                                                        description=h100.description,
                                                        launch_overhead_us=5.74))
    assert h100.replace(sm_count=114).sm_count == 114
    with pytest.raises(SpecError, match=r"field 'sm_count': expected a positive integer, got 0"):
        h100.replace(sm_count=0)
    assert load_spec(h100) is h100
    built = HardwareSpec.from_dict(h100.to_dict())
    assert built == h100


# --- host detection --------------------------------------------------------------------------

def test_host_detection_without_measurement():
    spec = load_spec("host", measure_bandwidth=False)
    assert spec.kind == "cpu" and spec.name == "host"
    assert spec.threads == len(os.sched_getaffinity(0)) and 1 <= spec.cores <= spec.threads
    assert spec.vector_bits in (128, 256, 512) and spec.caches[0].level == 1
    assert spec.memory_bandwidth_gbs == host_mod.DEFAULT_BANDWIDTH_GBS
    assert spec.tile_cache_bytes > 0
    assert spec_from_yaml(spec_to_yaml(spec)) == spec


def test_host_bandwidth_is_measured_once_and_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("TILESOLVE_CACHE_DIR", str(tmp_path))
    first = load_spec("host")
    assert (tmp_path / "host.json").is_file()
    assert first.memory_bandwidth_gbs > 0.5 and first.memory_bandwidth_gbs != 10.0

    def no_second_measurement(**kwargs):
        raise AssertionError("bandwidth measured again instead of read from the cache")

    monkeypatch.setattr(host_mod, "measure_memory_bandwidth", no_second_measurement)
    assert load_spec("host") == first
    other = tmp_path / "elsewhere"  # an explicit cache_dir wins over the environment
    with pytest.raises(AssertionError, match="measured again"):
        load_spec("host", cache_dir=other)


def _fake_machine(root: Path, *, caches: bool) -> Path:
    sys_cpu = root / "cpu"
    for cpu, core in ((0, 0), (1, 0), (2, 1), (3, 1)):  # 2 cores x 2 SMT threads
        topo = sys_cpu / f"cpu{cpu}" / "topology"
        topo.mkdir(parents=True)
        (topo / "core_id").write_text(f"{core}\n")
        (topo / "physical_package_id").write_text("0\n")
    if caches:
        table = [("Data", 1, "32K", "0-1"), ("Instruction", 1, "32K", "0-1"),
                 ("Unified", 2, "1M", "0-1"), ("Unified", 3, "8M", "0-3")]
        for i, (kind, level, size, sharers) in enumerate(table):
            d = sys_cpu / "cpu0" / "cache" / f"index{i}"
            d.mkdir(parents=True)
            for name, value in (("type", kind), ("level", level), ("size", size),
                                ("shared_cpu_list", sharers), ("coherency_line_size", 64)):
                (d / name).write_text(f"{value}\n")
    return sys_cpu


def test_host_detection_reads_sysfs_and_cpuinfo(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("model name\t: Fake CPU\nflags\t\t: fpu sse2 avx avx2\ncpu MHz\t\t: 3000.0\n")
    spec = host_mod.detect_host(measure_bandwidth=False, sys_cpu=_fake_machine(tmp_path, caches=True),
                                cpuinfo=info, cpus=[0, 1, 2, 3])
    assert (spec.cores, spec.threads, spec.vector_bits, spec.clock_ghz) == (2, 4, 256, 3.0)
    assert spec.caches == (CacheLevel(1, 32768, False, 64), CacheLevel(2, 2**20, False, 64),
                           CacheLevel(3, 8 * 2**20, True, 64))
    assert spec.parallelism_threshold == 8 and spec.cache_for_tiles == 2
    assert "Fake CPU" in spec.description


def test_host_detection_falls_back_to_conservative_defaults(tmp_path):
    spec = host_mod.detect_host(measure_bandwidth=False, sys_cpu=tmp_path / "absent",
                                cpuinfo=tmp_path / "absent", cpus=[0, 1, 2])
    assert (spec.cores, spec.threads, spec.vector_bits, spec.clock_ghz) == (3, 3, 128, 2.0)
    assert [c.size_bytes for c in spec.caches] == [32 * 1024, 256 * 1024]
    assert spec.memory_bandwidth_gbs == 10.0


# --- bad specs -------------------------------------------------------------------------------

def _write(tmp_path, base, filename, mutate):
    data = load_spec(base).to_dict()
    mutate(data)
    path = tmp_path / filename
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _expect(path, field, rest=""):
    return re.escape(f"{path.name}: field '{field}'") + rest


BAD_SPECS = [  # (id, base spec, mutation, field named in the message, what is expected)
    ("missing", "h100", lambda d: d.pop("sm_count"), "sm_count", " is missing: expected a positive integer"),
    ("unknown", "h100", lambda d: d.update(sm_cnt=4), "sm_cnt", " is unknown.*did you mean 'sm_count'"),
    ("other-kind", "h100", lambda d: d.update(cores=4), "cores", " is unknown in a gpu spec"),
    ("wrong-type", "h100", lambda d: d.update(sm_count="many"), "sm_count",
     ": expected a positive integer, got 'many'"),
    ("bool-for-int", "xeon-e5-2620v3", lambda d: d.update(cores=True), "cores", ": expected a positive integer"),
    ("float-cc", "h100", lambda d: d.update(compute_capability=9.0), "compute_capability",
     ": expected a string like \"9.0\""),
    ("negative", "h100", lambda d: d.update(sm_count=-4), "sm_count", ": expected a positive integer, got -4"),
    ("zero", "xeon-e5-2620v3", lambda d: d["caches"][1].update(size_bytes=0), "caches[1].size_bytes",
     ": expected a positive integer, got 0"),
    ("zero-bandwidth", "k40", lambda d: d.update(memory_bandwidth_gbs=0), "memory_bandwidth_gbs",
     r": expected a positive number \(GB/s\), got 0"),
    ("bad-kind", "h100", lambda d: d.update(kind="tpu"), "kind", ": expected 'cpu' or 'gpu', got 'tpu'"),
    ("occupancy-zero", "v100", lambda d: d.update(occupancy_threshold=0), "occupancy_threshold",
     r": expected a number in \(0, 1\], got 0"),
    ("occupancy-high", "v100", lambda d: d.update(occupancy_threshold=1.5), "occupancy_threshold",
     r": expected a number in \(0, 1\], got 1.5"),
    ("warp-mismatch", "a100", lambda d: d.update(max_threads_per_block=1000), "max_threads_per_block",
     r": expected a multiple of warp_size \(32\), got 1000"),
    ("smem-per-block", "a100", lambda d: d.update(shared_mem_per_block_bytes=10**6),
     "shared_mem_per_block_bytes", r": expected at most shared_mem_per_sm_bytes"),
    ("threads-below-cores", "cortex-a57", lambda d: d.update(threads=2), "threads",
     r": expected at least cores \(4\), got 2"),
    ("cache-order", "xeon-e5-2620v3", lambda d: d["caches"].reverse(), "caches[0].level",
     r": expected 1 \(the list starts at L1\), got 3"),
    ("tile-cache-level", "cortex-a57", lambda d: d.update(cache_for_tiles=3), "cache_for_tiles",
     r": expected one of the cache levels \[1, 2\], got 3"),
    ("nan", "h200", lambda d: d.update(clock_ghz=float("nan")), "clock_ghz", ": expected a positive number"),
    # sanity checks between values (issue 11)
    ("clock-in-mhz", "xeon-e5-2620v3", lambda d: d.update(clock_ghz=2400), "clock_ghz",
     r": expected a positive number of GHz, at most 10 \(a clock in MHz\?\), got 2400"),
    ("cores-zero", "xeon-e5-2620v3", lambda d: d.update(cores=0), "cores",
     ": expected a positive integer, got 0"),
    ("cores-negative", "cortex-a57", lambda d: d.update(cores=-2), "cores",
     ": expected a positive integer, got -2"),
    ("vector-bits-not-pow2", "xeon-e5-2620v3", lambda d: d.update(vector_bits=96), "vector_bits",
     r": expected a power of two from 64 to 2048 \(bits\), got 96"),
    ("vector-bits-odd", "cortex-a57", lambda d: d.update(vector_bits=130), "vector_bits",
     r": expected a power of two.*got 130"),
    ("vector-bits-sve-384", "cortex-a57", lambda d: d.update(vector_bits=384), "vector_bits",
     r": expected a power of two.*got 384"),
    ("l1-larger-than-l2", "xeon-e5-2620v3", lambda d: d["caches"][1].update(size_bytes=16384),
     "caches[1].size_bytes", r": expected at least caches\[0\].size_bytes \(32768, L1\), got 16384"),
    ("line-larger-than-cache", "cortex-a57", lambda d: d["caches"][0].update(line_bytes=65536),
     "caches[0].line_bytes", r": expected at most the cache's size_bytes \(32768\), got 65536"),
    ("warp-not-pow2", "h100", lambda d: d.update(warp_size=24), "warp_size",
     ": expected a positive power of two, got 24"),
    ("warp-not-dividing-sm-threads", "v100", lambda d: d.update(max_threads_per_sm=2000),
     "max_threads_per_sm", r": expected a multiple of warp_size \(32\), got 2000"),
    ("block-threads-over-sm", "k40", lambda d: d.update(max_threads_per_block=4096),
     "max_threads_per_block", r": expected at most max_threads_per_sm \(2048\), got 4096"),
    ("registers-per-thread", "a100", lambda d: d.update(max_registers_per_thread=70000),
     "max_registers_per_thread", r": expected at most registers_per_sm \(65536\)"),
    ("register-unit", "h200", lambda d: d.update(register_allocation_unit=384),
     "register_allocation_unit", r": expected a divisor of registers_per_sm \(65536\), got 384"),
    # the cost model's parameters (specs/cost_params.py)
    ("cost-param-unknown", "xeon-e5-2620v3", lambda d: d.update(cost_params={"spill_op": 3}),
     "cost_params.spill_op", r" is unknown \(did you mean 'spill_ops'\?\)"),
    ("cost-param-type", "xeon-e5-2620v3", lambda d: d.update(cost_params={"block_rows": 4}),
     "cost_params.block_rows", r": expected a non-empty list of positive integers, got 4"),
    ("cost-param-bool", "cortex-a57", lambda d: d.update(cost_params={"strided_reads": 1}),
     "cost_params.strided_reads", r": expected true or false, got 1"),
    ("cost-param-negative", "cortex-a57", lambda d: d.update(cost_params={"spill_ops": -1}),
     "cost_params.spill_ops", r": expected a non-negative number, got -1"),
    ("cost-param-of-the-cpu", "h100", lambda d: d.update(cost_params={"spill_ops": 1.0}),
     "cost_params.spill_ops", r" is a parameter of the CPU cost model"),
    ("cost-params-not-a-mapping", "h100", lambda d: d.update(cost_params=[1]),
     "cost_params", r": expected a mapping of cost parameter names to values, got \[1\]"),
]


def test_cost_params_default_by_kind_override_and_round_trip(tmp_path):
    """A spec's cost parameters are its kind's defaults with the YAML's overrides; only
    the overrides are written back, and the spec reads back equal."""
    from tilesolve.specs.cost_params import defaults
    xeon = load_spec("xeon-e5-2620v3")
    assert xeon.cost_params == defaults("cpu") and "cost_params" not in xeon.to_dict()
    path = _write(tmp_path, "xeon-e5-2620v3", "tuned.yaml",
                  lambda d: d.update(cost_params={"spill_ops": 3, "block_rows": [1, 2, 4]}))
    tuned = load_spec(path)
    assert tuned.cost_params.spill_ops == 3.0 and tuned.cost_params.block_rows == (1, 2, 4)
    assert tuned.cost_params.tile_overhead_ops == defaults("cpu").tile_overhead_ops
    assert tuned.to_dict()["cost_params"] == {"spill_ops": 3.0, "block_rows": [1, 2, 4]}
    assert spec_from_yaml(spec_to_yaml(tuned)) == tuned != xeon
    assert xeon.with_cost_params(spill_ops=3, block_rows=[1, 2, 4]) == tuned


@pytest.mark.parametrize("case", BAD_SPECS, ids=[c[0] for c in BAD_SPECS])
def test_bad_spec_names_file_field_and_expectation(case, tmp_path):
    ident, base, mutate, field, rest = case
    path = _write(tmp_path, base, f"bad-{ident}.yaml", mutate)
    with pytest.raises(SpecError, match=_expect(path, field, rest)):
        load_spec(path)


def test_l3_smaller_than_l2_is_a_warning_naming_file_and_field(tmp_path):
    from tilesolve.errors import SpecWarning
    path = _write(tmp_path, "xeon-e5-2620v3", "victim.yaml",
                  lambda d: d["caches"][2].update(size_bytes=131072))
    with pytest.warns(SpecWarning, match=_expect(path, "caches[2].size_bytes",
                                                  r": L3 \(131072 bytes\) is smaller than "
                                                  r"caches\[1\].size_bytes \(262144, L2\)")):
        spec = load_spec(path)
    assert spec.caches[2].size_bytes == 131072


def test_occupancy_threshold_of_one_is_allowed(tmp_path):
    path = _write(tmp_path, "v100", "full.yaml", lambda d: d.update(occupancy_threshold=1))
    assert load_spec(str(path)).occupancy_threshold == 1.0


@pytest.mark.parametrize("text, message", [
    ("name: [unclosed\nkind: cpu\n", r"broken\.yaml: malformed YAML at line \d+"),
    ("name: a\nname: b\n", r"broken\.yaml: malformed YAML at line 2.*'name' appears twice"),
    ("- just\n- a list\n", r"broken\.yaml: expected a mapping of field names"),
    ("name: x\ndescription: y\n", r"broken\.yaml: field 'kind' is missing"),
])
def test_malformed_yaml(tmp_path, text, message):
    path = tmp_path / "broken.yaml"
    path.write_text(text)
    with pytest.raises(SpecError, match=message):
        load_spec(path)


def test_unknown_name_and_missing_file(tmp_path):
    with pytest.raises(SpecError, match=r"'h1000': unknown spec name; expected one of .*h100.*host"):
        load_spec("h1000")
    with pytest.raises(SpecError, match=r"nothere\.yaml: no such spec file"):
        load_spec(tmp_path / "nothere.yaml")
    with pytest.raises(SpecError, match="expected a spec name"):
        load_spec(42)


def test_require_kind():
    h100, xeon = load_spec("h100"), load_spec("xeon-e5-2620v3")
    assert require_kind(xeon, "cpu", what="the CPU backend") is xeon
    assert require_kind(h100, "gpu", what="the CUDA backend") is h100
    with pytest.raises(SpecError, match=r"h100\.yaml: field 'kind': the CPU backend expected "
                                        r"a cpu spec, got 'gpu'"):
        require_kind(h100, "cpu", what="the CPU backend")
    with pytest.raises(SpecError, match=r"xeon-e5-2620v3\.yaml: field 'kind': the CUDA backend"):
        require_kind(xeon, "gpu", what="the CUDA backend")


# --- command line ------------------------------------------------------------------------------

def test_cli_lists_and_prints_specs():
    out, err = io.StringIO(), io.StringIO()
    assert main_specs([], out=out, err=err) == 0
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["NAME", "KIND", "DESCRIPTION"]
    assert [ln.split()[0] for ln in lines[1:]] == SHIPPED + ["host"]
    assert any(ln.split()[:2] == ["h100", "gpu"] for ln in lines)
    out = io.StringIO()
    assert main_specs(["k40"], out=out, err=err) == 0
    assert spec_from_yaml(out.getvalue()) == load_spec("k40")
    out = io.StringIO()
    assert main_specs(["host", "--no-measure"], out=out, err=err) == 0
    assert spec_from_yaml(out.getvalue()).name == "host"
    assert main_specs(["nope"], out=out, err=err) == 2
    assert "unknown spec name" in err.getvalue()


def test_python_dash_m_entry_point():
    proc = subprocess.run([sys.executable, "-m", "tilesolve.specs", "cortex-a57"],
                          capture_output=True, text=True, cwd=SPECS_DIR.parents[1], timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert spec_from_yaml(proc.stdout) == load_spec("cortex-a57")
