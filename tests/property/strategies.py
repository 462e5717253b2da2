"""Hypothesis strategies shared by the property tests: random typed expressions
and small random pipelines, plus brute-force scalar evaluators for both.

From a test in tests/property: ``from strategies import ...``; from elsewhere
in tests/: ``from property.strategies import ...``.

Expressions (``exprs(t)``) use int32 Vars ``x y z``, the RVar ``r.x``, Params
``p_uint8 p_uint16 p_int32 p_float32``, the extent ``img_int32.extent(0)``,
calls to 1-d inputs ``img_<type>`` and to the Func ``lut`` (values in
``LUT_BOUNDS``), Lets, casts, every operator and every math intrinsic.
``scopes(e)`` draws an Interval for every name ``e`` uses; ``points(scope)``
draws a point inside; ``call_hook`` evaluates calls.

Pipelines (``pipelines()``) mix pointwise, stencils, 2x down/upsampling,
inline reductions, histograms with a computed update site, scans, lookups
and boundary conditions over 1-d or 2-d uint8/uint16/int32/float32 data.
``Tracer`` evaluates outputs point by point and records every (Func, point)
read or written.
"""
from __future__ import annotations

import zlib

import numpy as np
from hypothesis import strategies as st

import tilesolve as ts
from tilesolve.analysis.intervals import Interval
from tilesolve.model import expr as E
from tilesolve.model.evaluate import evaluate, extent_key
from tilesolve.model.types import bool_, float32, int32, uint8, uint16

TYPES = (uint8, uint16, int32, float32)
INT_TYPES = (uint8, uint16, int32)
VARS = tuple(ts.Var(n) for n in "xyz")
RDOM = ts.RDom((0, 10), name="r")
PARAMS = {t: ts.Param(t, f"p_{t}") for t in TYPES}
IMAGES = {t: ts.ImageParam(t, 1, f"img_{t}") for t in TYPES}
LUT_BOUNDS = (-5, 300)
LUT = ts.Func("lut")
LUT[VARS[0]] = ts.clamp(VARS[0], *LUT_BOUNDS)
FUNC_BOUNDS = {"lut": Interval(*LUT_BOUNDS)}
LET_VAR = ts.Var("w")
FLOAT_MATH = ("sqrt", "exp", "log", "sin", "cos", "tan", "floor", "ceil", "round", "abs",
              "pow", "atan2", "atan", "asin", "acos", "sinh", "cosh", "tanh", "asinh", "acosh",
              "atanh", "trunc")


# -- data ----------------------------------------------------------------------------
def _h(*key) -> int:
    return zlib.crc32(repr(key).encode())


def data_value(t, *key):
    """A deterministic value of type ``t`` for a call ``key``, edge values included."""
    h = _h(*key)
    if t.is_float():
        specials = (0.0, -0.0, 1.0, -1.5, 3.25, 1e30, -1e30, np.inf, -np.inf, 1e-40)
        return specials[h % 10] if h % 3 == 0 else float(np.float32((h % 20001 - 10000) / 64))
    if t.is_bool():
        return bool(h & 1)
    lo, hi = t.min_value(), t.max_value()
    specials = (lo, hi, 0, 1, lo + 1, hi - 1)
    return specials[h % 6] if h % 4 == 0 else lo + h % (hi - lo + 1)


def call_hook(target, args):
    """Evaluate a call of an expression from ``exprs`` (inputs and ``lut``)."""
    key = tuple(int(np.asarray(a).item()) for a in args)
    if target.name == "lut":
        v = LUT_BOUNDS[0] + _h("lut", key) % (LUT_BOUNDS[1] - LUT_BOUNDS[0] + 1)
        return np.asarray(v, dtype=np.int32)
    return np.asarray(data_value(target.type, target.name, key), dtype=target.type.dtype)


# -- expressions -----------------------------------------------------------------------
def _int_const(t):
    sp = [t.min_value(), t.max_value(), 0, 1, 2, 3, 7, 16, 255]
    if t.is_int():
        sp += [-1, -2, -7, -16]
    sp = [v for v in sp if t.can_represent(v)]
    return st.one_of(st.sampled_from(sp), st.integers(t.min_value(), t.max_value()))


