#!/usr/bin/env python3
"""xsim: a twin made by an independent simulator, for physfit.

Builds a procedural solid object (a stiff stem anchored at its base carrying
a soft leaf), writes it as a standard 3DGS binary .ply, simulates it with an
MLS-MPM of its own written in Taichi (APIC, quadratic B-splines, fixed
corotated elasticity; one particle per splat), and writes one .ply per frame
with every splat's centre at its particle and its rotation R(F) * q_rest.

    python tools/xsim/generate.py --rest scenes/xsim/xsim.ply --out out/xsim

Nothing here reads physfit's code: the rules (particle volume, anchoring,
walls) are this engine's own and are recorded in tools/xsim/README.md.
Every length below is in world units; the simulation box is a cube of side
1, so normalised lengths equal world lengths (E_world = E_normalised).
"""

import argparse
import json
import math
import struct
import sys
import time
from pathlib import Path

import numpy as np
import taichi as ti

from engine import Engine, quat_mul

# ---------------------------------------------------------------- settings --
# Must agree with scenes/xsim/xsim.toml and scenes/xsim/truth.toml.
BOX_MIN = np.array([-0.3, -0.5, -0.2])
BOX_SIDE = 1.0
FPS = 30.0
FRAMES = 13  # frame 0 (rest) and 12 more
DENSITY = 2000.0
POISSON = 0.3
LOG10_E_STEM = 6.3  # normalised units
LOG10_E_LEAF = 5.3  # ten times softer
# The soft part: the truth's box and the fit's region (world units).
LEAF_BOX = (np.array([0.1, -0.2, 0.4]), np.array([0.6, 0.2, 0.65]))
# The anchored part: the stem's foot (world units).
ANCHOR_TOP_Z = 0.08
V0 = np.array([0.0, 0.6, -0.6])  # world units/s, every free particle

# This engine's own discretisation.
GRID = 24  # nodes per side of the unit box
SUBSTEPS = 200  # per frame
WALL_CELLS = 3

# The object (world units).
STEM_RADIUS = 0.1
STEM_HEIGHT = 0.6
LEAF_X = (0.0, 0.52)
LEAF_Y = (-0.13, 0.13)
LEAF_Z = (0.46, 0.58)
SPACING = 0.0196  # lattice spacing of the splats
JITTER = 0.25  # of the spacing, uniform
SEED = 7

SH_C0 = 0.28209479177387814


def build_object(rng):
    """Splat centres filling the stem and the leaf, and per-splat colours."""
    h = SPACING
    lo = np.array([-STEM_RADIUS, LEAF_Y[0], 0.0])
    hi = np.array([LEAF_X[1], LEAF_Y[1], STEM_HEIGHT])
    axes = [np.arange(lo[d] + h / 2, hi[d], h) for d in range(3)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)
    r = np.hypot(grid[:, 0], grid[:, 1])
    in_stem = (r <= STEM_RADIUS) & (grid[:, 2] <= STEM_HEIGHT)
    in_leaf = (
        (grid[:, 0] >= LEAF_X[0])
        & (grid[:, 0] <= LEAF_X[1])
        & (grid[:, 1] >= LEAF_Y[0])
        & (grid[:, 1] <= LEAF_Y[1])
        & (grid[:, 2] >= LEAF_Z[0])
        & (grid[:, 2] <= LEAF_Z[1])
        & ~in_stem
    )
    keep = in_stem | in_leaf
    pts = grid[keep] + rng.uniform(-JITTER, JITTER, (keep.sum(), 3)) * h
    stem = in_stem[keep]
    # Colour texture: green stripes around and along the stem, a red and
    # yellow checkerboard on the leaf (3DGS colours: SH DC + 0.5 is the value).
    col = np.empty_like(pts)
    band = np.floor(pts[:, 2] / 0.06).astype(int) + np.floor(
        (np.arctan2(pts[:, 1], pts[:, 0]) + math.pi) / (math.pi / 3)
    ).astype(int)
    col[stem] = np.where(
        (band[stem] % 2 == 0)[:, None], [0.15, 0.55, 0.2], [0.6, 0.9, 0.35]
    )
    chk = (
        np.floor(pts[:, 0] / 0.065).astype(int)
        + np.floor((pts[:, 1] + 0.2) / 0.065).astype(int)
        + np.floor(pts[:, 2] / 0.06).astype(int)
    )
    col[~stem] = np.where(
        (chk[~stem] % 2 == 0)[:, None], [0.85, 0.15, 0.1], [0.95, 0.85, 0.2]
    )
    return pts, col


def random_unit_quaternions(rng, n):
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    q[q[:, 0] < 0] *= -1
    return q


def write_ply(path, means, f_dc, opacity_logit, log_scales, quats):
    """Standard 3DGS binary little-endian .ply (SH degree 0, with normals)."""
    n = len(means)
    names = (
        ["x", "y", "z", "nx", "ny", "nz", "f_dc_0", "f_dc_1", "f_dc_2", "opacity"]
        + [f"scale_{i}" for i in range(3)]
        + [f"rot_{i}" for i in range(4)]
    )
    header = "ply\nformat binary_little_endian 1.0\n"
    header += f"element vertex {n}\n"
    header += "".join(f"property float {p}\n" for p in names)
    header += "end_header\n"
    table = np.concatenate(
        [
            means,
            np.zeros((n, 3)),
            f_dc,
            opacity_logit[:, None],
            log_scales,
            quats,
        ],
        axis=1,
    ).astype("<f4")
    assert table.shape[1] == len(names)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.write(header.encode("ascii"))
        f.write(table.tobytes())


