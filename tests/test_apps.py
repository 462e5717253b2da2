"""The app suite: every app's DSL pipeline, run by the reference evaluator,
equals its independently written numpy reference at a small size.

Integer outputs are compared exactly.  Float outputs: the numpy references
perform the same float32 operations in the same order, so they agree to a
few ulps (``FLOAT_RTOL``/``FLOAT_ATOL``); matmul's reference is float64
``A @ B`` and gets a tolerance that grows with sqrt(K).
"""
import numpy as np
import pytest

import tilesolve as ts
from tilesolve.apps import APPS, get_app, list_apps

FLOAT_RTOL, FLOAT_ATOL = 1e-5, 1e-6

# (case id, app, build params on top of the app's SMALL_BUILD, sizes or None for SMALL_SIZE);
# Param values other than the paper's go in PARAM_OVERRIDES
CASES = [
    ("blur", "blur", {}, None),
    ("blur_uint16", "blur", {"dtype": "uint16"}, None),
    ("unsharp", "unsharp", {}, None),
    ("harris", "harris", {}, None),
    ("camera_pipe", "camera_pipe", {}, None),
    ("local_laplacian_J4", "local_laplacian", {}, None),
    ("bilateral_grid", "bilateral_grid", {}, None),
    ("bilateral_grid_s4", "bilateral_grid", {"s_sigma": 4}, [30, 22]),
    ("interpolate_6", "interpolate", {}, None),
    ("hist_eq", "hist_eq", {}, None),
    ("max_filter_r6", "max_filter", {}, None),
    ("nl_means_5", "nl_means", {}, None),
    ("conv_layer", "conv_layer", {}, None),
    ("matmul", "matmul", {}, None),
    ("matmul_rect", "matmul", {"k": 23}, [17, 9]),
    ("iir_blur", "iir_blur", {}, None),
    ("stencil_chain_8", "stencil_chain", {}, None),
    ("stencil_chain_uint16", "stencil_chain", {"dtype": "uint16"}, None),
    ("lens_blur_small_params", "lens_blur", {}, None),
]
PARAM_OVERRIDES = {"lens_blur_small_params": {"slices": 12, "focus_depth": 4,
                                              "aperture_samples": 10}}
# the paper's structural parameters at the small size (a few tenths of a second each)
SLOW_CASES = [
    ("local_laplacian_J8", "local_laplacian", {"pyramid_levels": 8}, None),
    ("interpolate_10", "interpolate", {"levels": 10}, None),
    ("max_filter_r26", "max_filter", {"radius": 26}, None),
    ("nl_means_7", "nl_means", {"patch_size": 7, "search_area": 7}, None),
    ("stencil_chain_32", "stencil_chain", {"stages": 32}, None),
    ("lens_blur", "lens_blur", {}, None),
]

# Func counts at the paper's parameters (Mullapudi 2016's Table 1 in comments)
FUNC_COUNTS = {"blur": 2, "unsharp": 8, "harris": 12, "camera_pipe": 35,
               "local_laplacian": 102, "bilateral_grid": 7, "interpolate": 50, "hist_eq": 9,
               "max_filter": 7, "nl_means": 12, "conv_layer": 2, "matmul": 2, "iir_blur": 4,
               "stencil_chain": 34, "lens_blur": 71}


def _params(app, extra):
    p = dict(getattr(app, "SMALL_BUILD", {}))
    p.update(extra)
    return p


def _run(case, name, extra, sizes):
    app = get_app(name)
    params = _params(app, extra)
    sizes = list(app.SMALL_SIZE if sizes is None else sizes)
    pipe, _ = app.build(sizes=sizes, **params)
    inputs = app.make_inputs(sizes, seed=0, **params)
    inputs.update(PARAM_OVERRIDES.get(case, {}))
    got = ts.reference.realize(pipe, sizes, **inputs)
    want = app.numpy_reference(inputs, sizes, **params)
    return got, np.asarray(want), sizes