def _float_const():
    return st.one_of(st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 1e30, -1e-30, 0.1, np.inf]),
                     st.floats(-1e6, 1e6, width=32))


def _f32(v) -> float:
    return float(np.float32(v))


@st.composite
def leaves(draw, t, names=VARS):
    if t.is_bool():
        return E.Const(bool_, draw(st.booleans()))
    kind = draw(st.integers(0, 5))
    if kind == 0:
        c = draw(_float_const() if t.is_float() else _int_const(t))
        return E.Const(t, c)
    if kind == 1:
        return PARAMS[t]
    if t == int32:
        return draw(st.sampled_from(names + (RDOM.x, IMAGES[int32].extent(0))))
    return ts.cast(t, draw(st.sampled_from(names)))


@st.composite
def exprs(draw, t=int32, depth=4, names=VARS):
    """A random expression of type ``t`` (bool, uint8, uint16, int32 or float32)."""
    if depth <= 0 or draw(st.integers(0, 5)) == 0:
        return draw(leaves(t, names))
    sub = lambda tt, n=names: exprs(tt, depth - 1, n)  # noqa: E731
    if t.is_bool():
        kind = draw(st.sampled_from(["cmp", "cmp", "and", "or", "xor", "not", "cast"]))
        if kind == "cmp":
            tt = draw(st.sampled_from(TYPES))
            op = draw(st.sampled_from(["eq", "ne", "lt", "le", "gt", "ge"]))
            a = draw(sub(tt))
            b = E.binop("add", a, draw(sub(tt))) if draw(st.booleans()) else draw(sub(tt))
            return E.binop(op, a, b)
        if kind in ("and", "or"):
            return E.logical(kind, draw(sub(bool_)), draw(sub(bool_)))
        if kind == "xor":
            return draw(sub(bool_)) ^ draw(sub(bool_))
        if kind == "not":
            return ~draw(sub(bool_))
        return ts.cast(bool_, draw(sub(draw(st.sampled_from(TYPES)))))
    kinds = ["add", "sub", "mul", "div", "mod", "min", "max", "select", "cast", "call", "near",
             "near"]
    kinds += ["math", "math"] if t.is_float() else ["abs", "bits", "shift", "invert"]
    if t == int32:
        kinds += ["let", "lut"]
    if t.bits == 32:
        kinds += ["reinterpret"]
    kind = draw(st.sampled_from(kinds))
    if kind in ("div", "mod") and draw(st.booleans()):
        return E.binop(kind, draw(sub(t)), draw(leaves(t, names)))   # a divisor from scope
    if kind in ("add", "sub", "mul", "div", "mod", "min", "max"):
        return E.binop(kind, draw(sub(t)), draw(sub(t)))
    if kind == "near":
        # one subexpression twice, shifted: min(e + 1, e), (e * 4 + 3) / 4 ...
        e = draw(sub(t))
        k = E.Const(t, draw(_float_const() if t.is_float() else _int_const(t)))
        op = draw(st.sampled_from(["add", "add", "sub", "mul", "div", "mod", "min", "max"]))
        return E.binop(draw(st.sampled_from(["min", "max", "sub", "div", "mod"])),
                       E.binop(op, e, k), e)
    if kind == "select":
        return ts.select(draw(sub(bool_)), draw(sub(t)), draw(sub(t)))
    if kind == "cast":
        return ts.cast(t, draw(sub(draw(st.sampled_from(TYPES + (bool_,))))))
    if kind == "call":
        return IMAGES[t][draw(sub(int32))]
    if kind == "lut":
        return LUT[draw(sub(int32))]
    if kind == "abs":
        return ts.cast(t, ts.abs(draw(sub(t))))
    if kind == "bits":
        return E.BinOp(draw(st.sampled_from(E.BIT_OPS[:3])), draw(sub(t)), draw(sub(t)))
    if kind == "shift":       # any amount: negative and wide amounts have defined results
        amount = draw(st.one_of(sub(t), st.integers(-2 * t.bits, 2 * t.bits)))
        return (E.shift(draw(st.sampled_from(["shl", "shr"])), draw(sub(t)), amount))
    if kind == "invert":
        return ~draw(sub(t))
    if kind == "reinterpret":       # the bits of a float as an int32, or the reverse
        return ts.reinterpret(t, draw(sub(float32 if t == int32 else int32)))
    if kind == "let":
        value = draw(sub(int32))
        body = draw(exprs(t, depth - 1, names + (LET_VAR,)))
        return E.Let(LET_VAR.name, value, body)
    name = draw(st.sampled_from(FLOAT_MATH))
    if name in ("pow", "atan2"):
        return E.Intrinsic(name, (draw(sub(t)), draw(sub(t))), t)
    return E.Intrinsic(name, (draw(sub(t)),), t)