def quat_from_matrix(m):
    """Unit quaternions (w, x, y, z) of rotation matrices (n, 3, 3)."""
    n = len(m)
    q = np.empty((n, 4))
    tr = m[:, 0, 0] + m[:, 1, 1] + m[:, 2, 2]
    for i in range(n):
        a = m[i]
        if tr[i] > 0:
            s = math.sqrt(tr[i] + 1.0) * 2
            q[i] = [0.25 * s, (a[2, 1] - a[1, 2]) / s, (a[0, 2] - a[2, 0]) / s, (a[1, 0] - a[0, 1]) / s]
        elif a[0, 0] > a[1, 1] and a[0, 0] > a[2, 2]:
            s = math.sqrt(1.0 + a[0, 0] - a[1, 1] - a[2, 2]) * 2
            q[i] = [(a[2, 1] - a[1, 2]) / s, 0.25 * s, (a[0, 1] + a[1, 0]) / s, (a[0, 2] + a[2, 0]) / s]
        elif a[1, 1] > a[2, 2]:
            s = math.sqrt(1.0 + a[1, 1] - a[0, 0] - a[2, 2]) * 2
            q[i] = [(a[0, 2] - a[2, 0]) / s, (a[0, 1] + a[1, 0]) / s, 0.25 * s, (a[1, 2] + a[2, 1]) / s]
        else:
            s = math.sqrt(1.0 + a[2, 2] - a[0, 0] - a[1, 1]) * 2
            q[i] = [(a[1, 0] - a[0, 1]) / s, (a[0, 2] + a[2, 0]) / s, (a[1, 2] + a[2, 1]) / s, 0.25 * s]
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return q


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="folder for frame_NNNN.ply")
    parser.add_argument("--rest", type=Path, help="also write the rest .ply here")
    args = parser.parse_args()

    rng = np.random.default_rng(SEED)
    pts, col = build_object(rng)
    n = len(pts)
    quats = random_unit_quaternions(rng, n)
    # Anisotropic splats (so that their rotation shows), sized to the lattice.
    log_scales = np.log(SPACING * np.array([0.75, 0.55, 0.45])) + rng.uniform(-0.1, 0.1, (n, 3))
    opacity_logit = np.full(n, 2.0)
    f_dc = (col - 0.5) / SH_C0
    if args.rest:
        write_ply(args.rest, pts, f_dc, opacity_logit, log_scales, quats)

    anchored = pts[:, 2] <= ANCHOR_TOP_Z
    soft = np.all((pts >= LEAF_BOX[0]) & (pts <= LEAF_BOX[1]), axis=1)
    log10_e = np.where(soft, LOG10_E_LEAF, LOG10_E_STEM)

    ti.init(arch=ti.cpu, default_fp=ti.f64, random_seed=0, cpu_max_num_threads=1)
    # Particle volume: the lattice cell each splat was drawn from (the
    # object's volume over the splat count), in normalised units.
    p_vol = (SPACING / BOX_SIDE) ** 3
    engine = Engine(
        x=(pts - BOX_MIN) / BOX_SIDE,
        v=np.where(anchored[:, None], 0.0, V0[None, :] / BOX_SIDE),
        youngs=10.0**log10_e,
        poisson=POISSON,
        volume=p_vol,
        density=DENSITY,
        anchored=anchored,
        grid=GRID,
        dt=1.0 / (FPS * SUBSTEPS),
        wall_cells=WALL_CELLS,
    )

    args.out.mkdir(parents=True, exist_ok=True)
    rot = np.zeros((n, 3, 3))
    start = time.time()
    stats = []
    for frame in range(FRAMES):
        if frame > 0:
            for _ in range(SUBSTEPS):
                engine.substep()
            if engine.left_the_box():
                sys.exit(f"frame {frame}: a particle left the box or became NaN")
        xw = BOX_MIN + engine.x.to_numpy() * BOX_SIDE
        engine.rotations(rot)
        q = quat_from_matrix(rot)
        qf = quat_mul(q, quats)
        write_ply(args.out / f"frame_{frame:04d}.ply", xw, f_dc, opacity_logit, log_scales, qf)
        d = np.linalg.norm(xw - pts, axis=1)
        stats.append(
            {
                "frame": frame,
                "max_displacement": float(d.max()),
                "mean_displacement_leaf": float(d[soft].mean()),
                "mean_displacement_stem": float(d[~soft & ~anchored].mean()),
                "mean_displacement_anchored": float(d[anchored].mean()),
            }
        )
        print(json.dumps(stats[-1]), flush=True)
    summary = {
        "splats": n,
        "anchored": int(anchored.sum()),
        "soft": int(soft.sum()),
        "grid": GRID,
        "substeps": SUBSTEPS,
        "seconds": time.time() - start,
        "particle_volume": p_vol,
        "frames": stats,
    }
    (args.out / "xsim.json").write_text(json.dumps(summary, indent=1))
    print(f"{n} splats ({summary['anchored']} anchored, {summary['soft']} soft), "
          f"{FRAMES} frames in {summary['seconds']:.1f} s -> {args.out}")


if __name__ == "__main__":
    main()
