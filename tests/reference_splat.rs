//! The f64 splat twin: forward against gsplat's renders, backward against
//! central finite differences, the alpha clamp, and robustness.

mod common;

use physfit::reference::gsplat_case::load_gsplat_case;
use physfit::reference::splat::{render, SplatParams64};

#[test]
fn forward_matches_gsplat_references() {
    for name in ["tiny_case", "basic_case"] {
        let case = load_gsplat_case(common::shared_data(&format!(
            "gsplat_reference/{name}.safetensors"
        )))
        .unwrap();
        let params = SplatParams64::from(&case.gaussians);
        let bg = case.background.map(f64::from);
        let image = render(&params, &case.camera, bg);
        let mut max = [0.0f64; 4];
        let mut sum = [0.0f64; 4];
        for (p, reference) in case.image.iter().enumerate() {
            let ours = [
                image.rgb[p][0],
                image.rgb[p][1],
                image.rgb[p][2],
                image.alpha[p],
            ];
            for ch in 0..4 {
                let d = (ours[ch] - reference[ch] as f64).abs();
                max[ch] = max[ch].max(d);
                sum[ch] += d;
            }
        }
        let mean = sum.map(|s| s / case.image.len() as f64);
        println!(
            "{name}: max |diff| (r, g, b, a) = {:.3e} {:.3e} {:.3e} {:.3e}, mean = {:.3e} {:.3e} {:.3e} {:.3e}",
            max[0], max[1], max[2], max[3], mean[0], mean[1], mean[2], mean[3]
        );
        for ch in 0..4 {
            assert!(
                max[ch] <= 5e-4,
                "{name} channel {ch}: max diff {:.3e}",
                max[ch]
            );
            assert!(
                mean[ch] <= 1e-5,
                "{name} channel {ch}: mean diff {:.3e}",
                mean[ch]
            );
        }
    }
}