def _names(e):
    from tilesolve.model.visit import walk
    out = {}
    for n in walk(e):
        if isinstance(n, (E.Var, E.RVar, E.Param)) and n.name != LET_VAR.name:
            out[n.name] = n.type
        elif isinstance(n, E.BufferExtent):
            out[extent_key(n.image, n.dim)] = int32
    return out


@st.composite
def _int_interval(draw, lo, hi):
    size = draw(st.sampled_from(["small", "small", "zero", "medium", "any", "edge"]))
    if size == "edge":                        # up to one end of the type's range
        a = draw(st.integers(lo, hi))
        return Interval(a, hi) if draw(st.booleans()) else Interval(lo, a)
    if size == "zero" and lo <= 0 <= hi:     # an end at or next to zero: divisors
        a, b = draw(st.integers(max(lo, -3), 0)), draw(st.integers(0, min(hi, 3)))
        return Interval(a, b)
    if size == "small":
        lo, hi = max(lo, -20), min(hi, 20)
    elif size == "medium":
        lo, hi = max(lo, -3000), min(hi, 3000)
    a, b = draw(st.integers(lo, hi)), draw(st.integers(lo, hi))
    return Interval(min(a, b), max(a, b))


@st.composite
def scopes(draw, e):
    """An Interval for every name ``e`` uses (floats: float32 endpoints)."""
    scope = {}
    for name, t in sorted(_names(e).items()):
        if name.endswith(".extent.0"):
            scope[name] = draw(_int_interval(1, 100))
        elif name == RDOM.x.name:
            scope[name] = draw(_int_interval(0, 9))
        elif t.is_float():
            a, b = (_f32(draw(_float_const().filter(np.isfinite))) for _ in range(2))
            scope[name] = Interval(min(a, b), max(a, b))
        else:
            scope[name] = draw(_int_interval(t.min_value(), t.max_value()))
    return scope


def _name_type(name):
    for t, p in PARAMS.items():
        if p.name == name:
            return t
    return int32


@st.composite
def points(draw, scope):
    """An environment for ``evaluate`` with every name at a point inside its Interval."""
    env = {}
    for name, iv in scope.items():
        t = _name_type(name)
        if t.is_float():
            env[name] = np.float32(draw(st.floats(iv.lo, iv.hi, width=32)))
        else:
            special = [v for v in (iv.lo, iv.hi, 0, 1, -1) if iv.lo <= v <= iv.hi]
            v = draw(st.one_of(st.sampled_from(special), st.integers(iv.lo, iv.hi)))
            env[name] = np.asarray(v, dtype=t.dtype)
    return env


def subvalues(e, env, call=call_hook, lets=()):
    """Yield ``(node, value, env, lets)`` for every node of ``e``.

    ``env`` is the environment the node is evaluated in (Let names bound) and
    ``lets`` the ``(name, value_node)`` pairs in effect, outermost first.
    """
    yield e, np.asarray(evaluate(e, env, call)).item(), env, lets
    if isinstance(e, E.Let):
        yield from subvalues(e.value, env, call, lets)
        inner = dict(env)
        inner[e.name] = evaluate(e.value, env, call)
        yield from subvalues(e.body, inner, call, lets + ((e.name, e.value),))
        return
    for f in e._fields:
        v = getattr(e, f)
        kids = (v,) if isinstance(v, E.Expr) else v if isinstance(v, tuple) else ()
        for k in kids:
            if isinstance(k, E.Expr):
                yield from subvalues(k, env, call, lets)


