"""numpy reference of the lens blur (written from the algorithm, not the DSL).

Each stage is computed over the region later stages read: the depth map
over the output grown by the maximum blur radius, each pull level over the
region the finer level's upsampling reads, each push level over its clamped
extent.  Float operations follow the algorithm's order.
"""
from __future__ import annotations

import numpy as np

from ._npref import Plane, gather

f32, u32 = np.float32, np.uint32
_C0, _C1, _C2 = u32(576942909), u32(1121052041), u32(1040796640)


def random_float(args, tag: int) -> np.ndarray:
    """Halide's hash ``random_float`` of broadcastable int arrays ``args`` and a tag."""
    def rng32(v):
        return (_C2 * v + _C1) * v + _C0
    r = rng32(np.asarray(args[0]).astype(u32))
    for a in list(args[1:]) + [tag]:
        r = rng32(r + np.asarray(a).astype(u32))
    hi, lo = r >> u32(16), r & u32(0xFFFF)
    m = (hi << u32(7)) | ((lo ^ hi) >> u32(9)) & u32(0x7F)
    return np.clip(m.astype(f32) / f32(1 << 23), f32(0), f32(1))


def _absd(a, b):
    return np.where(a > b, a - b, b - a)


def _clip_read(img, X, Y):
    """repeat_edge read of ``img[..., H, W]`` at global (X, Y)."""
    h, w = img.shape[-2:]
    return img[..., np.clip(Y, 0, h - 1), np.clip(X, 0, w - 1)]


def _cost_volume(left, right, S, x0, x1, y0, y1):
    X = np.arange(x0, x1)[None, None, :]
    Y = np.arange(y0, y1)[None, :, None]
    Z = np.arange(S)[:, None, None]
    cost = f32(0)
    for c in range(3):
        lc = _clip_read(left[c], X, Y)
        d = np.minimum(_absd(lc, _clip_read(right[c], X + 2 * Z, Y)),
                       _absd(lc, _clip_read(right[c], X + 2 * Z + 1, Y))).astype(f32)
        cost = d * d if c == 0 else cost + d * d
    return cost                                          # [z, y, x]


