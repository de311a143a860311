//! The estimate: host and device bytes a command takes, from the scene's
//! numbers alone (drivers, `grid_res`, substeps, frames, views and their
//! image sizes, splat count, SH degree), mirroring how each stage sizes its
//! buffers:
//!
//! - simulation grid (`simulation.grid_res`): `(n+1)³` nodes; the
//!   simulator's substep grid ([`crate::mpm`]'s `SubstepGrid`: mass and
//!   momentum, anchored flags, velocity, cell lists: 40 bytes a node), its
//!   held-node flags (4 bytes a node) and
//!   its two adjoint grids (32 bytes a node); a fit's backward pass also
//!   keeps the K grids of the segment it replays when they fit
//!   [`KEPT_GRIDS_BUDGET_BYTES`];
//! - particle states (`drivers.count`; 96 bytes a driver a state): the
//!   rollout's frame states, one gradient per fitted frame, and the
//!   backward pass's checkpointed working set, the larger of the two
//!   flows' (src/fit/problem.rs, "Kept forward"): the full flow's ⌈S/K⌉ − 1
//!   checkpoints per frame and K segment states with K = ⌈√S⌉, and the
//!   truncated flow's frame by frame, K' segment states (and grids) with
//!   K' the most substeps whose states and grids fit
//!   [`KEPT_GRIDS_BUDGET_BYTES`], at most S (docs/design.md § Adjoint,
//!   Memory), and four adjoints;
//! - splats (`gaussians.path`): the parameters (44 + 12·(d+1)² bytes a
//!   splat), the deformation's records, the rasterizer's per-splat buffers
//!   and sort scratch, and with a backward their gradients, with the
//!   workspace's 25% headroom;
//! - tile intersections (`views[i].camera`): per view, the 16×16 tiles each
//!   splat's 3.33σ extent covers at rest (+50% for the motion), 20 bytes
//!   each (ids, sort scratch), with headroom; the largest view counts, as
//!   the workspace is reused (an upper bound: binning lists only the
//!   tiles a splat's ellipse reaches);
//! - images (`views[i].camera` width × height): render, loss and colour
//!   correction buffers per pixel of the largest view;
//! - reference frames (`views[i].frames`): 4 bytes a pixel a frame a view
//!   (5 with masks), uploaded once by the fit;
//! - the fit's static backdrops: per view with frames, an image (16 bytes
//!   a pixel), a flag per splat and one per tile;
//! - host: the runtime (binary, wgpu, compiled kernels:
//!   [`RUNTIME_HOST_BYTES`]), the upload copies of the splats, K-Means and
//!   one decoded image per view at a time, the fill's dense voxels, and
//!   the frames `render --params` holds until it writes them.
//!
//! Each figure is an upper bound of what the code allocates (checked
//! against the GPU context's measured peak: docs/benchmarks.md § Memory
//! estimate before allocation), not an exact count.

use glam::Vec3;

use crate::memory::bytes::human_bytes;
use crate::mpm::layout::STATE_STRIDE;
use crate::mpm::simulator::KEPT_GRIDS_BUDGET_BYTES;
use crate::mpm_rules::config::Transfer;
use crate::mpm_rules::voxel;
use crate::scene::{Camera, Scene};

/// Host bytes of the runtime itself: the binary, wgpu, compiled kernels.
pub const RUNTIME_HOST_BYTES: u64 = 256 << 20;

/// Bytes of one particle state (x, v, C, F: [`STATE_STRIDE`] f32).
const STATE_BYTES: u64 = (STATE_STRIDE * 4) as u64;

/// Node bytes of the simulator's substep grid (9 words) and cell lists (1).
const GRID_BYTES_PER_NODE: u64 = 40;

/// Node bytes of the simulator's held-node flags, one set per simulator
/// (the `splats` anchoring rule's fixed held nodes; zeros otherwise).
const HELD_NODE_BYTES_PER_NODE: u64 = 4;

/// Node bytes of the two adjoint grids (grid velocity and (mv, m)).
const GRID_GRAD_BYTES_PER_NODE: u64 = 32;

/// Node bytes the FLIP transfer adds to a substep grid (its carried
/// (m̂, mv̂)) and to the adjoint grids (∂L/∂v̂ and (∂L/∂m̂, ∂L/∂mv̂))
/// (src/mpm/flip.rs).
const FLIP_GRID_BYTES_PER_NODE: u64 = 16;
const FLIP_GRID_GRAD_BYTES_PER_NODE: u64 = 32;

/// Intersection bytes: tile and splat ids, sort keys and values scratch,
/// histograms.
const BYTES_PER_INTERSECTION: u64 = 20;

