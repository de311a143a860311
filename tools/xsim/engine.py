"""The MLS-MPM of the independent twins (tools/xsim, tools/xfox), in Taichi.

APIC transfer, quadratic B-splines, fixed corotated elasticity
`P = 2μ(F − R) + λ(J − 1)J F⁻ᵀ` (R = U Vᵀ from Taichi's SVD), f64, in
normalised units (the box is [0, 1]³). Per particle: position, velocity,
C, F, μ, λ, volume, mass and an anchor flag. Anchoring is PhysDreamer's
rule: every substep the grid node at floor(x/dx) of each anchored
particle gets zero velocity. Walls: slip on nodes within `wall_cells` of
a face. Nothing here reads physfit's code; the rules are recorded in
tools/xsim/README.md and tools/xfox/README.md.

Call `ti.init` before `Engine(...)`.
"""

import numpy as np
import taichi as ti


@ti.data_oriented
class Engine:
    """One object's particles on a `grid`³ grid, stepped by `dt`."""

    def __init__(self, x, v, youngs, poisson, volume, density, anchored, grid, dt, wall_cells):
        n = len(x)
        self.n = n
        self.grid = grid
        self.dx = 1.0 / grid
        self.inv_dx = float(grid)
        self.dt = dt
        self.wall_cells = wall_cells
        self.x = ti.Vector.field(3, ti.f64, n)
        self.v = ti.Vector.field(3, ti.f64, n)
        self.C = ti.Matrix.field(3, 3, ti.f64, n)
        self.F = ti.Matrix.field(3, 3, ti.f64, n)
        self.mu = ti.field(ti.f64, n)
        self.lam = ti.field(ti.f64, n)
        self.p_vol = ti.field(ti.f64, n)
        self.p_mass = ti.field(ti.f64, n)
        self.anchor = ti.field(ti.i32, n)
        self.grid_v = ti.Vector.field(3, ti.f64, (grid, grid, grid))
        self.grid_m = ti.field(ti.f64, (grid, grid, grid))
        self.grid_fix = ti.field(ti.i32, (grid, grid, grid))
        self.bad = ti.field(ti.i32, ())
        youngs = np.asarray(youngs, dtype=np.float64)
        volume = np.broadcast_to(np.asarray(volume, dtype=np.float64), (n,))
        self.mu.from_numpy(youngs / (2 * (1 + poisson)))
        self.lam.from_numpy(youngs * poisson / ((1 + poisson) * (1 - 2 * poisson)))
        self.p_vol.from_numpy(np.ascontiguousarray(volume))
        self.p_mass.from_numpy(np.ascontiguousarray(density * volume))
        self.x.from_numpy(np.ascontiguousarray(x, dtype=np.float64))
        self.v.from_numpy(np.ascontiguousarray(v, dtype=np.float64))
        self.C.from_numpy(np.zeros((n, 3, 3)))
        self.F.from_numpy(np.tile(np.eye(3), (n, 1, 1)))
        self.anchor.from_numpy(np.asarray(anchored).astype(np.int32))

    @ti.func
    def stress(self, p, Fp):
        U, sig, V = ti.svd(Fp, ti.f64)
        R = U @ V.transpose()
        J = Fp.determinant()
        return 2 * self.mu[p] * (Fp - R) + self.lam[p] * (J - 1) * J * Fp.inverse().transpose()

    @ti.kernel
    def substep(self):
        dx, inv_dx, dt = self.dx, self.inv_dx, self.dt
        for I in ti.grouped(self.grid_m):
            self.grid_v[I] = ti.Vector.zero(ti.f64, 3)
            self.grid_m[I] = 0.0
            self.grid_fix[I] = 0
        for p in self.x:
            base = ti.cast(self.x[p] * inv_dx - 0.5, ti.i32)
            fx = self.x[p] * inv_dx - ti.cast(base, ti.f64)
            w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1.0) ** 2, 0.5 * (fx - 0.5) ** 2]
            P = self.stress(p, self.F[p])
            affine = (
                -dt * 4 * inv_dx * inv_dx * self.p_vol[p] * P @ self.F[p].transpose()
                + self.p_mass[p] * self.C[p]
            )
            for i, j, k in ti.static(ti.ndrange(3, 3, 3)):
                offset = ti.Vector([i, j, k])
                dpos = (ti.cast(offset, ti.f64) - fx) * dx
                weight = w[i][0] * w[j][1] * w[k][2]
                self.grid_v[base + offset] += weight * (self.p_mass[p] * self.v[p] + affine @ dpos)
                self.grid_m[base + offset] += weight * self.p_mass[p]
            if self.anchor[p] == 1:
                self.grid_fix[ti.cast(self.x[p] * inv_dx, ti.i32)] = 1
        for I in ti.grouped(self.grid_m):
            if self.grid_m[I] > 0:
                vi = self.grid_v[I] / self.grid_m[I]
                if self.grid_fix[I] == 1:
                    vi = ti.Vector.zero(ti.f64, 3)
                for d in ti.static(range(3)):
                    if I[d] < self.wall_cells and vi[d] < 0:
                        vi[d] = 0.0
                    if I[d] > self.grid - 1 - self.wall_cells and vi[d] > 0:
                        vi[d] = 0.0
                self.grid_v[I] = vi
        for p in self.x:
            base = ti.cast(self.x[p] * inv_dx - 0.5, ti.i32)
            fx = self.x[p] * inv_dx - ti.cast(base, ti.f64)
            w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1.0) ** 2, 0.5 * (fx - 0.5) ** 2]
            new_v = ti.Vector.zero(ti.f64, 3)
            new_C = ti.Matrix.zero(ti.f64, 3, 3)
            for i, j, k in ti.static(ti.ndrange(3, 3, 3)):
                offset = ti.Vector([i, j, k])
                dpos = (ti.cast(offset, ti.f64) - fx) * dx
                weight = w[i][0] * w[j][1] * w[k][2]
                gv = self.grid_v[base + offset]
                new_v += weight * gv
                new_C += 4 * inv_dx * inv_dx * weight * gv.outer_product(dpos)
            self.v[p] = new_v
            self.C[p] = new_C
            self.F[p] = (ti.Matrix.identity(ti.f64, 3) + dt * new_C) @ self.F[p]
            self.x[p] += dt * new_v
            for d in ti.static(range(3)):
                if not (self.x[p][d] >= 2 * dx and self.x[p][d] <= 1 - 2 * dx):
                    self.bad[None] = 1

    @ti.kernel
    def rotations(self, out: ti.types.ndarray()):
        """R of each particle's polar decomposition F = R S, into `out` (n, 3, 3)."""
        for p in self.F:
            U, sig, V = ti.svd(self.F[p], ti.f64)
            R = U @ V.transpose()
            for a, b in ti.static(ti.ndrange(3, 3)):
                out[p, a, b] = R[a, b]

    def left_the_box(self):
        """Whether a particle left the box or became NaN since the start."""
        return bool(self.bad[None])


def quat_mul(a, b):
    """Hamilton product a * b of (n, 4) quaternions (w, x, y, z)."""
    aw, ax, ay, az = a.T
    bw, bx, by, bz = b.T
    return np.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        axis=1,
    )
