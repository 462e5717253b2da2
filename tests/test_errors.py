"""One test per user error: the exception type and a message naming the culprit."""
import numpy as np
import pytest

import tilesolve as ts
from tilesolve.errors import BoundsError, PipelineError, RealizeError

x, y = ts.Var("x"), ts.Var("y")


# -- building the algorithm ------------------------------------------------------------
def test_func_called_but_never_defined():
    g = ts.Func("g_undefined")
    f = ts.Func("f")
    with pytest.raises(PipelineError, match=r"Func g_undefined is called but never defined"):
        f[x] = g[x] + 1


def test_pipeline_of_undefined_func():
    with pytest.raises(PipelineError, match=r"Func nothing_here .*never defined"):
        ts.Pipeline(ts.Func("nothing_here"))


def test_func_wrong_number_of_arguments():
    f = ts.Func("f2d")
    f[x, y] = x + y
    g = ts.Func("g")
    with pytest.raises(PipelineError, match=r"Func f2d has 2 dimensions but is called with 1 arguments"):
        g[x] = f[x]


def test_imageparam_wrong_number_of_arguments():
    inp = ts.ImageParam(ts.float32, 3, "rgb")
    with pytest.raises(PipelineError, match=r"input rgb has 3 dimensions but is called with 2 arguments"):
        inp[x, y]


def test_update_wrong_number_of_arguments():
    f = ts.Func("f_upd_arity")
    f[x, y] = 0
    with pytest.raises(PipelineError, match=r"f_upd_arity has 2 dimensions but the update has 1"):
        f[x] = 1


def test_cycle_through_an_update():
    f, g = ts.Func("cyc_f"), ts.Func("cyc_g")
    f[x] = 0
    g[x] = f[x] + 1
    f[x] = f[x] + g[x]
    with pytest.raises(PipelineError, match=r"cycle: cyc_g -> cyc_f -> cyc_g"):
        ts.Pipeline(g)
    with pytest.raises(PipelineError, match=r"cycle: cyc_f -> cyc_g -> cyc_f"):
        ts.Pipeline(f)


def test_update_uses_var_not_in_pure_definition():
    f = ts.Func("f_var")
    f[x] = 0
    with pytest.raises(PipelineError, match=r"f_var: the update uses Var y, which is not in its pure"):
        f[x] = f[x] + y


def test_pure_var_in_wrong_position_of_update():
    f = ts.Func("f_pos")
    f[x, y] = 0
    with pytest.raises(PipelineError, match=r"f_pos: .*pure Var y, so it must appear as argument 1 .*got x"):
        f[y, x] = 1
    with pytest.raises(PipelineError, match=r"f_pos: .*pure Var y, so it must appear as argument 1"):
        f[0, 3] = f[0, y]


def test_pure_definition_args_must_be_vars():
    f = ts.Func("f_pure_args")
    with pytest.raises(PipelineError, match=r"f_pure_args: argument 0 of the pure definition"):
        f[x + 1] = 0


def test_pure_definition_uses_foreign_var():
    f = ts.Func("f_foreign")
    with pytest.raises(PipelineError, match=r"f_foreign: the pure definition uses Var y"):
        f[x] = y


def test_select_with_mismatched_types():
    a = ts.cast(ts.float32, x)
    b = ts.cast(ts.int16, y)
    with pytest.raises(PipelineError, match=r"select: the branches have different types.*float32.*int16"):
        ts.select(x > 0, a, b)


def test_select_condition_not_bool():
    with pytest.raises(PipelineError, match=r"select condition x has type int32, expected bool"):
        ts.select(x, 1, 2)


def test_update_value_of_wrong_type():
    f = ts.Func("f_int")
    f[x] = x
    with pytest.raises(PipelineError, match=r"f_int: update value .* has type float32 but f_int is int32"):
        f[x] = ts.cast(ts.float32, x) * 0.5
    with pytest.raises(PipelineError, match=r"f_int: update value 1.5 has type float32"):
        f[x] = 1.5


def test_float_used_as_an_index():
    inp = ts.ImageParam(ts.uint8, 1, "idx_in")
    with pytest.raises(PipelineError, match=r"input idx_in: argument 0 .* has type float32; indices must be integers"):
        inp[ts.cast(ts.float32, x)]
    f = ts.Func("f_idx")
    f[x] = x
    with pytest.raises(PipelineError, match=r"Func f_idx: argument 0 \(float32\(x\) \+ 0.5\) has type float32"):
        f[x + 0.5]


def test_if_on_an_expr():
    with pytest.raises(PipelineError, match=r"truth value of the expression x > 0 is not known.*select"):
        if x > 0:
            pass
    with pytest.raises(PipelineError, match=r"truth value of the expression x \+ 1"):
        bool(x + 1)


def test_python_and_or_on_exprs():
    with pytest.raises(PipelineError, match=r"truth value"):
        (x > 0) and (y > 0)


def test_bool_used_in_arithmetic():
    with pytest.raises(PipelineError, match=r"arithmetic '\+' on bool operands \(x > 0, y > 0\)"):
        (x > 0) + (y > 0)
    with pytest.raises(PipelineError, match=r"arithmetic '\*' on bool operands"):
        (x > 0) * (y < 0)


def test_logical_op_on_non_bool():
    with pytest.raises(PipelineError, match=r"'&' mixes the boolean y > 0 with x \+ 1 of type int32"):
        (x + 1) & (y > 0)


