"""The error catalogue (issue 11): one test per kind of misuse, each checking the error
class and that the message names the culprit (Func, dimension, field, directive, Param,
argument or CLI option).

More catalogue entries live next to the code they test: tests/test_errors.py (the
algorithm, realize), tests/test_schedule.py (``test_error_*``: illegal directives),
tests/test_specs.py (``BAD_SPECS``: bad YAML specs), tests/test_cli.py (bad bench options),
tests/test_compile.py (``test_realize_errors``: compiled realize) and tests/test_tuples.py
(Tuple Funcs, ``undef``, ``argmax``).
"""
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.cli import main
from tilesolve.errors import (BoundsError, PipelineError, RealizeError, ScheduleError,
                              SolverError, TilesolveError)

REPO = Path(__file__).resolve().parents[1]
x, y = ts.Var("x"), ts.Var("y")


# -- schedule JSON replay -----------------------------------------------------------------
def _blur():
    inp = ts.ImageParam(ts.float32, 2, "input")
    bx, by = ts.Func("blur_x"), ts.Func("blur_y")
    bx[x, y] = inp[x, y] + inp[x + 1, y]
    by[x, y] = bx[x, y] + bx[x, y + 1]
    return ts.Pipeline(by), bx, by


def _blur_json():
    p, bx, by = _blur()
    s = ts.Schedule(p)
    s[by].split(x, "xo", "xi", 8).vectorize("xi")
    s[bx].compute_at(by, "xo")
    return p, s.to_json()


def _replay(mutate):
    """from_json of the blur schedule's JSON after ``mutate(doc)``."""
    p, text = _blur_json()
    doc = json.loads(text)
    mutate(doc)
    return ts.Schedule.from_json(json.dumps(doc), p)


def _directive(i, **fields):
    return lambda doc: doc["directives"][i].update(fields)


def test_json_round_trip_is_still_exact():
    p, text = _blur_json()
    assert ts.Schedule.from_json(text, p).to_json() == text


@pytest.mark.parametrize("method", ["__init__", "copy", "_commit", "__class__", "update"])
def test_json_directive_not_on_the_allow_list(method):
    with pytest.raises(ScheduleError, match=rf"directive 0 on Func blur_y: '{method}' is not a "
                                            r"schedule directive; the directives are split, tile"):
        _replay(_directive(0, method=method))


def test_json_directive_missing_or_unknown_field():
    with pytest.raises(ScheduleError, match=r"directive 1: field 'args' is missing"):
        _replay(lambda doc: doc["directives"][1].pop("args"))
    with pytest.raises(ScheduleError, match=r"directive 0: unknown field 'extra'"):
        _replay(_directive(0, extra=1))
    with pytest.raises(ScheduleError, match=r"directive 3: expected an object with fields"):
        _replay(lambda doc: doc["directives"].append(5))


def test_json_directive_wrong_argument_count():
    with pytest.raises(ScheduleError, match=r"directive 0 \(split on Func blur_y\): arguments of "
                                            r"kinds \(var\) do not match split; it takes "
                                            r"\(var, var, var, int\)"):
        _replay(_directive(0, args=[["var", "x"]]))


def test_json_directive_ill_typed_argument():
    args = [["var", "x"], ["var", "xo"], ["var", "xi"], ["int", "8"]]
    with pytest.raises(ScheduleError, match=r"directive 0 \(split on Func blur_y\): argument 3: "
                                            r"expected an int, got '8'"):
        _replay(_directive(0, args=args))
    args[0] = ["loop", "x"]
    with pytest.raises(ScheduleError, match=r"argument 0: unknown kind 'loop'"):
        _replay(_directive(0, args=args))
    with pytest.raises(ScheduleError, match=r"directive 0 on Func blur_y: field 'stage' must be "
                                            r"an int >= 0.*got '0'"):
        _replay(_directive(0, stage="0"))
    with pytest.raises(ScheduleError, match=r"directive 0: field 'func' must be a Func name, "
                                            r"got 3"):
        _replay(_directive(0, func=3))


