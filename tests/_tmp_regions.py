"""TEMPORARY crude region inference for test_reference until required_regions lands."""
import math

from tilesolve.model import expr as E
from tilesolve.model.evaluate import eval_scalar, extent_key
from tilesolve.model.pipeline import definition_exprs
from tilesolve.model.visit import walk

INF = math.inf


def _trange(t):
    return (t.min_value(), t.max_value()) if t.is_integral() else (-INF, INF)


def iv(e, env):
    if isinstance(e, E.Const):
        return (e.value, e.value)
    if isinstance(e, (E.Var, E.RVar, E.Param)):
        return env[e.name]
    if isinstance(e, E.BufferExtent):
        return env[extent_key(e.image, e.dim)]
    if isinstance(e, E.Cast):
        a = iv(e.value, env)
        r = _trange(e.type)
        return a if r[0] <= a[0] and a[1] <= r[1] else r
    if isinstance(e, E.BinOp):
        if e.op in E.CMP_OPS or e.op in E.BOOL_OPS:
            return (0, 1)
        a, b = iv(e.a, env), iv(e.b, env)
        if e.op == "add":
            return (a[0] + b[0], a[1] + b[1])
        if e.op == "sub":
            return (a[0] - b[1], a[1] - b[0])
        if e.op == "mul":
            ps = [p * q for p in a for q in b]
            return (min(ps), max(ps))
        if e.op == "div" and b[0] == b[1] and b[0] > 0:
            return (a[0] // b[0], a[1] // b[0])
        if e.op == "mod" and b[0] == b[1] and b[0] != 0:
            return (0, abs(b[0]) - 1)
        if e.op == "mod" and b[0] > 0:
            return (0, b[1] - 1)
        if e.op == "min":
            return (min(a[0], b[0]), min(a[1], b[1]))
        if e.op == "max":
            return (max(a[0], b[0]), max(a[1], b[1]))
        return _trange(e.type)
    if isinstance(e, E.Select):
        a, b = iv(e.true_value, env), iv(e.false_value, env)
        return (min(a[0], b[0]), max(a[1], b[1]))
    return _trange(e.type)


def regions(pipeline, sizes, *, input_sizes, params):
    env0 = {n: (v, v) for n, v in params.items()}
    senv = dict(params)
    for n, s in input_sizes.items():
        for d, v in enumerate(s):
            env0[extent_key(n, d)] = (v, v)
            senv[extent_key(n, d)] = v
    reg = {}
    for o in pipeline.outputs:
        s = sizes[o.name] if isinstance(sizes, dict) else sizes
        reg[o.name] = [(0, v - 1) for v in s]

    def grow(name, box):
        old = reg.get(name)
        reg[name] = box if old is None else [(min(a[0], b[0]), max(a[1], b[1]))
                                              for a, b in zip(old, box)]

    for name in reversed(pipeline.order()):
        f = pipeline.funcs[name]
        for _ in range(3):
            env = dict(env0)
            for v, r in zip(f.args, reg[name]):
                env[v.name] = r
            for d in f.definitions():
                if d.rdom is not None:
                    for j in range(d.rdom.dimensions):
                        lo = eval_scalar(d.rdom.mins[j], senv)
                        ext = eval_scalar(d.rdom.extents[j], senv)
                        env[d.rdom[j].name] = (lo, lo + ext - 1)
                if d is not f.pure:
                    grow(name, [iv(a, env) for a in d.args])
                for e in definition_exprs(d):
                    for n in walk(e):
                        if isinstance(n, E.Call):
                            grow(n.target.name, [iv(a, env) for a in n.args])
    return {n: tuple(_I(*r) for r in box) for n, box in reg.items()}


class _I:
    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi
