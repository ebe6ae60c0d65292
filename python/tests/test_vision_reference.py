"""The vision reference's stages against vision.md's formulas written out
as loops (§3.1 grid resize, §3.2 RoPE, §3.4 merge order), so that the
reference's use of F.interpolate and strided slicing is itself checked.
The engine is compared with this reference by tests/vision_test.cpp."""

import math
import unittest

try:
    from . import _paths  # noqa: F401
except ImportError:
    import _paths  # noqa: F401

import torch

from waste_ref import vision


def grid_by_formula(grid, gh, gw):
    pos_h, pos_w, _ = grid.shape
    out = torch.empty(gh, gw, grid.shape[2], dtype=grid.dtype)
    for y in range(gh):
        fy = (y + 0.5) * pos_h / gh - 0.5
        y0 = math.floor(fy)
        wy = fy - y0
        ya, yb = min(max(y0, 0), pos_h - 1), min(max(y0 + 1, 0), pos_h - 1)
        for x in range(gw):
            fx = (x + 0.5) * pos_w / gw - 0.5
            x0 = math.floor(fx)
            wx = fx - x0
            xa, xb = min(max(x0, 0), pos_w - 1), min(max(x0 + 1, 0), pos_w - 1)
            out[y, x] = ((1 - wy) * (1 - wx) * grid[ya, xa] + (1 - wy) * wx * grid[ya, xb]
                         + wy * (1 - wx) * grid[yb, xa] + wy * wx * grid[yb, xb])
    return out


class VisionReference(unittest.TestCase):
    def test_grid_resize_is_the_documented_bilinear(self):
        torch.manual_seed(1)
        grid = torch.randn(6, 4, 3, dtype=torch.float64)
        for gh, gw in [(4, 8), (2, 2), (10, 6), (6, 4)]:
            got = vision.position_grid(grid, gh, gw)
            self.assertLess(float((got - grid_by_formula(grid, gh, gw)).abs().max()), 1e-12, (gh, gw))

    def test_rope_turns_even_pairs_by_column_and_odd_by_row(self):
        torch.manual_seed(2)
        gh, gw, hd = 2, 3, 8
        v = torch.randn(gh * gw, 1, hd, dtype=torch.float64)
        got = vision.rope(v, gh, gw)
        for p in range(gh * gw):
            for j in range(hd // 2):
                angle = (p % gw if j % 2 == 0 else p // gw) * 10000.0 ** (-4.0 * (j // 2) / hd)
                a, b = float(v[p, 0, 2 * j]), float(v[p, 0, 2 * j + 1])
                self.assertAlmostEqual(float(got[p, 0, 2 * j]), a * math.cos(angle) - b * math.sin(angle), places=12)
                self.assertAlmostEqual(float(got[p, 0, 2 * j + 1]), a * math.sin(angle) + b * math.cos(angle), places=12)

    def test_merge_order(self):
        # Z = each patch's index: cell n must hold [TL, TR, BL, BR] patch ids.
        gh, gw = 4, 6
        m = vision.merge_2x2(torch.arange(gh * gw, dtype=torch.float64).reshape(gh, gw, 1))
        for a in range(gh // 2):
            for c in range(gw // 2):
                n = a * (gw // 2) + c
                want = [2 * a * gw + 2 * c, 2 * a * gw + 2 * c + 1, (2 * a + 1) * gw + 2 * c, (2 * a + 1) * gw + 2 * c + 1]
                self.assertEqual(m[n].tolist(), want)


if __name__ == "__main__":
    unittest.main()