def test_json_directive_unknown_keyword():
    with pytest.raises(ScheduleError, match=r"directive 0 \(split on Func blur_y\): unknown "
                                            r"keyword 'factor'; split takes only tail"):
        _replay(_directive(0, kwargs=[["factor", ["int", 3]]]))
    with pytest.raises(ScheduleError, match=r"directive 2 \(compute_at on Func blur_x\): "
                                            r"unknown keyword 'tail'; compute_at takes only update"):
        _replay(_directive(2, kwargs=[["tail", ["str", "round_up"]]]))


def test_json_directive_illegal_for_the_schedule():
    with pytest.raises(ScheduleError, match=r"schedule JSON: directive 0 \(split on Func blur_y\):"
                                            r" Func blur_y \(pure stage\): split\(x, xo, xi, 0\): "
                                            r"the factor must be a positive int"):
        _replay(_directive(0, args=[["var", "x"], ["var", "xo"], ["var", "xi"], ["int", 0]]))
    with pytest.raises(ScheduleError, match=r"directive 0 \(split on Func nope\): no Func named "
                                            r"'nope'"):
        _replay(_directive(0, func="nope"))
    with pytest.raises(ScheduleError, match=r"directive 0 \(split on Func blur_y\): Func blur_y "
                                            r"has 0 update definition\(s\); there is no update 0"):
        _replay(_directive(0, stage=1))
    with pytest.raises(ScheduleError, match=r"directive 2 \(compute_at on Func blur_x\): "
                                            r"compute_at applies to a Func's pure stage"):
        _replay(_directive(2, stage=1))


def test_json_malformed_document_fields():
    with pytest.raises(ScheduleError, match=r"field 'directives' must be a list"):
        _replay(lambda doc: doc.update(directives={}))
    with pytest.raises(ScheduleError, match=r"field 'outputs' must be a list of output names"):
        _replay(lambda doc: doc.update(outputs=5))
    with pytest.raises(ScheduleError, match=r"Func blur_x: the stored schedule is malformed "
                                            r"\(KeyError: 'compute'\)"):
        _replay(lambda doc: doc["funcs"]["blur_x"].pop("compute"))
    p, _ = _blur_json()
    with pytest.raises(ScheduleError, match=r"schedule JSON must be a string, got dict"):
        ts.Schedule.from_json({}, p)


def test_tail_is_checked_without_a_factor():
    p, bx, by = _blur()
    with pytest.raises(ScheduleError, match=r"Func blur_y \(pure stage\): vectorize\(x\): tail "
                                            r"must be one of .*got 'wrap'"):
        ts.Schedule(p)[by].vectorize(x, tail="wrap")


# -- schedules ----------------------------------------------------------------------------
def test_schedule_argument_kinds():
    p, bx, by = _blur()
    with pytest.raises(ScheduleError, match=r"Func blur_y \(pure stage\): split factor must be "
                                            r"an int, got '8'"):
        ts.Schedule(p)[by].split(x, "xo", "xi", "8")
    with pytest.raises(ScheduleError, match=r"Func blur_y \(pure stage\): split\(x, x, x_u, 0\):"
                                            r" the factor must be a positive int"):
        ts.Schedule(p)[by].unroll(x, 0)
    with pytest.raises(ScheduleError, match=r"Schedule target must be one of .*got 'gpu'"):
        ts.Schedule(p, "gpu")
    with pytest.raises(ScheduleError, match=r"Schedule needs a Pipeline, got Func\('blur_y'\)"):
        ts.Schedule(by)


def test_schedule_compute_at_unknown_consumer():
    p, bx, by = _blur()
    with pytest.raises(ScheduleError, match=r"Func blur_x \(pure stage\): compute_at\(nope, x\): "
                                            r"no Func named 'nope'"):
        ts.Schedule(p)[bx].compute_at("nope", x)


def test_schedule_too_many_gpu_loops():
    p, bx, by = _blur()
    with pytest.raises(ScheduleError, match=r"Func blur_y \(pure stage\): gpu_threads takes 1 to "
                                            r"3 loops, got 4"):
        ts.Schedule(p, "cuda")[by].gpu_threads(x, y, "a", "b")


