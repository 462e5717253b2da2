"""Hand-built loop IR (target "cuda") for the CUDA backend tests, with the equivalent
tilesolve pipelines (whose ``reference.realize`` is the oracle).

Each ``*_ir()`` returns a LoweredPipeline written the way the lowering writes GPU
schedules: gpu_block loops outside gpu_thread loops, shared allocations inside
the block loops, a Barrier between a producer's and a consumer's thread loops.
"""
from __future__ import annotations

import tilesolve as ts
from tilesolve.lower.ir import (Allocate, Argument, Barrier, Block, For, IfThenElse,
                                LetStmt, LoweredPipeline, ProducerConsumer, Store, load)
from tilesolve.model import expr as E
from tilesolve.model import types as T

V = E.Var
f32, i32 = T.float32, T.int32


def c(v):
    return E.as_expr(v)


def flat(buf, *coords):
    """Flat index of ``buf[coords]`` (innermost first) from its stride Vars."""
    idx = coords[0]
    for d, x in enumerate(coords[1:], start=1):
        idx = idx + x * V(f"{buf}.stride.{d}")
    return idx


def ext(buf, d):
    return V(f"{buf}.extent.{d}")


# -- a 2-D map with gpu_tile(8x8) and a guard -------------------------------------
def map2d_pipeline():
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "inp")
    out = ts.Func("out")
    out[x, y] = inp[x, y] * 2.0 + ts.cast(ts.float32, x)
    return ts.Pipeline(out)


def map2d_ir(tile=8):
    xo, yo, xi, yi = V("out.s0.x.xo"), V("out.s0.y.yo"), V("out.s0.x.xi"), V("out.s0.y.yi")
    x, y = V("out.s0.x"), V("out.s0.y")
    val = load("inp", flat("inp", x, y), f32) * 2.0 + E.cast(f32, x)
    body = LetStmt("out.s0.x", xo * tile + xi, LetStmt("out.s0.y", yo * tile + yi, IfThenElse(
        (x < ext("out", 0)) & (y < ext("out", 1)), Store("out", flat("out", x, y), val))))
    nest = For("out.s0.y.yo", c(0), (ext("out", 1) + (tile - 1)) / tile, "gpu_block",
               For("out.s0.x.xo", c(0), (ext("out", 0) + (tile - 1)) / tile, "gpu_block",
                   For("out.s0.y.yi", c(0), c(tile), "gpu_thread",
                       For("out.s0.x.xi", c(0), c(tile), "gpu_thread", body))))
    args = (Argument("inp", "buffer", f32, 2), Argument("out", "buffer", f32, 2, True))
    return LoweredPipeline("map2d", args, ProducerConsumer("out", True, nest), "cuda")


# -- the 3x3 blur: blur_x per 16x8 tile in shared memory, a barrier, blur_y ---------
def blur_pipeline():
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    clamped = ts.boundary.repeat_edge(inp)
    blur_x, blur_y = ts.Func("blur_x"), ts.Func("blur_y")
    blur_x[x, y] = (clamped[x - 1, y] + clamped[x, y] + clamped[x + 1, y]) / 3
    blur_y[x, y] = (blur_x[x, y - 1] + blur_x[x, y] + blur_x[x, y + 1]) / 3
    return ts.Pipeline(blur_y)


def blur_ir(tx=16, ty=8, barrier=True):
    W, H = ext("input", 0), ext("input", 1)
    xo, yo = V("blur_y.s0.x.xo"), V("blur_y.s0.y.yo")

    def rd(xx, yy):
        return load("input", flat("input", E.clamp(xx, 0, W - 1), E.clamp(yy, 0, H - 1)), f32)

    bx_x, bx_y = V("blur_x.s0.x"), V("blur_x.s0.y")
    produce = For("blur_x.s0.y.t", c(0), c(ty + 2), "gpu_thread",
                  For("blur_x.s0.x.t", c(0), c(tx), "gpu_thread",
                      LetStmt("blur_x.s0.x", xo * tx + V("blur_x.s0.x.t"),
                              LetStmt("blur_x.s0.y", yo * ty + V("blur_x.s0.y.t") - 1, Store(
                                  "blur_x", V("blur_x.s0.y.t") * tx + V("blur_x.s0.x.t"),
                                  (rd(bx_x - 1, bx_y) + rd(bx_x, bx_y) + rd(bx_x + 1, bx_y)) / 3.0)))))
    x, y = V("blur_y.s0.x"), V("blur_y.s0.y")
    lt, ltx = V("blur_y.s0.y.yi"), V("blur_y.s0.x.xi")

    def sh(dy):
        return load("blur_x", (lt + dy) * tx + ltx, f32)

    consume = For("blur_y.s0.y.yi", c(0), c(ty), "gpu_thread",
                  For("blur_y.s0.x.xi", c(0), c(tx), "gpu_thread",
                      LetStmt("blur_y.s0.x", xo * tx + ltx, LetStmt("blur_y.s0.y", yo * ty + lt, IfThenElse(
                          (x < ext("blur_y", 0)) & (y < ext("blur_y", 1)),
                          Store("blur_y", flat("blur_y", x, y), (sh(0) + sh(1) + sh(2)) / 3.0))))))
    tile = Allocate("blur_x", f32, (c(tx), c(ty + 2)), "shared", Block.make([
        ProducerConsumer("blur_x", True, produce),
        Barrier() if barrier else None,
        ProducerConsumer("blur_x", False, consume)]))
    nest = For("blur_y.s0.y.yo", c(0), (ext("blur_y", 1) + (ty - 1)) / ty, "gpu_block",
               For("blur_y.s0.x.xo", c(0), (ext("blur_y", 0) + (tx - 1)) / tx, "gpu_block", tile))
    args = (Argument("input", "buffer", f32, 2), Argument("blur_y", "buffer", f32, 2, True))
    return LoweredPipeline("blur", args, ProducerConsumer("blur_y", True, nest), "cuda")