def numpy_reference(inputs, sizes, pyramid_levels: int = 8):
    W, H = sizes[0], sizes[1]
    L = pyramid_levels
    left, right = inputs["left_im"], inputs["right_im"]
    S, F = int(inputs["slices"]), int(inputs["focus_depth"])
    sc, NS = f32(inputs["blur_radius_scale"]), int(inputs["aperture_samples"])
    mbr = int(f32(max(S - F, F)) * sc)
    iw, ih = left.shape[2], left.shape[1]

    # regions (inclusive) of the depth map and of each pull level
    dlo = (-mbr, -mbr)
    dhi = (W - 1 + mbr, H - 1 + mbr)
    pull_reg = [(dlo, dhi)]
    for _ in range(1, L):
        lo, hi = pull_reg[-1]
        pull_reg.append((tuple(v // 2 - 1 for v in lo), tuple(v // 2 + 1 for v in hi)))
    M = max(mbr, 2) + 4
    cost = _cost_volume(left, right, S, -M, W + M, -M, H + M)
    sum_sq, sum_mean = f32(0), f32(0)
    for k in range(S):
        sum_sq = sum_sq + cost[k] * cost[k]
        sum_mean = sum_mean + cost[k] / f32(S)
    conf = sum_sq / f32(S) - sum_mean * sum_mean
    push0 = Plane(np.stack([cost * conf, np.broadcast_to(conf, cost.shape)]), -M, -M)

    raws = [None]          # raws[i]: push level i before its clamp, over its clamped extent
    ws, hs = [iw], [ih]

    def read_push(i, X, Y):
        if i == 0:
            return gather(push0, X, Y)
        return gather(raws[i], np.minimum(np.maximum(X, 0), ws[i] - 1),
                      np.minimum(np.maximum(Y, 0), hs[i] - 1))

    for i in range(1, L):
        ws.append(ws[-1] // 2)
        hs.append(hs[-1] // 2)
        x0, x1 = min(0, ws[i] - 1), ws[i] - 1
        y0, y1 = min(0, hs[i] - 1), hs[i] - 1
        X = np.arange(x0, x1 + 1)[None, :]
        Yd = np.arange(2 * y0 - 1, 2 * y1 + 3)[:, None]
        dx = (read_push(i - 1, 2 * X - 1, Yd) + f32(3) * (read_push(i - 1, 2 * X, Yd)
                                                          + read_push(i - 1, 2 * X + 1, Yd))
              + read_push(i - 1, 2 * X + 2, Yd)) / f32(8)
        pdx = Plane(dx, x0, 2 * y0 - 1)
        Y = np.arange(y0, y1 + 1)[:, None]
        dy = (gather(pdx, X, 2 * Y - 1) + f32(3) * (gather(pdx, X, 2 * Y) + gather(pdx, X, 2 * Y + 1))
              + gather(pdx, X, 2 * Y + 2)) / f32(8)
        raws.append(Plane(dy, x0, y0))

    def grid(reg):
        (xl, yl), (xh, yh) = reg
        return np.arange(xl, xh + 1)[None, :], np.arange(yl, yh + 1)[:, None]

    X, Y = grid(pull_reg[L - 1])
    pull = Plane(read_push(L - 1, X, Y), pull_reg[L - 1][0][0], pull_reg[L - 1][0][1])
    for i in range(L - 2, -1, -1):
        (xl, yl), (xh, yh) = pull_reg[i]
        X = np.arange(xl, xh + 1)[None, :]
        Yc = np.arange(pull.y0, pull.y1)[:, None]
        ux = Plane(f32(0.25) * gather(pull, X // 2 - 1 + 2 * (X % 2), Yc)
                   + f32(0.75) * gather(pull, X // 2, Yc), xl, pull.y0)
        Y = np.arange(yl, yh + 1)[:, None]
        up = (f32(0.25) * gather(ux, X, Y // 2 - 1 + 2 * (Y % 2)) + f32(0.75) * gather(ux, X, Y // 2))
        half = f32(0.5)
        pull = Plane(up * (f32(1.0) - half) + read_push(i, X, Y) * half, xl, yl)

    filtered = pull.arr[0] / pull.arr[1]                  # [z, y, x] over the depth region
    min_cost = np.full(filtered.shape[1:], np.inf, f32)
    for k in range(S):
        min_cost = np.minimum(min_cost, filtered[k])
    depth = np.full(filtered.shape[1:], S, np.int32)
    for k in range(S):
        depth = np.minimum(depth, np.where(filtered[k] == min_cost, k, S).astype(np.int32))
    dpl = Plane(depth, pull.x0, pull.y0)
    br = Plane(np.abs(depth - F).astype(f32) * sc, pull.x0, pull.y0)
    brs = Plane(br.arr * br.arr, pull.x0, pull.y0)

    Xw, Yo = np.arange(-mbr, W + mbr)[None, :], np.arange(H)[:, None]
    wcy = np.full((H, W + 2 * mbr), -np.inf, f32)
    for r in range(-mbr, mbr + 1):
        wcy = np.maximum(wcy, gather(br, Xw, Yo + r))
    wcy = Plane(wcy, -mbr, 0)
    Xo = np.arange(W)[None, :]
    wc = np.full((H, W), -np.inf, f32)
    for r in range(-mbr, mbr + 1):
        wc = np.maximum(wc, gather(wcy, Xo + r, Yo))

    def iwa(X, Y):
        rgb = _clip_read(left, X, Y).astype(f32)
        return np.concatenate([rgb, np.full((1,) + rgb.shape[1:], 255, f32)])

    Z = np.arange(NS)[:, None, None]
    Xo3, Yo3 = Xo[None], Yo[None]
    su, sv = [np.clip(((random_float([Z, Yo3, Xo3], tag) - f32(0.5)) * f32(2) * wc[None])
                      .astype(np.int32), -mbr, mbr) for tag in (0, 1)]
    r2 = (su * su + sv * sv).astype(f32)
    sx, sy = Xo3 + su, Yo3 + sv
    within_this = r2 < brs.crop(0, 0, W, H)[None]
    within_sample = r2 < gather(brs, sx, sy)
    in_front = gather(dpl, sx, sy) < dpl.crop(0, 0, W, H)[None]
    weight = np.where((within_this | in_front) & within_sample, f32(1), f32(0))
    out = iwa(Xo, Yo)
    for k in range(NS):
        out = out + weight[k] * iwa(Xo + su[k], Yo + sv[k])
    return out[:3] / out[3:4]