/// Host bytes per pixel of a rendered frame held until written: 3 for the
/// 8-bit render, as much again and more for a side-by-side reference panel,
/// the captions and a colour bar.
const HELD_FRAME_BYTES_PER_PIXEL: u64 = 8;

/// What the command does with the scene.
#[derive(Clone, Debug)]
pub enum Workload {
    /// `physfit fit`: every reference frame of every view with frames, the
    /// backward passes of the MPM and the rasterizer.
    Fit,
    /// `physfit render` at rest: no simulation.
    Render {
        /// The cameras rendered (after `--size`).
        cameras: Vec<Camera>,
    },
    /// `physfit simulate`, `synth`, `render --params`: a forward rollout
    /// of `frames` frames (the rest frame included), rendered.
    Forward {
        /// The command's name (for messages).
        command: &'static str,
        /// Frames simulated, the rest frame included.
        frames: usize,
        /// The cameras rendered (after `--size`).
        cameras: Vec<Camera>,
        /// Every rendered frame is held on the host until written
        /// (`render --params`: `crate::forward::MotionRender`).
        frames_held: bool,
    },
}

impl Workload {
    /// The command's name in messages.
    pub fn command(&self) -> &'static str {
        match self {
            Workload::Fit => "physfit fit",
            Workload::Render { .. } => "physfit render",
            Workload::Forward { command, .. } => command,
        }
    }
}

/// What a part of the estimate stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartKind {
    /// Grid nodes.
    Grid,
    /// Particle states.
    States,
    /// Per-splat buffers.
    Splats,
    /// Tile intersections.
    Intersections,
    /// Per-pixel buffers.
    Images,
    /// Reference frames.
    Frames,
    /// The runtime and fixed costs.
    Runtime,
}

/// One part of an estimate.
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    /// What it is.
    pub kind: PartKind,
    /// What it is, in words.
    pub name: &'static str,
    /// Bytes.
    pub bytes: u64,
    /// The scene field that sets it.
    pub field: String,
    /// That field's value, as the scene gives it.
    pub value: String,
    /// How to make it smaller.
    pub fix: String,
}

/// One buffer the command allocates in one piece, to hold against the
/// adapter's limits before allocating.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedBuffer {
    /// Its label (as the code gives it).
    pub label: &'static str,
    /// Bytes.
    pub bytes: u64,
    /// A storage binding (checked against `max_storage_buffer_binding_size`
    /// too).
    pub storage: bool,
    /// The part whose field sets it.
    pub kind: PartKind,
}

/// The estimate of one command on one scene.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryEstimate {
    /// The command.
    pub command: &'static str,
    /// Host parts.
    pub host: Vec<Part>,
    /// Device parts.
    pub device: Vec<Part>,
    /// The largest single buffers.
    pub buffers: Vec<PlannedBuffer>,
    /// Device bytes a fit may add to keep whole rollouts for its full-flow
    /// backward passes, taken only where the machine leaves room
    /// ([`super::kept_rollout_budget`]); not in [`MemoryEstimate::device_bytes`]
    /// and never a reason to refuse. The most it can take: every substep's
    /// state and grid of as many frames as fit [`super::KEPT_ROLLOUT_CAP_BYTES`].
    pub kept_rollout: u64,
}

impl MemoryEstimate {
    /// Host bytes.
    pub fn host_bytes(&self) -> u64 {
        self.host.iter().map(|p| p.bytes).sum()
    }

    /// Device bytes.
    pub fn device_bytes(&self) -> u64 {
        self.device.iter().map(|p| p.bytes).sum()
    }

    /// The device part of `kind`, or a host one.
    pub fn part(&self, kind: PartKind) -> Option<&Part> {
        self.device
            .iter()
            .chain(&self.host)
            .find(|p| p.kind == kind)
    }

    /// The largest of `parts`.
    pub(crate) fn largest(parts: &[Part]) -> &Part {
        parts
            .iter()
            .max_by_key(|p| p.bytes)
            .expect("an estimate has parts")
    }

    /// One line for `physfit check`: the totals and the largest device part.
    pub fn summary(&self) -> String {
        let top = Self::largest(&self.device);
        format!(
            "{} needs about {} host + {} device (largest: {} {}, `{}` = {})",
            self.command,
            human_bytes(self.host_bytes()),
            human_bytes(self.device_bytes()),
            top.name,
            human_bytes(top.bytes),
            top.field,
            top.value
        )
    }
}

/// With the workspaces' 25% headroom.
fn grown(bytes: u64) -> u64 {
    bytes.saturating_add(bytes / 4)
}