def int32_overflows(e, env, call=call_hook) -> bool:
    """Does any int32 ``+ - *`` in ``e`` wrap at this point (the simplifier assumes not)?"""
    for n, _, nenv, _ in subvalues(e, env, call):
        if isinstance(n, E.BinOp) and n.type == int32 and n.op in ("add", "sub", "mul"):
            a = int(np.asarray(evaluate(n.a, nenv, call)).item())
            b = int(np.asarray(evaluate(n.b, nenv, call)).item())
            exact = {"add": a + b, "sub": a - b, "mul": a * b}[n.op]
            if not int32.can_represent(exact):
                return True
    return False


# -- pipelines ---------------------------------------------------------------------------
X, Y = ts.Var("x"), ts.Var("y")
UNSAFE_KINDS = ("lookup_unclamped", "update_param")
STAGE_KINDS = ("pointwise", "stencil", "down", "up", "reduce", "hist", "scan", "lookup",
               "select", "update_const", "bits", "tuple", "argmax")


class Case:
    """A random pipeline with the arguments ``required_regions`` needs.

    ``exact``: no data-dependent index and no mirror boundary, so the analysis
    should be exact (the bounding box of what is touched).
    """

    def __init__(self, pipeline, sizes, input_sizes, exact, kinds):
        self.pipeline, self.sizes, self.input_sizes = pipeline, sizes, input_sizes
        self.exact, self.kinds = exact, kinds

    def __repr__(self):
        return (f"Case(kinds={self.kinds}, sizes={self.sizes}, input_sizes={self.input_sizes},"
                f"\n{self.pipeline})")


def _conv(e, t):
    return e if e.type == t else ts.cast(t, e)


