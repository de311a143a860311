#!/usr/bin/env python3
"""xdrop: a dropped object landing on a ground, made by an independent simulator.

Builds a procedural solid object (a capsule lying along x carrying an
upright post at one end), writes it as a standard 3DGS binary .ply, drops
it with a spin onto a ground plane under gravity with an MLS-MPM of its own
written in Taichi (APIC, quadratic B-splines, fixed corotated elasticity,
Coulomb friction on the ground; one particle per splat, nothing anchored),
and writes one .ply per frame with every splat's centre at its particle and
its rotation R(F) * q_rest.

    python tools/xdrop/generate.py --rest scenes/xdrop/xdrop.ply --out out/xdrop

Nothing here reads physfit's code: the rules (particle volume, initial
affine velocity, ground contact, walls) are this engine's own and are
recorded in tools/xdrop/README.md. Every length below is in world units;
the simulation box is a cube of side 1, so normalised lengths equal world
lengths (E_world = E_normalised, gravity_world = gravity_normalised).
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

# Quaternion helpers shared with tools/xsim (tools/xsim/engine.py).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "xsim"))
from engine import quat_mul  # noqa: E402

# ---------------------------------------------------------------- settings --
# Must agree with scenes/xdrop/xdrop.toml and scenes/xdrop/truth.toml.
BOX_MIN = np.array([-0.5, -0.5, -0.2])
BOX_SIDE = 1.0
FPS = 30.0
FRAMES = 21  # frame 0 (rest, released) and 20 more
DENSITY = 2000.0
POISSON = 0.2
LOG10_E = 5.5  # normalised units, the whole object
GRAVITY = np.array([0.0, 0.0, -9.8])  # world units/s²
GROUND_Z = 0.0  # the ground plane z = GROUND_Z, normal +z
FRICTION = 0.3  # Coulomb coefficient on the ground
# Initial velocity: a rigid motion v = LINEAR + OMEGA * axis x (x - CENTRE).
CENTRE = np.array([0.0, 0.0, 0.42])  # the capsule's centre (world units)
LINEAR = np.array([0.2, 0.0, -0.4])  # world units/s
AXIS = np.array([0.0, 1.0, 0.3])  # any length; right-hand rule
OMEGA = 2.5  # rad/s

# This engine's own discretisation.
GRID = 32  # nodes per side of the unit box
SUBSTEPS = 100  # per frame
WALL_CELLS = 3

# The object (world units, relative to CENTRE): a capsule along x and a
# post standing on its +x end.
CAPSULE_HALF = 0.14  # half the length of its cylinder
CAPSULE_RADIUS = 0.1
POST_X = 0.1
POST_RADIUS = 0.065
POST_TOP = 0.2
SPACING = 0.018  # lattice spacing of the splats
JITTER = 0.25  # of the spacing, uniform
SEED = 11

SH_C0 = 0.28209479177387814


def build_object(rng):
    """Splat centres filling the capsule and the post, and per-splat colours."""
    h = SPACING
    lo = np.array([-CAPSULE_HALF - CAPSULE_RADIUS, -CAPSULE_RADIUS, -CAPSULE_RADIUS])
    hi = np.array([CAPSULE_HALF + CAPSULE_RADIUS, CAPSULE_RADIUS, POST_TOP])
    axes = [np.arange(lo[d] + h / 2, hi[d], h) for d in range(3)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)
    # Distance to the capsule's axis segment.
    ax = np.clip(grid[:, 0], -CAPSULE_HALF, CAPSULE_HALF)
    in_capsule = np.linalg.norm(grid - np.stack([ax, 0 * ax, 0 * ax], 1), axis=1) <= CAPSULE_RADIUS
    in_post = (np.hypot(grid[:, 0] - POST_X, grid[:, 1]) <= POST_RADIUS) & (grid[:, 2] <= POST_TOP) & (grid[:, 2] >= 0)
    keep = in_capsule | in_post
    local = grid[keep] + rng.uniform(-JITTER, JITTER, (keep.sum(), 3)) * h
    post = ~in_capsule[keep]
    # Colour texture (3DGS colours: SH DC + 0.5 is the value): blue and
    # white checkers on the capsule, one blue row of them on each side in a
    # cube of 0.06; orange and dark-red bands up the post. Both tumble with
    # the object, so its rotation shows.
    col = np.empty_like(local)
    chk = np.floor(local / 0.06).astype(int).sum(axis=1)
    col[~post] = np.where((chk[~post] % 2 == 0)[:, None], [0.15, 0.3, 0.85], [0.92, 0.92, 0.88])
    band = np.floor(local[:, 2] / 0.05).astype(int)
    col[post] = np.where((band[post] % 2 == 0)[:, None], [0.95, 0.55, 0.1], [0.55, 0.08, 0.1])
    return CENTRE + local, col, post


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


def skew(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="folder for frame_NNNN.ply")
    parser.add_argument("--rest", type=Path, help="also write the rest .ply here")
    args = parser.parse_args()

    rng = np.random.default_rng(SEED)
    pts, col, post = build_object(rng)
    n = len(pts)
    quats = random_unit_quaternions(rng, n)
    # Anisotropic splats (so that their rotation shows), sized to the lattice.
    log_scales = np.log(SPACING * np.array([0.75, 0.55, 0.45])) + rng.uniform(-0.1, 0.1, (n, 3))
    opacity_logit = np.full(n, 2.0)
    f_dc = (col - 0.5) / SH_C0
    if args.rest:
        write_ply(args.rest, pts, f_dc, opacity_logit, log_scales, quats)

    ti.init(arch=ti.cpu, default_fp=ti.f64, random_seed=0, cpu_max_num_threads=1)
    dx = 1.0 / GRID
    inv_dx = float(GRID)
    dt = 1.0 / (FPS * SUBSTEPS)
    # Particle volume: the lattice cell each splat was drawn from (the
    # object's volume over the splat count), in normalised units.
    p_vol = (SPACING / BOX_SIDE) ** 3
    p_mass = DENSITY * p_vol
    gravity = GRAVITY / BOX_SIDE
    ground = (GROUND_Z - BOX_MIN[2]) / BOX_SIDE

    x = ti.Vector.field(3, ti.f64, n)
    v = ti.Vector.field(3, ti.f64, n)
    C = ti.Matrix.field(3, 3, ti.f64, n)
    F = ti.Matrix.field(3, 3, ti.f64, n)
    grid_v = ti.Vector.field(3, ti.f64, (GRID, GRID, GRID))
    grid_m = ti.field(ti.f64, (GRID, GRID, GRID))
    bad = ti.field(ti.i32, ())

    e = 10.0**LOG10_E
    mu = e / (2 * (1 + POISSON))
    lam = e * POISSON / ((1 + POISSON) * (1 - 2 * POISSON))
    omega = OMEGA * AXIS / np.linalg.norm(AXIS)
    x.from_numpy((pts - BOX_MIN) / BOX_SIDE)
    v.from_numpy((LINEAR + np.cross(omega, pts - CENTRE)) / BOX_SIDE)
    # This engine's own start: every particle's affine velocity is the rigid
    # motion's gradient (the skew matrix of omega), so the first transfer
    # carries the spin exactly.
    C.from_numpy(np.tile(skew(omega), (n, 1, 1)))
    F.from_numpy(np.tile(np.eye(3), (n, 1, 1)))

    @ti.func
    def stress(Fp):
        U, sig, V = ti.svd(Fp, ti.f64)
        R = U @ V.transpose()
        J = Fp.determinant()
        return 2 * mu * (Fp - R) + lam * (J - 1) * J * Fp.inverse().transpose()

    g = ti.Vector(list(gravity))

    @ti.kernel
    def substep():
        for I in ti.grouped(grid_m):
            grid_v[I] = ti.Vector.zero(ti.f64, 3)
            grid_m[I] = 0.0
        for p in x:
            base = ti.cast(x[p] * inv_dx - 0.5, ti.i32)
            fx = x[p] * inv_dx - ti.cast(base, ti.f64)
            w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1.0) ** 2, 0.5 * (fx - 0.5) ** 2]
            P = stress(F[p])
            affine = -dt * 4 * inv_dx * inv_dx * p_vol * P @ F[p].transpose() + p_mass * C[p]
            for i, j, k in ti.static(ti.ndrange(3, 3, 3)):
                offset = ti.Vector([i, j, k])
                dpos = (ti.cast(offset, ti.f64) - fx) * dx
                weight = w[i][0] * w[j][1] * w[k][2]
                grid_v[base + offset] += weight * (p_mass * v[p] + affine @ dpos)
                grid_m[base + offset] += weight * p_mass
        for I in ti.grouped(grid_m):
            if grid_m[I] > 0:
                vi = grid_v[I] / grid_m[I] + dt * g
                # The ground: Coulomb friction on every node at or below the
                # plane, when the node moves into it.
                if I[2] * dx <= ground:
                    vn = vi[2]
                    if vn < 0:
                        vt = ti.Vector([vi[0], vi[1], 0.0])
                        speed = vt.norm()
                        scale = 0.0
                        if speed > FRICTION * (-vn):
                            scale = 1.0 - FRICTION * (-vn) / speed
                        vi = vt * scale
                for d in ti.static(range(3)):
                    if I[d] < WALL_CELLS and vi[d] < 0:
                        vi[d] = 0.0
                    if I[d] > GRID - 1 - WALL_CELLS and vi[d] > 0:
                        vi[d] = 0.0
                grid_v[I] = vi
        for p in x:
            base = ti.cast(x[p] * inv_dx - 0.5, ti.i32)
            fx = x[p] * inv_dx - ti.cast(base, ti.f64)
            w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1.0) ** 2, 0.5 * (fx - 0.5) ** 2]
            new_v = ti.Vector.zero(ti.f64, 3)
            new_C = ti.Matrix.zero(ti.f64, 3, 3)
            for i, j, k in ti.static(ti.ndrange(3, 3, 3)):
                offset = ti.Vector([i, j, k])
                dpos = (ti.cast(offset, ti.f64) - fx) * dx
                weight = w[i][0] * w[j][1] * w[k][2]
                gv = grid_v[base + offset]
                new_v += weight * gv
                new_C += 4 * inv_dx * inv_dx * weight * gv.outer_product(dpos)
            v[p] = new_v
            C[p] = new_C
            F[p] = (ti.Matrix.identity(ti.f64, 3) + dt * new_C) @ F[p]
            x[p] += dt * new_v
            for d in ti.static(range(3)):
                if not (x[p][d] >= 2 * dx and x[p][d] <= 1 - 2 * dx):
                    bad[None] = 1

    @ti.kernel
    def rotations(out: ti.types.ndarray(), dets: ti.types.ndarray()):
        for p in F:
            U, sig, V = ti.svd(F[p], ti.f64)
            R = U @ V.transpose()
            for a, b in ti.static(ti.ndrange(3, 3)):
                out[p, a, b] = R[a, b]
            dets[p] = F[p].determinant()

    args.out.mkdir(parents=True, exist_ok=True)
    rot = np.zeros((n, 3, 3))
    dets = np.zeros(n)
    start = time.time()
    stats = []
    for frame in range(FRAMES):
        if frame > 0:
            for _ in range(SUBSTEPS):
                substep()
            if bad[None]:
                sys.exit(f"frame {frame}: a particle left the box or became NaN")
        xw = BOX_MIN + x.to_numpy() * BOX_SIDE
        rotations(rot, dets)
        q = quat_from_matrix(rot)
        qf = quat_mul(q, quats)
        write_ply(args.out / f"frame_{frame:04d}.ply", xw, f_dc, opacity_logit, log_scales, qf)
        # The object's mean rotation: the polar part of sum R_p, its angle.
        mean_r = np.linalg.svd(rot.sum(axis=0))
        r_mean = mean_r[0] @ mean_r[2]
        angle = math.degrees(math.acos(max(-1.0, min(1.0, (np.trace(r_mean) - 1) / 2))))
        stats.append(
            {
                "frame": frame,
                "centroid": [round(float(c), 5) for c in xw.mean(axis=0)],
                "lowest_z": float(xw[:, 2].min()),
                "rotation_degrees": angle,
                "mean_abs_volume_change": float(np.abs(dets - 1).mean()),
                "max_abs_volume_change": float(np.abs(dets - 1).max()),
            }
        )
        print(json.dumps(stats[-1]), flush=True)
    summary = {
        "splats": n,
        "post": int(post.sum()),
        "grid": GRID,
        "substeps": SUBSTEPS,
        "seconds": time.time() - start,
        "particle_volume": p_vol,
        "frames": stats,
    }
    (args.out / "xdrop.json").write_text(json.dumps(summary, indent=1))
    print(f"{n} splats ({summary['post']} in the post), "
          f"{FRAMES} frames in {summary['seconds']:.1f} s -> {args.out}")


if __name__ == "__main__":
    main()