def test_bit_ops_on_floats_are_refused():
    f = ts.cast(ts.float32, x)
    with pytest.raises(PipelineError, match=r"'\|' needs integer .* got float32\(x\) of type float32"):
        f | 1
    with pytest.raises(PipelineError, match=r"'<<' needs integer .* float32"):
        f << 2
    with pytest.raises(PipelineError, match=r"'~' needs an integer or boolean operand, got float32"):
        ~f


def test_integer_constant_that_does_not_fit():
    inp = ts.ImageParam(ts.uint8, 1, "u8_in")
    with pytest.raises(PipelineError, match=r"integer constant 300 does not fit in uint8"):
        inp[x] + 300
    with pytest.raises(PipelineError, match=r"integer constant -1 does not fit in uint8"):
        inp[x] * -1


def test_rdom_bad_ranges():
    with pytest.raises(PipelineError, match=r"RDom rbad: dimension 0 has extent 0 <= 0"):
        ts.RDom((0, 0), name="rbad")
    with pytest.raises(PipelineError, match=r"RDom rvar: the extent of dimension 0 .* may use only constants"):
        ts.RDom((0, x), name="rvar")


def test_two_rdoms_in_one_update():
    r1, r2 = ts.RDom((0, 4), name="ra"), ts.RDom((0, 4), name="rb")
    f = ts.Func("f_two_rdoms")
    f[x] = 0
    with pytest.raises(PipelineError, match=r"f_two_rdoms: an update may use one RDom, got \['ra', 'rb'\]"):
        f[r1.x] = f[r1.x] + r2.x


# -- realize() arguments ----------------------------------------------------------------
def _pipe():
    inp = ts.ImageParam(ts.float32, 2, "image")
    k = ts.Param(ts.float32, "gain")
    f = ts.Func("scaled")
    f[x, y] = inp[x + 1, y] * k
    return ts.Pipeline(f)


def _img(w=9, h=5, dtype=np.float32):
    return np.arange(w * h, dtype=dtype).reshape(h, w)


def test_realize_missing_input():
    with pytest.raises(RealizeError, match=r"missing input 'image' \(a 2-D float32"):
        ts.reference.realize(_pipe(), [8, 5], gain=1.0)


def test_realize_missing_param():
    with pytest.raises(RealizeError, match=r"missing param 'gain' \(float32\), which has no default"):
        ts.reference.realize(_pipe(), [8, 5], image=_img())


def test_realize_unknown_keyword():
    with pytest.raises(RealizeError, match=r"unknown argument 'imgae'.*inputs and params are: image, gain"):
        ts.reference.realize(_pipe(), [8, 5], imgae=_img(), gain=1.0)


def test_realize_wrong_dtype():
    with pytest.raises(RealizeError, match=r"input 'image' has dtype float64 but the pipeline expects dtype float32"):
        ts.reference.realize(_pipe(), [8, 5], image=_img(dtype=np.float64), gain=1.0)


def test_realize_wrong_rank():
    with pytest.raises(RealizeError, match=r"input 'image' has rank 3 .* expects rank 2"):
        ts.reference.realize(_pipe(), [8, 5], image=np.zeros((1, 5, 9), np.float32), gain=1.0)


def test_realize_input_too_small():
    # scaled[x, y] reads image[x + 1, y]: an 8-wide output needs image columns 1..8.
    with pytest.raises(RealizeError, match=r"input 'image' is too small: dimension 0 \(numpy axis 1\) "
                                           r"must cover \[1, 8\] but the array has extent 8"):
        ts.reference.realize(_pipe(), [8, 5], image=_img(w=8), gain=1.0)
    with pytest.raises(RealizeError, match=r"input 'image' is too small: dimension 1 .*\[0, 5\].*extent 5"):
        ts.reference.realize(_pipe(), [8, 6], image=_img(w=9, h=5), gain=1.0)


def test_realize_param_of_wrong_kind():
    i = ts.Param(ts.uint8, "level")
    f = ts.Func("lv")
    f[x] = ts.cast(ts.uint8, x) + i
    with pytest.raises(RealizeError, match=r"param 'level' is uint8; 300 does not fit"):
        ts.reference.realize(ts.Pipeline(f), [4], level=300)
    with pytest.raises(RealizeError, match=r"param 'level' is uint8, got 1.5"):
        ts.reference.realize(ts.Pipeline(f), [4], level=1.5)


def test_realize_bad_sizes():
    with pytest.raises(RealizeError, match=r"output scaled has 2 dimensions but 1 sizes"):
        ts.reference.realize(_pipe(), [8], image=_img(), gain=1.0)
    with pytest.raises(RealizeError, match=r"size 1 of output scaled must be a positive int"):
        ts.reference.realize(_pipe(), [8, 0], image=_img(), gain=1.0)


def test_realize_unbounded_data_dependent_index():
    idx = ts.ImageParam(ts.int32, 1, "indices")
    table = ts.ImageParam(ts.float32, 1, "table")
    f = ts.Func("lookup")
    f[x] = table[idx[x]]
    with pytest.raises(BoundsError, match=r"Func lookup reads table in dimension 0"):
        ts.reference.realize(ts.Pipeline(f), [4], indices=np.zeros(4, np.int32),
                             table=np.zeros(8, np.float32))
    g = ts.Func("clamped_lookup")
    g[x] = table[ts.clamp(idx[x], 0, 7)]
    out = ts.reference.realize(ts.Pipeline(g), [4], indices=np.array([-5, 3, 9, 7], np.int32),
                               table=np.arange(8, dtype=np.float32))
    assert out.tolist() == [0, 3, 7, 7]
