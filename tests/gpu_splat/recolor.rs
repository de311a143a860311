//! The recolouring behind `stiffness.png` (`physfit::report::recolored`)
//! through the GPU rasterizer: splats recoloured to one colour render that
//! colour wherever they cover a pixel, whatever their SH held before.

use crate::common;
use crate::support::{camera_looking_z, gpu_render};
use glam::Vec3;
use physfit::report::recolored;

#[test]
fn recoloured_lattice_renders_its_one_colour() {
    let ctx = common::gpu();
    let mut g = common::splat_lattice(3);
    // View-dependent colours first: degree 1 with strong higher bands, so a
    // recolouring that kept them would not render one colour.
    g.sh_degree = 1;
    g.sh = (0..g.len() * 4)
        .map(|i| match i % 4 {
            0 => [0.5, 0.2, 0.1],
            k => [0.4 * k as f32, -0.3, 0.2],
        })
        .collect();
    for s in &mut g.log_scales {
        *s = [-2.0; 3];
    }
    let colour = [0.9f32, 0.3, 0.15];
    let bg = [0.0f32, 0.0, 0.0];
    let cam = camera_looking_z(64, 64, Vec3::new(0.5, 0.5, -2.5));
    // Composited colour = c·A + bg·(1 − A): undoing the background where
    // the splats cover a pixel (A > 0.5) must give c back.
    let unblended = |image: &[[f32; 4]]| -> Vec<[f32; 3]> {
        image
            .iter()
            .filter(|p| p[3] > 0.5)
            .map(|p| [0, 1, 2].map(|c| (p[c] - bg[c] * (1.0 - p[3])) / p[3]))
            .collect()
    };
    let worst = |pixels: &[[f32; 3]]| {
        pixels
            .iter()
            .flat_map(|p| (0..3).map(move |c| (p[c] - colour[c]).abs()))
            .fold(0.0f32, f32::max)
    };
    let before = unblended(&gpu_render(&ctx, &g, &cam, bg));
    assert!(
        worst(&before) > 0.1,
        "the original splats are not already that colour"
    );
    let out = recolored(&g, &vec![colour; g.len()]).unwrap();
    let after = unblended(&gpu_render(&ctx, &out, &cam, bg));
    println!(
        "recoloured lattice: {} covered pixels, max |colour − target| {:.2e} (before {:.2e})",
        after.len(),
        worst(&after),
        worst(&before)
    );
    assert!(
        after.len() > 100,
        "the splats cover pixels ({})",
        after.len()
    );
    assert!(
        worst(&after) < 1e-5,
        "renders the one colour: {:.2e}",
        worst(&after)
    );
}