/// Tile intersections of the splats seen by `camera` at rest: per splat in
/// front of the camera, the tiles its 3.33σ extent (largest scale, 0.3 px²
/// dilation, one pixel of rounding) covers, clipped to the image.
pub fn rest_intersections(scene: &Scene, camera: &Camera) -> u64 {
    let g = scene.gaussians();
    let (tx, ty) = (camera.width.div_ceil(16), camera.height.div_ceil(16));
    let f = camera.fx.max(camera.fy);
    let mut total = 0u64;
    for (p, s) in g.means.iter().zip(&g.log_scales) {
        let c = camera.rotation * Vec3::from(*p) + camera.translation;
        if c.z <= camera.near {
            continue;
        }
        let sigma = s.iter().fold(f32::MIN, |a, &b| a.max(b)).exp() * f / c.z;
        let r = 3.33 * (sigma * sigma + 0.3).sqrt() + 1.0;
        let (u, v) = (
            camera.fx * c.x / c.z + camera.cx,
            camera.fy * c.y / c.z + camera.cy,
        );
        let span = |lo: f32, hi: f32, tiles: u32| -> u64 {
            let a = (lo / 16.0).floor().max(0.0);
            let b = (hi / 16.0).floor().min(tiles as f32 - 1.0);
            if b < a {
                0
            } else {
                (b - a) as u64 + 1
            }
        };
        total += span(u - r, u + r, tx) * span(v - r, v + r, ty);
    }
    total
}

fn views_with_frames(scene: &Scene) -> Vec<usize> {
    (0..scene.views.len())
        .filter(|&v| scene.views[v].frames.is_some())
        .collect()
}