def _compare(name, got, want, sizes):
    assert got.shape == tuple(reversed(sizes)), (got.shape, sizes)
    assert want.shape == got.shape
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    # the comparison must mean something: the output varies and is finite
    assert np.all(np.isfinite(got.astype(np.float64)))
    assert np.unique(want).size > 10
    if np.issubdtype(got.dtype, np.integer):
        np.testing.assert_array_equal(got, want)
    elif name.startswith("matmul"):
        tol = 1e-6 * np.sqrt(got.size) * max(1.0, float(np.abs(want).max()))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=tol)
    else:
        np.testing.assert_allclose(got, want, rtol=FLOAT_RTOL, atol=FLOAT_ATOL)


@pytest.mark.parametrize("case,name,extra,sizes", CASES, ids=[c[0] for c in CASES])
def test_app_matches_numpy_reference(case, name, extra, sizes):
    got, want, sizes = _run(case, name, extra, sizes)
    _compare(case, got, want, sizes)


@pytest.mark.slow
@pytest.mark.parametrize("case,name,extra,sizes", SLOW_CASES, ids=[c[0] for c in SLOW_CASES])
def test_app_matches_numpy_reference_paper_params(case, name, extra, sizes):
    got, want, sizes = _run(case, name, extra, sizes)
    _compare(case, got, want, sizes)


def test_every_app_is_tested():
    assert {c[1] for c in CASES} == set(list_apps())


@pytest.mark.parametrize("name", sorted(APPS))
def test_paper_build_estimates_and_func_count(name):
    app = get_app(name)
    pipe, est = app.build()
    assert len(pipe.funcs) == FUNC_COUNTS[name]
    assert set(est) == set(pipe.output_names) | set(pipe.images)
    out = pipe.outputs[0]
    assert est[out.name] == list(app.PAPER_SIZE)
    assert len(est[out.name]) == out.dimensions()
    for img_name, img in pipe.images.items():
        assert len(est[img_name]) == img.dims
        assert all(isinstance(v, int) and v > 0 for v in est[img_name])


@pytest.mark.parametrize("name", sorted(APPS))
def test_inputs_match_estimates_and_are_seeded(name):
    app = get_app(name)
    params = _params(app, {})
    sizes = list(app.SMALL_SIZE)
    pipe, est = app.build(sizes=sizes, **params)
    a = app.make_inputs(sizes, seed=0, **params)
    b = app.make_inputs(sizes, seed=0, **params)
    c = app.make_inputs(sizes, seed=1, **params)
    assert set(a) == set(pipe.images) | set(pipe.params)
    changed = False
    for img_name, img in pipe.images.items():
        arr = a[img_name]
        assert arr.dtype == img.type.dtype
        assert list(reversed(arr.shape)) == est[img_name], img_name
        np.testing.assert_array_equal(arr, b[img_name])
        changed |= not np.array_equal(arr, c[img_name])
    assert changed, "a different seed should give different inputs"


def test_get_app_unknown_name_lists_the_apps():
    with pytest.raises(KeyError, match="blur"):
        get_app("no_such_app")


PARAM_CHANGES = [
    ("camera_pipe", {"sharpen_strength": 2.5}),
    ("camera_pipe", {"color_temp": 6000.0, "contrast": 20.0, "gamma": 1.6}),
    ("local_laplacian", {"alpha": 3.0 / 7, "beta": 0.7}),
    ("bilateral_grid", {"r_sigma": 0.25}),
    ("nl_means", {"sigma": 0.3}),
    ("iir_blur", {"alpha": 0.35}),
    ("lens_blur", {"focus_depth": 20, "blur_radius_scale": 0.3, "aperture_samples": 12}),
]


@pytest.mark.parametrize("name,change", PARAM_CHANGES,
                         ids=[f"{n}-{'-'.join(c)}" for n, c in PARAM_CHANGES])
def test_params_reach_both_implementations(name, change):
    """Changing a Param changes the output, identically in the DSL and numpy versions."""
    app = get_app(name)
    params = _params(app, {})
    sizes = list(app.SMALL_SIZE)
    pipe, _ = app.build(sizes=sizes, **params)
    inputs = app.make_inputs(sizes, **params)
    before = np.asarray(app.numpy_reference(inputs, sizes, **params))
    inputs.update(change)
    got = ts.reference.realize(pipe, sizes, **inputs)
    want = np.asarray(app.numpy_reference(inputs, sizes, **params))
    _compare(name, got, want, sizes)
    assert not np.array_equal(want, before)