@st.composite
def pipelines(draw, max_stages=5, types=TYPES, kinds=STAGE_KINDS, min_images=1):
    """A random small pipeline (1-d or 2-d) as a ``Case``.  ``min_images=0`` also draws
    pipelines without an ImageParam (a coordinate Func is the source); the kinds in
    ``UNSAFE_KINDS`` (opt-in) read at unclamped data-dependent indices or write at sites
    that a Param moves."""
    dims = draw(st.integers(1, 2))
    vs = (X, Y)[:dims]
    avail, input_sizes, exact, used = [], {}, True, []
    for i in range(draw(st.integers(min_images, 2))):
        im = ts.ImageParam(draw(st.sampled_from(types)), dims, f"in{i}")
        bc = draw(st.sampled_from(["none", "none", "repeat_edge", "constant_exterior",
                                   "mirror_image", "mirror_interior"]))
        if bc == "none":
            avail.append(im)
            continue
        input_sizes[im.name] = [draw(st.integers(1, 6)) for _ in range(dims)]
        avail.append(getattr(ts.boundary, bc)(im))
        exact = exact and not bc.startswith("mirror")
    if not avail:
        src = ts.Func("src")
        src[vs] = X * 3 - 4 if dims == 1 else X * 3 + Y - 4
        avail.append(src)
    for i in range(draw(st.integers(1, max_stages))):
        kind = draw(st.sampled_from(kinds))
        t = draw(st.sampled_from((int32, float32)))
        p = avail[-1] if draw(st.booleans()) else draw(st.sampled_from(avail))   # chains
        q = draw(st.sampled_from(avail))
        f = ts.Func(f"f{i}")
        rest = vs[1:]
        if kind == "pointwise":
            f[vs] = _conv(p[vs], t) + _conv(q[vs], t) * 2
        elif kind == "stencil":
            offs = draw(st.lists(st.tuples(*[st.integers(-2, 2)] * dims), min_size=1, max_size=3))
            f[vs] = sum((_conv(p[tuple(v + o for v, o in zip(vs, off))], t) for off in offs[1:]),
                        _conv(p[tuple(v + o for v, o in zip(vs, offs[0]))], t))
        elif kind == "down":
            k = draw(st.integers(0, 1))
            f[vs] = _conv(p[(2 * X + k,) + tuple(2 * v for v in rest)], t)
        elif kind == "up":
            f[vs] = _conv(p[(X / 2,) + rest], t)
        elif kind == "reduce":
            r = ts.RDom((draw(st.integers(-2, 0)), draw(st.integers(1, 3))))
            f[vs] = ts.sum(_conv(p[(X + r.x,) + rest], t))
        elif kind == "hist":
            n = ts.Param(int32, "n_hist", 3) if draw(st.booleans()) else draw(st.integers(1, 4))
            r = ts.RDom((0, n))
            v = p[(r.x,) + rest]
            idx = ts.cast(int32, v) if v.type in (uint8,) else ts.clamp(ts.cast(int32, v), -2, 8)
            f[vs] = E.Const(t, 0)
            f[(idx,) + rest] = f[(idx,) + rest] + E.Const(t, 1)
            exact = False
        elif kind == "scan":
            r = ts.RDom((draw(st.integers(-1, 3)), draw(st.integers(1, 4))))
            k = draw(st.sampled_from([-1, -1, -2, 1]))
            f[vs] = _conv(p[vs], t)
            site = (r.x,) if dims == 1 else (X, r.x)
            prev = (r.x + k,) if dims == 1 else (X, r.x + k)
            f[site] = f[prev] + f[site]
        elif kind == "lookup":
            v = p[vs]
            idx = ts.cast(int32, v) if v.type == uint8 else ts.clamp(ts.cast(int32, v), -3, 3)
            f[vs] = _conv(q[(idx,) + rest], t)
            exact = False
        elif kind == "lookup_unclamped":       # int32 values: no usable bound
            f[vs] = _conv(q[(ts.cast(int32, p[vs]),) + rest], t)
            exact = False
        elif kind == "update_param":           # a Param moves the sites written
            shift = ts.Param(int32, f"shift{i}", draw(st.integers(-3, 3)))
            r = ts.RDom((0, draw(st.integers(1, 3))))
            f[vs] = _conv(p[vs], t)
            site = (r.x + shift,) + rest
            f[site] = f[site] + E.Const(t, 1)
        elif kind == "bits":                   # integer bit operations of two stages
            a, b = ts.cast(int32, p[vs]), ts.cast(int32, q[vs])
            f[vs] = _conv(((a ^ (b << 3)) & 0x7fff) | (~a >> draw(st.integers(-3, 40))), t)
        elif kind == "tuple":                  # a Tuple Func, its values read apart
            tup = ts.Func(f"t{i}")
            tup[vs] = (_conv(p[vs], t) * 3, _conv(q[vs], float32) - 1.5)
            if draw(st.booleans()):            # an update whose values read each other
                a, b = tup[vs]
                tup[vs] = (_conv(b, t) - a, ts.select(a > _conv(b, t), b * 0.5, b + 1.0))
            f[vs] = tup[vs][0] + _conv(tup[(X + 1,) + rest][1], t)
        elif kind == "argmax":                 # ts.argmax / argmin over a window of p
            r = ts.RDom((draw(st.integers(-2, 0)), draw(st.integers(1, 4))))
            best = (ts.argmax if draw(st.booleans()) else ts.argmin)(p[(X + r.x,) + rest])
            f[vs] = _conv(best[0], t) * 5 + _conv(best[1], t)
        elif kind == "select":
            f[vs] = ts.select(X > 1, _conv(p[(X - 1,) + rest], t), _conv(q[(X + 2,) + rest], t))
        else:  # update_const: f[c] += 1, or f[c] = q[...] (the old value is not read)
            site = (draw(st.integers(-2, 8)),) + rest
            f[vs] = _conv(p[vs], t)
            if draw(st.booleans()):
                f[site] = f[site] + E.Const(t, 1)
            else:
                f[site] = _conv(q[(draw(st.integers(-1, 2)),) + rest], t)
                exact = False     # the pure value at the site is computed, never read
        avail.append(f)
        used.append(kind)
    funcs = [a for a in avail if isinstance(a, ts.Func)]
    outs = [funcs[-1]]
    if len(funcs) > 1 and draw(st.booleans()):
        outs.append(draw(st.sampled_from(funcs[:-1])))
    sizes = [draw(st.integers(1, 5)) for _ in range(dims)]
    return Case(ts.Pipeline(outs), sizes, input_sizes, exact, used)