/// The estimate of `workload` on `scene` (module doc).
pub fn estimate(scene: &Scene, workload: &Workload) -> MemoryEstimate {
    let g = scene.gaussians();
    let splats = g.len() as u64;
    let coeffs = u64::from((g.sh_degree + 1) * (g.sh_degree + 1));
    let simulated = scene.simulated.iter().filter(|s| **s).count() as u64;
    let drivers = scene.drivers.count as u64;
    let res = scene.simulation.grid_res;
    let nodes = (u64::from(res) + 1).pow(3);
    let substeps = u64::from(scene.simulation.substeps);
    let fit_views = views_with_frames(scene);
    let (cameras, frames, backward, simulate): (Vec<Camera>, u64, bool, bool) = match workload {
        Workload::Fit => (
            fit_views
                .iter()
                .map(|&v| scene.views[v].camera.clone())
                .collect(),
            scene.frame_count().unwrap_or(1) as u64,
            true,
            true,
        ),
        Workload::Render { cameras } => (cameras.clone(), 1, false, false),
        Workload::Forward {
            frames, cameras, ..
        } => (cameras.clone(), *frames as u64, false, true),
    };
    let every = (substeps as f64).sqrt().ceil().max(1.0) as u64;
    let flip = matches!(scene.simulation.transfer, Transfer::Flip { .. });
    let (grid_node_bytes, grad_node_bytes) = match flip {
        true => (
            GRID_BYTES_PER_NODE + FLIP_GRID_BYTES_PER_NODE,
            GRID_GRAD_BYTES_PER_NODE + FLIP_GRID_GRAD_BYTES_PER_NODE,
        ),
        false => (GRID_BYTES_PER_NODE, GRID_GRAD_BYTES_PER_NODE),
    };
    let grid_bytes = nodes.saturating_mul(grid_node_bytes) + drivers * 4;
    // Whether kept grids fit the budget is tested with the smaller grid of
    // atomic scatters (no cell lists), so that an adapter which keeps them
    // is never estimated without.
    let smallest_grid = nodes.saturating_mul(grid_node_bytes - 4);

    let mut device = Vec::new();
    let mut buffers = Vec::new();
    if simulate {
        // The backward keeps the segment's grids when they fit the budget.
        let full_kept = if every.saturating_mul(smallest_grid) <= KEPT_GRIDS_BUDGET_BYTES {
            every * grid_bytes
        } else {
            0
        };
        // The truncated flow's K' (`MpmSimulator::frame_every`), from the
        // smaller grid: the larger K' of an adapter without cell lists.
        let frame_every = (KEPT_GRIDS_BUDGET_BYTES / (smallest_grid + drivers * STATE_BYTES).max(1))
            .clamp(1, substeps.max(1));
        let truncated_kept = if frame_every.saturating_mul(smallest_grid) <= KEPT_GRIDS_BUDGET_BYTES
        {
            frame_every * grid_bytes
        } else {
            0
        };
        let kept = if backward {
            full_kept.max(truncated_kept)
        } else {
            0
        };
        device.push(Part {
            kind: PartKind::Grid,
            name: "simulation grid",
            bytes: grid_bytes
                + nodes.saturating_mul(grad_node_bytes + HELD_NODE_BYTES_PER_NODE)
                + kept,
            field: "simulation.grid_res".into(),
            value: res.to_string(),
            fix: format!(
                "lower `simulation.grid_res` (a grid of n cells per side takes (n+1)³ nodes of ~{} bytes; 64 takes {})",
                grid_node_bytes + grad_node_bytes,
                human_bytes(65u64.pow(3) * (grid_node_bytes + grad_node_bytes))
            ),
        });
        // Frame states, frame 0's upload, the simulator's two scratch
        // states; with a backward: a gradient per fitted frame, the
        // checkpointed working set, the gradients out, and two states of
        // slack for the fit's forward-only reports. Per driver besides:
        // 16 bytes of E, anchored flag and gradients, 24 of ν (its Lamé
        // record, src/mpm/lame.rs, and two ∂L/∂ν).
        let mut states = frames + 3;
        if backward {
            let full = (frames - 1) * (substeps.div_ceil(every) - 1) + every;
            let truncated = (substeps.div_ceil(frame_every) - 1) + frame_every;
            states += (frames - 1) + full.max(truncated) + 4 + 1 + 2;
        }
        device.push(Part {
            kind: PartKind::States,
            name: "particle states",
            bytes: states * drivers * STATE_BYTES + drivers * 40,
            field: "drivers.count".into(),
            value: drivers.to_string(),
            fix: format!(
                "lower `drivers.count`{} or the frames simulated ({} states of {} drivers)",
                if backward {
                    ", the substeps (`simulation.substeps`, the top of `material.log10_youngs_range`)"
                } else {
                    ""
                },
                states,
                drivers
            ),
        });
        buffers.push(PlannedBuffer {
            label: "mpm grid (m, mv)",
            bytes: nodes.saturating_mul(16),
            storage: true,
            kind: PartKind::Grid,
        });
        buffers.push(PlannedBuffer {
            label: "mpm substep state A",
            bytes: drivers * STATE_BYTES,
            storage: true,
            kind: PartKind::States,
        });
    }
    let params = 44 + 12 * coeffs;
    // Rest and posed parameters, the deformation's records (64), driver
    // slots (32) and contributions (128) per simulated splat; the
    // rasterizer's projected record, rectangle, keys, order, counts,
    // offsets and sort/scan scratch (~100 per splat); with a backward the
    // 2D gradients (36) and the parameter gradients.
    let per_splat = 2 * params + grown(100) + if backward { grown(36 + params) } else { 0 };
    let deform = if simulate { simulated * 224 } else { 0 };
    device.push(Part {
        kind: PartKind::Splats,
        name: "splats",
        bytes: splats * per_splat + deform,
        field: "gaussians.path".into(),
        value: format!("{splats} splats, SH degree {}", g.sh_degree),
        fix: "use fewer splats (prune the .ply) or a lower SH degree".into(),
    });
    buffers.push(PlannedBuffer {
        label: "splat sh coefficients",
        bytes: splats * 12 * coeffs,
        storage: true,
        kind: PartKind::Splats,
    });
    let biggest = cameras
        .iter()
        .max_by_key(|c| u64::from(c.width) * u64::from(c.height));
    let size = |c: &Camera| format!("{}×{} px", c.width, c.height);
    let intersections = cameras
        .iter()
        .map(|c| rest_intersections(scene, c))
        .max()
        .unwrap_or(0);
    let intersections = grown(intersections + intersections / 2).max(1024);
    if let Some(c) = biggest {
        device.push(Part {
            kind: PartKind::Intersections,
            name: "tile intersections",
            bytes: intersections * BYTES_PER_INTERSECTION,
            field: "views[i].camera".into(),
            value: size(c),
            fix: "render smaller images (`width`, `height`; `--size`) or fewer, smaller splats"
                .into(),
        });
        buffers.push(PlannedBuffer {
            label: "splat intersection tile ids",
            bytes: intersections * 4,
            storage: true,
            kind: PartKind::Intersections,
        });
        let pixels = u64::from(c.width) * u64::from(c.height);
        // Render: image and last index (20) with headroom; a fit adds the
        // loss's rows, maps and gradient image (48) and the colour
        // correction's corrected image and gradient (32).
        let per_pixel = grown(20) + if backward { 80 } else { 0 };
        device.push(Part {
            kind: PartKind::Images,
            name: "images",
            bytes: pixels * per_pixel
                + grown(u64::from(c.width.div_ceil(16)) * u64::from(c.height.div_ceil(16)) * 8),
            field: "views[i].camera".into(),
            value: size(c),
            fix: "render smaller images (`width`, `height`; `--size`)".into(),
        });
        buffers.push(PlannedBuffer {
            label: "splat image",
            bytes: grown(pixels * 16),
            storage: true,
            kind: PartKind::Images,
        });
    }
    if backward {
        // The fit's static backdrops (src/splat/backdrop.rs): per view with
        // frames, an image, a flag per splat and one per tile.
        let backdrop_bytes: u64 = fit_views
            .iter()
            .map(|&v| {
                let c = &scene.views[v].camera;
                let tiles = u64::from(c.width.div_ceil(16)) * u64::from(c.height.div_ceil(16));
                u64::from(c.width) * u64::from(c.height) * 16 + splats * 4 + tiles * 4
            })
            .sum();
        device.push(Part {
            kind: PartKind::Images,
            name: "static backdrops",
            bytes: backdrop_bytes,
            field: "views[i].camera".into(),
            value: format!("{} views", fit_views.len()),
            fix: "render smaller images (`width`, `height`; `--size`)".into(),
        });
        let frame_bytes: u64 = fit_views
            .iter()
            .map(|&v| {
                let c = &scene.views[v].camera;
                let px = u64::from(c.width) * u64::from(c.height);
                px * if scene.views[v].masks.is_some() { 5 } else { 4 }
            })
            .sum();
        device.push(Part {
            kind: PartKind::Frames,
            name: "reference frames",
            bytes: frame_bytes * frames,
            field: "views[i].frames".into(),
            value: format!("{frames} frames × {} views", fit_views.len()),
            fix: "fit fewer or smaller reference frames".into(),
        });
    }

    let pixels_all: u64 = cameras
        .iter()
        .map(|c| u64::from(c.width) * u64::from(c.height))
        .sum();
    let mut host = vec![
        Part {
            kind: PartKind::Runtime,
            name: "runtime",
            bytes: RUNTIME_HOST_BYTES,
            field: "-".into(),
            value: "-".into(),
            fix: "free memory on the machine".into(),
        },
        Part {
            kind: PartKind::Splats,
            name: "splats (host copies, K-Means)",
            bytes: splats * (2 * params + 64) + drivers * 256,
            field: "gaussians.path".into(),
            value: format!("{splats} splats"),
            fix: "use fewer splats (prune the .ply)".into(),
        },
        Part {
            kind: PartKind::Images,
            name: "images (decoded, read back)",
            bytes: pixels_all * 48,
            field: "views[i].camera".into(),
            value: biggest.map(size).unwrap_or_default(),
            fix: "render smaller images (`width`, `height`; `--size`)".into(),
        },
    ];
    if scene.drivers.fill {
        host.push(Part {
            kind: PartKind::Grid,
            name: "interior fill voxels",
            bytes: voxel::fill_host_bytes(res),
            field: "simulation.grid_res".into(),
            value: res.to_string(),
            fix: "lower `simulation.grid_res` or set `drivers.fill = false`".into(),
        });
    }
    if let Workload::Forward {
        frames_held: true, ..
    } = workload
    {
        host.push(Part {
            kind: PartKind::Images,
            name: "rendered frames (held until written)",
            bytes: pixels_all * HELD_FRAME_BYTES_PER_PIXEL * frames,
            field: "--frames".into(),
            value: format!("{frames} frames × {} views", cameras.len()),
            fix: "render fewer frames, fewer views (`--camera`) or smaller images (`--size`)"
                .into(),
        });
    }
    // Whole rollouts kept for the full flow's backward (docs/design.md §
    // Adjoint, Memory): S states and grids per frame, as many frames as the
    // cap holds; none where a frame's S grids exceed the kept-grids budget.
    let kept_rollout = if simulate
        && backward
        && substeps.saturating_mul(smallest_grid) <= KEPT_GRIDS_BUDGET_BYTES
    {
        let per_frame = substeps.saturating_mul(grid_bytes + drivers * STATE_BYTES);
        let fitting = super::KEPT_ROLLOUT_CAP_BYTES / per_frame.max(1);
        frames.saturating_sub(1).min(fitting) * per_frame
    } else {
        0
    };
    MemoryEstimate {
        command: workload.command(),
        host,
        device,
        buffers,
        kept_rollout,
    }
}