# -- the algorithm ------------------------------------------------------------------------
def test_rdom_with_a_positional_name():
    r = ts.RDom([(0, 4), (0, 3)], "r")
    assert r.name == "r" and (r.x.name, r.y.name) == ("r.x", "r.y")
    assert ts.RDom(0, 20, "q").name == "q"
    with pytest.raises(PipelineError, match=r"RDom: the name is given twice \('a' and name='b'\)"):
        ts.RDom((0, 4), "a", name="b")
    with pytest.raises(PipelineError, match=r"RDom: the name must be a non-empty string, got 3"):
        ts.RDom((0, 4), name=3)


def test_rdom_misuse():
    r = ts.RDom((0, 4), name="rmis")
    with pytest.raises(PipelineError, match=r"RDom rmis has 1 dimensions, not 3"):
        r.z
    r.where(y > 1)                       # a pure Var: the update must have it
    g = ts.Func("f_where_var")
    g[x] = 0
    with pytest.raises(PipelineError, match=r"Func f_where_var: the update uses Var y, which "
                                            r"is not in its pure definition"):
        g[x] += r.x
    f = ts.Func("f_rvar_pure")
    with pytest.raises(PipelineError, match=r"Func f_rvar_pure: the pure definition uses RDom "
                                            r"variable rmis.x"):
        f[x] = r.x


def test_reading_a_func_before_its_definition():
    f, g = ts.Func("f_no_pure"), ts.Func("g_reads")
    with pytest.raises(PipelineError, match=r"Func f_no_pure is called but never defined; give "
                                            r"it a pure definition first"):
        g[x] = f[x] + 1


def test_implicit_update_with_a_var_twice():
    f = ts.Func("f_implicit_xx")
    with pytest.raises(PipelineError, match=r"f_implicit_xx: an update of a Func with no pure "
                                            r"definition uses one Var at two positions"):
        f[x, x] += 1


def test_bit_operation_on_a_float():
    with pytest.raises(PipelineError, match=r"'\^' needs integer .* of type float32"):
        ts.cast(ts.float32, x) ^ 1


def test_shift_of_a_bool():
    with pytest.raises(PipelineError, match=r"'<<' needs integer .* of type bool"):
        (x > 1) << 1


def test_var_twice_in_pure_definition():
    f = ts.Func("f_xx")
    with pytest.raises(PipelineError, match=r"Func f_xx: Var x appears twice"):
        f[x, x] = x


def test_bad_names_and_types_of_language_objects():
    with pytest.raises(PipelineError, match=r"Func name must be an identifier, got 3"):
        ts.Func(3)
    with pytest.raises(PipelineError, match=r"cast needs a ts type first, got 'int'"):
        ts.cast("int", x)
    with pytest.raises(PipelineError, match=r"ImageParam 'z': dims must be a positive int, got 0"):
        ts.ImageParam(ts.float32, 0, "z")


def test_pipeline_of_a_non_func():
    with pytest.raises(PipelineError, match=r"Pipeline needs a Func or a list of Funcs .*got int"):
        ts.Pipeline(3)


def test_assigning_to_an_imageparam():
    inp = ts.ImageParam(ts.float32, 1, "inp_set")
    with pytest.raises(PipelineError, match=r"input inp_set is an ImageParam: .*cannot be defined"):
        inp[x] = 1


def test_param_default_outside_its_type():
    with pytest.raises(PipelineError, match=r"Param lvl: default 300 does not fit in uint8"):
        ts.Param(ts.uint8, "lvl", default=300)
    with pytest.raises(PipelineError, match=r"Param n: default 1.5 is not an integer, but n is "
                                            r"int32"):
        ts.Param(ts.int32, "n", default=1.5)
    with pytest.raises(PipelineError, match=r"Param g: default 1e\+300 is out of the range of "
                                            r"float32"):
        ts.Param(ts.float32, "g", default=1e300)


# -- realize: sizes, Params, output regions (the reference and compiled code agree) -------
def _scaled():
    inp = ts.ImageParam(ts.float32, 2, "image")
    k = ts.Param(ts.float32, "gain")
    f = ts.Func("scaled")
    f[x, y] = inp[x, y] * k
    return ts.Pipeline(f)