# -- a histogram per row: threads clear it, one thread scatters --------------------
def hist_pipeline(bins=8):
    b, y = ts.Var("b"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "img")
    h = ts.Func("hist")
    h[b, y] = 0
    r = ts.RDom((0, inp.width()), name="r")
    h[ts.clamp(ts.cast(ts.int32, inp[r.x, y] * bins), 0, bins - 1), y] += 1
    return ts.Pipeline(h)


def hist_ir(bins=8):
    y, b, rx = V("hist.s0.y"), V("hist.s0.b"), V("hist.s1.r.x")
    clear = For("hist.s0.b", c(0), c(bins), "gpu_thread", Store("hist", flat("hist", b, y), c(0)))
    site = E.clamp(E.cast(i32, load("img", flat("img", rx, y), f32) * float(bins)), 0, bins - 1)
    scatter = For("hist.s1.r.x", c(0), ext("img", 0), "serial", LetStmt(
        "hist.s1.site", site, Store("hist", flat("hist", V("hist.s1.site"), y),
                                    load("hist", flat("hist", V("hist.s1.site"), y), i32) + 1)))
    nest = For("hist.s0.y", c(0), ext("hist", 1), "gpu_block", Block.make([
        ProducerConsumer("hist", True, clear), Barrier(), scatter]))
    args = (Argument("img", "buffer", f32, 2), Argument("hist", "buffer", i32, 2, True))
    return LoweredPipeline("hist", args, nest, "cuda")


# -- host code: a serial compute_root stage, a host loop over channels ----------------
def channels_pipeline():
    x, y, ch = ts.Var("x"), ts.Var("y"), ts.Var("c")
    inp = ts.ImageParam(ts.int32, 3, "im")
    k = ts.Param(ts.int32, "k", 3)
    g, out = ts.Func("g"), ts.Func("sq")
    g[x, y, ch] = inp[x, y, ch] + k
    out[x, y, ch] = g[x, y, ch] * g[x, y, ch] - ch
    return ts.Pipeline(out)


def channels_ir():
    W, H, C = ext("sq", 0), ext("sq", 1), ext("sq", 2)
    gx, gy, gc = V("g.s0.x"), V("g.s0.y"), V("g.s0.c")
    gidx = gx + W * (gy + H * gc)
    produce_g = For("g.s0.c", c(0), C, "serial", For("g.s0.y", c(0), H, "serial", For(
        "g.s0.x", c(0), W, "serial",
        Store("g", gidx, load("im", flat("im", gx, gy, gc), i32) + E.Param(i32, "k")))))
    x, y, ch = V("sq.s0.x"), V("sq.s0.y"), V("sq.s0.c")
    gv = load("g", x + W * (y + H * ch), i32)
    kern = For("sq.s0.y", c(0), H, "gpu_block", For("sq.s0.x.xo", c(0), (W + 31) / 32, "gpu_block",
               For("sq.s0.x.xi", c(0), c(32), "gpu_thread", LetStmt(
                   "sq.s0.x", V("sq.s0.x.xo") * 32 + V("sq.s0.x.xi"),
                   IfThenElse(x < W, Store("sq", flat("sq", x, y, ch), gv * gv - ch))))))
    body = Allocate("g", i32, (W, H, C), "heap", Block.make([
        ProducerConsumer("g", True, produce_g),
        For("sq.s0.c", c(0), C, "serial", kern)]))
    args = (Argument("im", "buffer", i32, 3), Argument("k", "scalar", i32),
            Argument("sq", "buffer", i32, 3, True))
    return LoweredPipeline("channels", args, body, "cuda")