class Tracer:
    """Evaluate a pipeline point by point, recording every (Func/input, point) touched.

    Update semantics as in Halide: for each value of an update's pure Vars, the
    RDom runs in order (``r.x`` fastest); reads of the Func inside the update see
    the writes made so far in that slice.
    """

    def __init__(self, pipeline, input_sizes=None, params=None):
        self.pipeline = pipeline
        self.touched: dict[str, set] = {}
        self.memo: dict = {}
        self.slices: dict = {}
        self.env = {n: np.int32(p.default) for n, p in pipeline.params.items()
                    if p.default is not None}
        self.env.update(params or {})
        for name, sizes in (input_sizes or {}).items():
            for d, s in enumerate(sizes):
                self.env[extent_key(name, d)] = np.int32(s)

    def run(self, sizes):
        import itertools
        for o in self.pipeline.outputs:
            for pt in itertools.product(*[range(s) for s in sizes]):
                self._touch(o.name, pt)
                self.value(o, pt, len(o.updates))
        return self.touched

    def _touch(self, name, pt):
        self.touched.setdefault(name, set()).add(pt)

    def _hook(self, f=None, k=0, state=None):
        def call(target, args):
            pt = tuple(int(np.asarray(a).item()) for a in args)
            self._touch(target.name, pt)
            if isinstance(target, ts.ImageParam):
                return np.asarray(data_value(target.type, target.name, pt), target.type.dtype)
            if target is f:
                return state[pt] if pt in state else self.value(f, pt, k - 1)
            return self.value(target, pt, len(target.updates))
        return call

    def value(self, f, pt, k):
        """The value of ``f`` at ``pt`` after its first ``k`` updates."""
        key = (f.name, pt, k)
        if key not in self.memo:
            if k == 0:
                env = dict(self.env)
                env.update({a.name: np.int32(c) for a, c in zip(f.args, pt)})
                v = evaluate(f.pure.value, env, self._hook())
            else:
                state = self._slice(f, k, pt)
                v = state[pt] if pt in state else self.value(f, pt, k - 1)
            self.memo[key] = v
        return self.memo[key]

    def _slice(self, f, k, pt):
        import itertools
        d = f.updates[k - 1]
        pure = [(i, a) for i, a in enumerate(d.args) if isinstance(a, E.Var)]
        key = (f.name, k, tuple(pt[i] for i, _ in pure))
        if key in self.slices:
            return self.slices[key]
        state: dict = {}
        self.slices[key] = state
        env0 = dict(self.env)
        env0.update({a.name: np.int32(pt[i]) for i, a in pure})
        ranges = [()]
        if d.rdom is not None:
            ranges = itertools.product(*reversed([
                range(int(evaluate(m, env0)), int(evaluate(m, env0)) + int(evaluate(n, env0)))
                for m, n in zip(d.rdom.mins, d.rdom.extents)]))
        hook = self._hook(f, k, state)
        for rs in ranges:
            env = dict(env0)
            env.update({d.rdom[i].name: np.int32(v) for i, v in enumerate(reversed(rs))})
            if d.rdom is not None and not all(bool(evaluate(p, env, hook))
                                              for p in d.rdom.predicates):
                continue
            site = tuple(int(np.asarray(evaluate(a, env, hook)).item()) for a in d.args)
            self._touch(f.name, site)
            state[site] = evaluate(d.value, env, hook)
        return state
