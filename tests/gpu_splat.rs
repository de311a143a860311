//! The GPU rasterizer and its primitives on the present adapter (lavapipe
//! in CI): forward against gsplat's renders and the f64 twin, backward
//! against the twin and finite differences, the fox against a golden image,
//! workspace reuse and stale frames, the prefix sum and radix sort against
//! CPU ones, reference frames uploaded to the GPU, the image loss against
//! its f64 twin and finite differences (also with a loss mask), a view's colour correction (forward, backward, gain and offset gradients), `physfit render` end to end, what the binary prints under `--quiet` and without `XDG_RUNTIME_DIR`, and the recolouring of `stiffness.png` (docs/design.md § Gaussian splatting, § Verification 3–4). One test
//! binary, which also travels to GPU machines (shared/gpu/prepare.sh, beside the checkout).

mod common;
#[path = "gpu_splat/support.rs"]
mod support;

#[path = "gpu_splat/align.rs"]
mod align;
#[path = "gpu_splat/align_cli.rs"]
mod align_cli;
#[path = "gpu_splat/backward.rs"]
mod backward;
#[path = "gpu_splat/camera_backward.rs"]
mod camera_backward;
#[path = "gpu_splat/color_correction.rs"]
mod color_correction;
#[path = "gpu_splat/forward.rs"]
mod forward;
#[path = "gpu_splat/fox.rs"]
mod fox;
#[path = "gpu_splat/frames_upload.rs"]
mod frames_upload;
#[path = "gpu_splat/loss.rs"]
mod loss;
#[path = "gpu_splat/loss_mask.rs"]
mod loss_mask;
#[path = "gpu_splat/prefix_sum.rs"]
mod prefix_sum;
#[path = "gpu_splat/quiet_cli.rs"]
mod quiet_cli;
#[path = "gpu_splat/radix_sort.rs"]
mod radix_sort;
#[path = "gpu_splat/recolor.rs"]
mod recolor;
#[path = "gpu_splat/render_cli.rs"]
mod render_cli;
#[path = "gpu_splat/render_splats.rs"]
mod render_splats;
#[path = "gpu_splat/static_backdrop.rs"]
mod static_backdrop;
