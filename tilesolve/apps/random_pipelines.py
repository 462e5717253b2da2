"""Random pipelines, in the spirit of the random programs Adams et al. 2019 trained on:
a seeded generator of image pipelines nobody tuned the autoscheduler for.

    pipe, estimates, make_inputs = build_random(seed)            # the realistic size
    pipe, estimates, make_inputs = build_random(seed, [64, 48, 3])
    out = ts.reference.realize(pipe, [64, 48, 3], **make_inputs([64, 48, 3]))

A pipeline reads one input (``uint8``, ``uint16`` or ``float32``, ``x, y, c`` with 1-4
channels) behind repeat-edge and draws 5-16 stages, each a Func over ``x, y, c`` at
a resolution level 0-2 (``level`` = how many times it was halved):

* ``stencil``: 3x3, 5x1 or 1x5 taps (floats: weights summing to 1; integers: integer
  weights summing to a power of two, accumulated in a wider type, shifted back);
* ``down`` / ``up``: a 2x2 box at even sites / the mean of the two nearest coarse
  sites, in x and y;
* ``unary``: floats: ``sqrt|v|``, ``exp(-|v|)``, ``log(1 + |v|)``, ``tanh``, ``sin``,
  ``atan``, an affine map; integers: shifts, masks, a saturating add, ``absd``;
* ``binary``: two values of one level: ``+ - min max``, a clamped product, ``lerp``,
  ``absd``, a halving add, a ``select``;
* ``cast``: float <-> integer (``v / 4 + 1/2`` clamped to [0, 1] and scaled; floats
  computed with transcendental functions are never cast to integers: math libraries
  differ in the last bit);
* ``mix``: all-to-all over channels, an update over an RDom of the channels with a
  weight table Func;
* ``window``: a max, min or sum over 3-9 taps along x or y (an RDom);
* ``histogram``: an integer value's histogram of 256 bins over its whole level (an RDom
  over the input's extents), its running sum (a scan), read back at each pixel as
  histogram equalization does (a data-dependent lookup).

Then ``up`` stages return to level 0, and the last value, combined by ``max`` with every
value no stage read (each brought to level 0), is the output ``output``.  The
structure depends only on the seed; ``sizes`` set the estimates (the realistic sizes
when None: 1024-2048 by 768-1536, divisible by 4) and ``make_inputs`` the data.
``tilesolve bench --suite random --random-count N --random-seed S`` runs seeds S ..
S + N - 1 (``random_suite``); each reference is ``ts.reference.realize``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import tilesolve as ts

__all__ = ["build_random", "random_suite", "RandomApp", "SMALL_SIZE"]

SMALL_SIZE = [64, 48]           # x, y; the channels come from the seed
MAX_LEVEL = 2
_WIDER = {"uint8": ts.uint16, "uint16": ts.uint32}
_FLOAT_UNARY = ("sqrt", "exp", "log", "tanh", "sin", "atan", "affine")
_INT_UNARY = ("shr", "shl_mask", "and_mask", "sat_add", "absd")
_BINARY = ("add", "sub", "min", "max", "mul", "lerp", "absd", "halving", "select")


@dataclass
class Value:
    func: object          # ts.Func over (x, y, c)
    type: object          # ts.Type
    level: int            # the Func covers (W / 2^level) x (H / 2^level) x C
    tainted: bool         # computed with a transcendental function
    used: bool = False    # read by a later stage


class _Gen:
    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.x, self.y, self.c = ts.Var("x"), ts.Var("y"), ts.Var("c")
        self.count = 0
        self.channels = int(self.rng.choice([1, 3, 4]))
        self.in_type = (ts.uint8, ts.uint16, ts.float32)[int(self.rng.integers(3))]
        self.input = ts.ImageParam(self.in_type, 3, "input")
        self.values = [Value(ts.boundary.repeat_edge(self.input), self.in_type, 0, False)]
        self.kinds: list = []

    def func(self, kind: str):
        self.count += 1
        self.kinds.append(kind)
        return ts.Func(f"{kind}{self.count}")

    def pick(self, pred=lambda v: True):
        """A value ``pred`` accepts, one no stage reads yet if there is one, else one of
        the last four; marked as read."""
        ok = [v for v in self.values if pred(v)]
        cands = [v for v in ok if not v.used] or [v for v in self.values[-4:] if pred(v)] or ok
        if not cands:
            return None
        v = cands[int(self.rng.integers(len(cands)))]
        v.used = True
        return v

    def add(self, kind: str, expr, t, level, tainted) -> Value:
        f = self.func(kind)
        f[self.x, self.y, self.c] = expr
        v = Value(f, t, level, tainted)
        self.values.append(v)
        return v

    # -- stages ------------------------------------------------------------------------
    def stencil(self, v: Value):
        x, y, c = self.x, self.y, self.c
        shape = ("3x3", "5x1", "1x5")[int(self.rng.integers(3))]
        if shape == "3x3":
            offs = [(i, j) for j in (-1, 0, 1) for i in (-1, 0, 1)]
        else:
            offs = [((i, 0) if shape == "5x1" else (0, i)) for i in range(-2, 3)]
        raw = self.rng.integers(1, 5, len(offs))
        if v.type.is_float():
            w = raw / raw.sum()
            e = sum(float(wi) * v.func[x + dx, y + dy, c] for wi, (dx, dy) in zip(w, offs))
            return self.add("stencil", e, v.type, v.level, v.tainted)
        shift = int(math.ceil(math.log2(raw.sum())))
        wide = _WIDER[str(v.type)]
        e = sum(int(wi) * ts.cast(wide, v.func[x + dx, y + dy, c])
                for wi, (dx, dy) in zip(raw, offs))
        return self.add("stencil", ts.cast(v.type, e >> shift), v.type, v.level, v.tainted)

    def down(self, v: Value):
        x, y, c = self.x, self.y, self.c
        taps = [v.func[2 * x + i, 2 * y + j, c] for j in (0, 1) for i in (0, 1)]
        if v.type.is_float():
            e = ((taps[0] + taps[1]) + (taps[2] + taps[3])) * 0.25
        else:
            wide = _WIDER[str(v.type)]
            e = ts.cast(v.type, (sum(ts.cast(wide, t) for t in taps) + 2) >> 2)
        return self.add("down", e, v.type, v.level + 1, v.tainted)

    def up(self, v: Value):
        x, y, c = self.x, self.y, self.c
        a, b = v.func[x / 2, y / 2, c], v.func[(x + 1) / 2, (y + 1) / 2, c]
        e = (a + b) * 0.5 if v.type.is_float() else ts.rounding_halving_add(a, b)
        return self.add("up", e, v.type, v.level - 1, v.tainted)

    def unary(self, v: Value):
        a = v.func[self.x, self.y, self.c]
        if v.type.is_float():
            op = _FLOAT_UNARY[int(self.rng.integers(len(_FLOAT_UNARY)))]
            e = {"sqrt": lambda: ts.sqrt(ts.abs(a)), "exp": lambda: ts.exp(-ts.abs(a)),
                 "log": lambda: ts.log(1.0 + ts.abs(a)), "tanh": lambda: ts.tanh(a),
                 "sin": lambda: ts.sin(a * 2.0), "atan": lambda: ts.atan(a),
                 "affine": lambda: a * -0.75 + 0.5}[op]()
            return self.add(op, e, v.type, v.level, v.tainted or op != "affine")
        op = _INT_UNARY[int(self.rng.integers(len(_INT_UNARY)))]
        k = int(self.rng.integers(1, 4))
        top = (1 << v.type.bits) - 1
        e = {"shr": lambda: a >> k, "shl_mask": lambda: (a << k) & (top >> 1),
             "and_mask": lambda: a & (top - (1 << k)),
             "sat_add": lambda: ts.saturating_add(a, ts.cast(v.type, 37 * k)),
             "absd": lambda: ts.absd(a, ts.cast(v.type, top // 2))}[op]()
        return self.add(op, ts.cast(v.type, e), v.type, v.level, v.tainted)

    def binary(self, v: Value, w: Value | None = None, op: str | None = None):
        w = w or self.pick(lambda u: u.level == v.level and u is not v)
        if w is None:
            return self.unary(v)
        a, b = v.func[self.x, self.y, self.c], w.func[self.x, self.y, self.c]
        if w.type != v.type:
            if v.type.is_float():
                b = ts.cast(ts.float32, b) * (1.0 / ((1 << w.type.bits) - 1)) \
                    if not w.type.is_float() else b
            elif w.type.is_float():
                if w.tainted:
                    return self.unary(v)
                b = ts.u8_sat(ts.clamp(b, 0.0, 1.0) * 255.0)
            b = ts.cast(v.type, b)
        op = op or _BINARY[int(self.rng.integers(len(_BINARY)))]
        is_f = v.type.is_float()
        e = {"add": lambda: a + b, "sub": lambda: a - b * 0.75 if is_f else a - (b >> 1),
             "min": lambda: ts.min(a, b),
             "max": lambda: ts.max(a, b),
             "mul": lambda: ts.clamp(a * b, -4.0, 4.0) if is_f else ts.cast(v.type, a * b),
             "lerp": lambda: ts.lerp(a, b, 0.25) if is_f else ts.lerp(a, b, ts.cast(v.type, 64)),
             "absd": lambda: ts.absd(a, b) if not is_f else ts.abs(a - b),
             "halving": lambda: (a + b) * 0.5 if is_f else ts.halving_add(a, b),
             "select": lambda: ts.select(a > b, a - b, b)}[op]()
        return self.add(op, ts.cast(v.type, e), v.type, v.level, v.tainted or w.tainted)

    def cast(self, v: Value):
        a = v.func[self.x, self.y, self.c]
        if v.type.is_float():
            if v.tainted:
                return self.unary(v)
            t = (ts.uint8, ts.uint16)[int(self.rng.integers(2))]
            top = float((1 << t.bits) - 1)
            e = ts.cast(t, ts.clamp(a * 0.25 + 0.5, 0.0, 1.0) * top)
            return self.add("to_int", e, t, v.level, False)
        scale = 1.0 / ((1 << v.type.bits) - 1)
        return self.add("to_float", ts.cast(ts.float32, a) * scale, ts.float32, v.level,
                        v.tainted)

    def mix(self, v: Value):
        if not v.type.is_float() or self.channels == 1:
            return self.cast(v)
        x, y, c, k = self.x, self.y, self.c, ts.Var("k")
        p, q = (int(n) for n in self.rng.integers(1, 7, 2))
        weight = self.func("mix_weight")
        weight[c, k] = ts.cast(ts.float32, (c * p + k * q) % 5 - 2) * (1.0 / self.channels)
        r = ts.RDom((0, self.channels), name=f"ch{self.count}")
        f = self.func("mix")
        f[x, y, c] += weight[c, r.x] * v.func[x, y, r.x]
        out = Value(f, v.type, v.level, v.tainted)
        self.values.append(out)
        return out

    def window(self, v: Value):
        x, y, c = self.x, self.y, self.c
        n = int(self.rng.integers(3, 10))
        r = ts.RDom((-(n // 2), n), name=f"win{self.count + 1}")
        tap = v.func[x + r.x, y, c] if self.rng.integers(2) else v.func[x, y + r.x, c]
        op = ("max", "min", "sum")[int(self.rng.integers(3))]
        if op == "sum":
            e = ts.sum(tap) * (1.0 / n) if v.type.is_float() else ts.cast(
                v.type, ts.sum(ts.cast(ts.uint32, tap)) / n)
        else:
            e = (ts.maximum if op == "max" else ts.minimum)(tap)
        return self.add(f"window_{op}", e, v.type, v.level, v.tainted)

    def histogram(self, v: Value):
        if v.type.is_float():
            return self.cast(v)
        x, y, c = self.x, self.y, self.c
        shift = v.type.bits - 8
        size = [self.input.extent(0) / (1 << v.level), self.input.extent(1) / (1 << v.level)]
        r = ts.RDom((0, size[0]), (0, size[1]), name=f"img{self.count + 1}")
        hist, cdf = self.func("histogram"), self.func("cdf")
        hist[ts.cast(ts.int32, v.func[r.x, r.y, 0] >> shift)] += 1
        b, s = ts.Var("b"), ts.RDom((1, 255), name=f"bins{self.count}")
        cdf[b] = hist[0]
        cdf[s.x] = cdf[s.x - 1] + hist[s.x]
        total = ts.cast(ts.float32, size[0] * size[1])
        e = ts.cast(ts.float32, cdf[ts.cast(ts.int32, v.func[x, y, c] >> shift)]) / total
        return self.add("equalize", e, ts.float32, v.level, v.tainted)

    def stage(self):
        v = self.pick()
        kinds = ["stencil", "stencil", "unary", "binary", "binary", "cast", "mix", "window",
                 "histogram"]
        if v.level < MAX_LEVEL:
            kinds.append("down")
        if v.level > 0:
            kinds.append("up")
        return getattr(self, kinds[int(self.rng.integers(len(kinds)))])(v)


def _generate(seed: int) -> _Gen:
    g = _Gen(seed)
    for _ in range(int(g.rng.integers(5, 17))):
        g.stage()
    leaves = [v for v in g.values[1:-1] if not v.used]
    last = g.values[-1]
    while last.level > 0:
        last = g.up(last)
    for v in leaves:                 # no stage is dead: the output reads every leaf
        while v.level > 0:
            v = g.up(v)
        last = g.binary(last, v, "max")
    out = ts.Func("output")
    out[g.x, g.y, g.c] = last.func[g.x, g.y, g.c]
    g.output = out
    return g


def _realistic_size(seed: int, channels: int) -> list:
    rng = np.random.default_rng([seed, 7])
    return [int(rng.choice([1024, 1536, 2048])), int(rng.choice([768, 1024, 1536])), channels]


def build_random(seed: int, sizes=None):
    """``(Pipeline, estimates, make_inputs)`` of random pipeline ``seed``; ``sizes``
    (``[W, H, C]``; C must be the seed's channel count) or the realistic size."""
    g = _generate(seed)
    sizes = list(_realistic_size(seed, g.channels) if sizes is None else sizes)
    if len(sizes) != 3 or sizes[2] != g.channels:
        raise ValueError(f"random pipeline {seed} has {g.channels} channels: sizes are "
                         f"[W, H, {g.channels}], got {sizes}")
    in_type = g.in_type

    def make_inputs(sizes, seed: int = 0):
        w, h, ch = sizes
        rng = np.random.default_rng(seed)
        if in_type.is_float():
            return {"input": rng.random((ch, h, w), dtype=np.float32)}
        top = 1 << in_type.bits
        return {"input": rng.integers(0, top, (ch, h, w)).astype(f"uint{in_type.bits}")}
    return ts.Pipeline(g.output), {"output": sizes, "input": sizes}, make_inputs


class RandomApp:
    """Random pipeline ``seed`` with the app protocol (``tilesolve/apps/__init__.py``):
    ``build``, ``make_inputs``, ``numpy_reference`` (the reference evaluator),
    ``SMALL_SIZE`` and ``PAPER_SIZE`` (the realistic size)."""

    def __init__(self, seed: int):
        self.seed = seed
        self.name = f"random_{seed}"
        pipe, est, self._make = build_random(seed)
        self.PAPER_SIZE = est["output"]
        self.SMALL_SIZE = SMALL_SIZE + [self.PAPER_SIZE[2]]
        self.funcs = len(pipe.funcs)

    def build(self, sizes=None):
        pipe, est, _ = build_random(self.seed, sizes or self.PAPER_SIZE)
        return pipe, est

    def make_inputs(self, sizes, seed: int = 0):
        return self._make(sizes, seed)

    def numpy_reference(self, inputs, sizes):
        return ts.reference.realize(self.build(sizes)[0], sizes, **inputs)


def random_suite(count: int, seed: int = 0) -> dict:
    """``count`` random pipelines, seeds ``seed .. seed + count - 1``, by name."""
    apps = (RandomApp(s) for s in range(seed, seed + count))
    return {a.name: a for a in apps}