@pytest.fixture(scope="module")
def scaled():
    """``(pipeline, realize functions)``: the reference, and compiled code."""
    p = _scaled()
    return p, {"reference": lambda *a, **k: ts.reference.realize(p, *a, **k),
               "compiled": ts.compile(p).realize}


IMG = np.ones((48, 64), np.float32)
BACKENDS = ["reference", "compiled"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_realize_sizes_not_a_list(scaled, backend):
    realize = scaled[1][backend]
    with pytest.raises(RealizeError, match=r"the sizes of output scaled must be a list of "
                                           r"positive ints.*got None"):
        realize(None, image=IMG, gain=1.0)
    with pytest.raises(RealizeError, match=r"the sizes of output scaled .*got 'ab'"):
        realize("ab", image=IMG, gain=1.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_realize_size_too_large(scaled, backend):
    realize = scaled[1][backend]
    with pytest.raises(RealizeError, match=r"size 0 of output scaled is 100000000000000000000, "
                                           r"which is too large: a size is at most 2\*\*31 - 1"):
        realize([10 ** 20, 48], image=IMG, gain=1.0)
    with pytest.raises(RealizeError, match=r"size 1 of output scaled is 2147483648, which is too "
                                           r"large"):
        realize([64, 2 ** 31], image=IMG, gain=1.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_realize_too_many_points(scaled, backend):
    realize = scaled[1][backend]
    with pytest.raises(RealizeError, match=r"output scaled is too large: sizes \[65536, 65536\] "
                                           r"make 4294967296 points, past the limit of 2\*\*31 - 1"
                                           r" = 2147483647 at dimension 1"):
        realize([2 ** 16, 2 ** 16], image=IMG, gain=1.0)


def test_size_near_2_31_says_too_large():
    f, g = ts.Func("near_f"), ts.Func("near_g")
    f[x] = x
    g[x] = f[x + 1] + f[x]
    with pytest.raises(BoundsError, match=r"Func near_g reads near_f in dimension 0 at the index "
                                          r"x \+ 1, which reaches 2147483647 .*the sizes \(or "
                                          r"Param values\) are too large"):
        ts.reference.realize(ts.Pipeline(g), [2 ** 31 - 1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_float_param_out_of_range(scaled, backend):
    realize = scaled[1][backend]
    with pytest.raises(RealizeError, match=r"param 'gain' is float32; 1e\+300 is out of its range "
                                           r"\(the largest finite float32 is 3.4028235e\+38\)"):
        realize([64, 48], image=IMG, gain=1e300)
    with pytest.raises(RealizeError, match=r"param 'gain' is float32, got True"):
        realize([64, 48], image=IMG, gain=True)


def test_infinite_float_param_is_passed_through_by_both(scaled):
    p, fns = scaled
    got = [fns[b]([64, 48], image=IMG, gain=float("inf")) for b in BACKENDS]
    assert np.isinf(got[0]).all() and np.array_equal(got[0], got[1])


def _update_past_the_output():
    inp = ts.ImageParam(ts.int32, 1, "inp")
    f = ts.Func("f")
    f[x] = inp[ts.clamp(x, 0, 3)]
    r = ts.RDom(0, 20)
    f[r.x] = f[r.x] + 1
    return ts.Pipeline(f)


def test_update_writing_past_the_output_raises_like_compiled_code():
    p = _update_past_the_output()
    a = np.arange(4, dtype=np.int32)
    msg = r"output f is accessed at 19, which is beyond the max \(9\) in dimension 0"
    with pytest.raises(RealizeError, match=msg + r".*\[0, 19\]"):
        ts.reference.realize(p, [10], inp=a)
    with pytest.raises(RealizeError, match=r"output f would be accessed over \[0, 19\] in "
                                           r"dimension 0 but its size there is 10"):
        ts.compile(p).realize([10], inp=a)
    assert ts.reference.realize(p, [20], inp=a).tolist() == [1, 2, 3, 4] + [4] * 16


def test_output_read_before_its_min_by_another_output():
    inp = ts.ImageParam(ts.int32, 1, "src")
    a, b = ts.Func("first"), ts.Func("second")
    a[x] = inp[x]
    b[x] = a[x - 2]
    p = ts.Pipeline([a, b])
    arr = np.arange(8, dtype=np.int32)
    with pytest.raises(RealizeError, match=r"output first is accessed at -2, which is before the "
                                           r"min \(0\) in dimension 0"):
        ts.reference.realize(p, [4], src=arr)
    with pytest.raises(RealizeError, match=r"output first would be accessed over \[-2, 3\]"):
        ts.compile(p).realize([4], src=arr)


def test_round_up_reading_an_output_past_its_size_is_refused_by_every_backend():
    """A round_up split of ``f0`` computed per point of ``f1`` computes two points of it
    and reads the other output (the input through repeat_edge) one past the size asked
    for: the interpreter of the lowered program refuses before running, with the same
    message as compiled code (it read past the buffer, then raised an error of its own)."""
    from tilesolve.lower import interpret, lower
    inp = ts.ImageParam(ts.uint8, 1, "in0")
    rep = ts.boundary.repeat_edge(inp)
    f0, f1 = ts.Func("f0"), ts.Func("f1")
    f0[x] = ts.cast(ts.int32, rep[x]) * 3
    f1[x] = f0[x] + ts.cast(ts.int32, rep[x]) * 2
    p = ts.Pipeline([f1, rep])
    s = ts.Schedule(p)
    s[f0].compute_at(f1, x).split(x, ts.Var("xo"), ts.Var("xi"), 2, tail="round_up")
    a = np.array([7, 9], np.uint8)
    msg = (rf"output {rep.name} would be accessed over \[0, 1\] in dimension 0 but its size "
           r"there is 1")
    bufs = {"in0": a, "f1": np.zeros(1, np.int32), rep.name: np.zeros(1, np.uint8)}
    with pytest.raises(RealizeError, match=msg):
        interpret(lower(p, s), bufs, {})
    with pytest.raises(RealizeError, match=msg):
        ts.compile(p, s).realize([1], in0=a)
    # each point of f1 rounds f0 up to two points, so every size reads one past
    with pytest.raises(RealizeError, match=rf"output {rep.name} would be accessed over "
                                           r"\[0, 4\] in dimension 0 but its size there is 4"):
        ts.compile(p, s).realize([4], in0=a)
    # the same split guarded reads nothing past the output, and equals the reference
    g = ts.Schedule(p)
    g[f0].compute_at(f1, x).split(x, ts.Var("xo"), ts.Var("xi"), 2, tail="guard_with_if")
    want = ts.reference.realize(p, [4], in0=a)
    got = ts.compile(p, g).realize([4], in0=a)
    assert got[0].tolist() == want[0].tolist() == [35, 45, 45, 45]

# -- float16 values out of its range, and arrays of another float type -----------------------
def _f16_pipeline():
    img, k = ts.ImageParam(ts.float16, 1, "img"), ts.Param(ts.float16, "k", 1.5)
    f = ts.Func("f")
    f[x] = img[x] * k
    return ts.Pipeline(f)


def _f16_runners():
    yield ts.reference.realize
    yield lambda pipe, sizes, **kw: ts.compile(pipe).realize(sizes, **kw)
    try:
        import halide  # noqa: F401
    except ImportError:
        return
    from tilesolve.interop import halide as th
    yield lambda pipe, sizes, **kw: th.translate(pipe).realize(sizes, **kw)


def test_float16_param_past_65504_is_refused_by_every_realize():
    p = _f16_pipeline()
    for run in _f16_runners():
        with pytest.raises(RealizeError, match=r"param 'k' is float16; 70000.0 is out of its "
                                               r"range \(the largest finite float16 is 65504\)"):
            run(p, [4], img=np.ones(4, np.float16), k=70000.0)
        # inf is a float16 value: passed through
        assert np.isinf(run(p, [4], img=np.ones(4, np.float16), k=np.inf)).all()


def test_float16_param_default_past_its_range():
    with pytest.raises(PipelineError, match=r"Param q: default 100000.0 is out of the range "
                                            r"of float16"):
        ts.Param(ts.float16, "q", 1e5)


def test_float16_input_given_a_float32_array_names_the_input():
    p = _f16_pipeline()
    for run in _f16_runners():
        with pytest.raises(RealizeError, match=r"input 'img'(?=.*float16)(?=.*float32)"):
            run(p, [4], img=np.ones(4, np.float32))


# -- ts.compile and solve_schedule arguments ----------------------------------------------
def test_compile_with_a_string_for_the_schedule():
    p = _scaled()
    with pytest.raises(ScheduleError, match=r"ts.compile: the schedule argument must be a "
                                            r"ts.Schedule .*got str 'text'; to name a target, "
                                            r"pass target='text'"):
        ts.compile(p, "text")


def test_compile_a_func_or_bad_threads(monkeypatch):
    f = ts.Func("lonely")
    f[x] = x
    with pytest.raises(PipelineError, match=r"ts.compile: the first argument must be a Pipeline, "
                                            r"got Func \(wrap it: ts.Pipeline\(f\)\)"):
        ts.compile(f)
    with pytest.raises(TilesolveError, match=r"ts.compile: num_threads must be a positive int, "
                                             r"got 0"):
        ts.compile(ts.Pipeline(f), num_threads=0)
    monkeypatch.setenv("TILESOLVE_NUM_THREADS", "many")
    with pytest.raises(TilesolveError, match=r"TILESOLVE_NUM_THREADS must be a positive integer, "
                                             r"got 'many'"):
        ts.compile(ts.Pipeline(f))


def test_solve_schedule_estimates_not_a_dict():
    p = _scaled()
    with pytest.raises(SolverError, match=r"solve_schedule: estimates must be a dict mapping "
                                          r"output and input names to sizes.*got list \[64, 64\]"):
        ts.solve_schedule(p, "host", estimates=[64, 64])
    with pytest.raises(SolverError, match=r"estimate for 'scaled' must be a list of int sizes"):
        ts.solve_schedule(p, "host", estimates={"scaled": [64.5, 3]})


@pytest.mark.parametrize("method", ["auto", "greedy", "ilp"])
def test_solve_schedule_unknown_option(method):
    with pytest.raises(SolverError, match=rf"solve_schedule: unknown {method} option 'bogus'"):
        ts.solve_schedule(_scaled(), "host", estimates={"scaled": [64, 64]}, method=method,
                          bogus=3)


def test_solve_schedule_other_arguments():
    p = _scaled()
    est = {"scaled": [64, 64]}
    with pytest.raises(SolverError, match=r"time_limit must be a positive number of seconds, "
                                          r"got 'a'"):
        ts.solve_schedule(p, "host", estimates=est, time_limit="a")
    with pytest.raises(SolverError, match=r"the first argument must be a Pipeline, got Func"):
        ts.solve_schedule(p.outputs[0], "host", estimates=est)
    with pytest.raises(SolverError, match=r"unknown method 'fast'"):
        ts.solve_schedule(p, "host", estimates=est, method="fast")


# -- the command line ---------------------------------------------------------------------
@pytest.mark.parametrize("argv, message", [
    (["demo", "--method", "bogus"], r"argument --method: invalid choice: 'bogus' \(choose from "
                                    r"'auto', 'greedy', 'ilp', 'beam'\)"),
    (["demo", "--spec", "nope"], r"argument --spec: 'nope': unknown spec name; expected one of "
                                 r"a100, .*host"),
    (["demo", "--size", "-5", "3"], r"argument --size: expected a positive integer, got -5"),
    (["demo", "--size", "100000", "100000"], r"argument --size: 100000 x 100000 is too large"),
    (["bench", "--seed", "-3"], r"argument --seed: expected a non-negative integer, got -3"),
    (["bench", "--methods", "naive,naive"], r"--methods lists 'naive' more than once"),
    (["bench", "--json", "no/such/folder/out.json"], r"--json no/such/folder/out.json: no such "
                                                     r"folder"),
    (["specs", "--bogus"], r"unrecognized arguments: --bogus"),
])
def test_cli_misuse_exits_2_naming_the_option(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert re.search(message, err), err


def test_cli_demo_misuse_as_a_process():
    proc = subprocess.run([sys.executable, "-m", "tilesolve.cli", "demo", "--method", "bogus"],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 2 and "invalid choice: 'bogus'" in proc.stderr, proc.stderr
