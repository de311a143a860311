#!/usr/bin/env python3
"""xfox: the demo's fox moved by an independent simulator, for physfit.

The fox statue of assets/fox.ply with the demo's material (a soft tail,
normalised log10 E 3.5, on a stiffer body, 4.5, pushed sideways at 0.6
world units/s with its feet held), simulated by tools/xsim's MLS-MPM
(tools/xsim/engine.py: APIC, quadratic B-splines, fixed corotated
elasticity), **one particle per splat**, with PhysDreamer's rules (one grid node per anchored particle at floor(x/dx),
particle volume from the particles sharing a grid cell), on a grid twice
the demo's with ten times its substeps. One .ply per frame holds all of
the fox's splats: the simulated ones at their particles, rotated by R(F);
the pedestal's unchanged.

    python tools/xfox/generate.py --ply assets/fox.ply --out out/xfox

Nothing here reads physfit's code. Lengths are world units; the engine maps
physfit's automatic simulation box of scenes/fox.toml (printed by `physfit
check scenes/fox.toml`) to [0, 1]³, so E in normalised units is the same
number in both engines.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import taichi as ti

# The engine is tools/xsim's (tools/xsim/engine.py).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "xsim"))
from engine import Engine, quat_mul  # noqa: E402

# ---------------------------------------------------------------- settings --
# Must agree with scenes/xfox/xfox.toml and scenes/fox_truth.toml.
BOX_MIN = np.array([-0.8486, -0.8410, 1.2024])  # physfit's "auto" box
BOX_SIDE = 1.7016
FPS = 30.0
FRAMES = 12  # frame 0 (rest) and 11 more
DENSITY = 2000.0
POISSON = 0.3
LOG10_E_BODY = 4.5  # normalised units
LOG10_E_TAIL = 3.5
# The simulated fox above the pedestal, its held base, the soft tail
# (scenes/fox.toml's regions; world units).
SIMULATED = (np.array([-0.45, -0.35, 1.61]), np.array([0.45, 0.35, 2.55]))
ANCHORED = (np.array([-0.45, -0.35, 1.61]), np.array([0.45, 0.35, 1.74]))
TAIL = (np.array([0.15, -0.35, 1.78]), np.array([0.45, 0.35, 2.55]))
V0 = np.array([0.0, 0.6, 0.0])  # world units/s, every free particle

# This engine's own discretisation (PhysDreamer's fox: grid 32, 96
# substeps per frame at 30 fps).
GRID = 32
SUBSTEPS = 96
WALL_CELLS = 3


def inside(pts, box):
    return np.all((pts >= box[0]) & (pts <= box[1]), axis=1)


def read_ply(path):
    """A binary little-endian .ply of float properties: header, names, table."""
    with open(path, "rb") as f:
        header = b""
        while True:
            line = f.readline()
            header += line
            if line.startswith(b"end_header"):
                break
        names = [l.split()[2].decode() for l in header.splitlines() if l.startswith(b"property float")]
        count = int(next(l for l in header.splitlines() if l.startswith(b"element vertex")).split()[2])
        table = np.frombuffer(f.read(4 * len(names) * count), dtype="<f4").reshape(count, len(names))
    return header, names, table.astype(np.float64)


def quat_from_matrix(m):
    """Unit quaternions (w, x, y, z) of rotation matrices (n, 3, 3)."""
    tr = m[:, 0, 0] + m[:, 1, 1] + m[:, 2, 2]
    w = np.sqrt(np.maximum(1.0 + tr, 1e-12)) / 2
    q = np.stack(
        [w, (m[:, 2, 1] - m[:, 1, 2]) / (4 * w), (m[:, 0, 2] - m[:, 2, 0]) / (4 * w), (m[:, 1, 0] - m[:, 0, 1]) / (4 * w)],
        axis=1,
    )
    # The rotations here are small (a sway): 1 + tr is far from 0.
    assert np.all(tr > -0.5), "a rotation too large for this formula"
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ply", required=True, type=Path, help="the fox's 3DGS .ply")
    parser.add_argument("--out", required=True, type=Path, help="folder for frame_NNNN.ply")
    args = parser.parse_args()

    header, names, table = read_ply(args.ply)
    col = {name: i for i, name in enumerate(names)}
    xyz = [col["x"], col["y"], col["z"]]
    rot = [col[f"rot_{i}"] for i in range(4)]
    all_pts = table[:, xyz]
    sim = inside(all_pts, SIMULATED)
    pts = all_pts[sim]
    quats = table[sim][:, rot]
    quats /= np.linalg.norm(quats, axis=1, keepdims=True)
    n = len(pts)
    anchored = inside(pts, ANCHORED)
    soft = inside(pts, TAIL)
    log10_e = np.where(soft, LOG10_E_TAIL, LOG10_E_BODY)

    ti.init(arch=ti.cpu, default_fp=ti.f64, random_seed=0, cpu_max_num_threads=1)
    xn = (pts - BOX_MIN) / BOX_SIDE
    # Particle volume (PhysGaussian's and PhysDreamer's rule, as we read
    # their code): each grid cell's volume shared by the particles in it,
    # so that the particles' volumes sum to the occupied cells'.
    cells = np.floor(xn * GRID).astype(np.int64)
    keys = (cells[:, 0] * GRID + cells[:, 1]) * GRID + cells[:, 2]
    _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    engine = Engine(
        x=xn,
        v=np.where(anchored[:, None], 0.0, V0[None, :] / BOX_SIDE),
        youngs=10.0**log10_e,
        poisson=POISSON,
        volume=(1.0 / GRID) ** 3 / counts[inverse],
        density=DENSITY,
        anchored=anchored,
        grid=GRID,
        dt=1.0 / (FPS * SUBSTEPS),
        wall_cells=WALL_CELLS,
    )

    args.out.mkdir(parents=True, exist_ok=True)
    rot_m = np.zeros((n, 3, 3))
    start = time.time()
    stats = []
    for frame in range(FRAMES):
        if frame > 0:
            for _ in range(SUBSTEPS):
                engine.substep()
            if engine.left_the_box():
                sys.exit(f"frame {frame}: a particle left the box or became NaN")
        xw = BOX_MIN + engine.x.to_numpy() * BOX_SIDE
        engine.rotations(rot_m)
        posed = table.copy()
        posed[np.ix_(sim, xyz)] = xw
        posed[np.ix_(sim, rot)] = quat_mul(quat_from_matrix(rot_m), quats)
        with open(args.out / f"frame_{frame:04d}.ply", "wb") as f:
            f.write(header)
            f.write(posed.astype("<f4").tobytes())
        d = np.linalg.norm(xw - pts, axis=1)
        stats.append(
            {
                "frame": frame,
                "max_displacement": float(d.max()),
                "mean_displacement_tail": float(d[soft].mean()),
                "mean_displacement_body": float(d[~soft & ~anchored].mean()),
                "mean_displacement_anchored": float(d[anchored].mean()),
            }
        )
        print(json.dumps(stats[-1]), flush=True)
    summary = {
        "splats": int(len(table)),
        "simulated": n,
        "anchored": int(anchored.sum()),
        "tail": int(soft.sum()),
        "grid": GRID,
        "substeps": SUBSTEPS,
        "seconds": time.time() - start,
        "frames": stats,
    }
    (args.out / "xfox.json").write_text(json.dumps(summary, indent=1))
    print(f"{n} of {len(table)} splats simulated ({summary['anchored']} anchored, "
          f"{summary['tail']} in the tail), {FRAMES} frames in {summary['seconds']:.1f} s -> {args.out}")


if __name__ == "__main__":
    main()
