//! The gsplat reference cases load with the shapes their README states.

use crate::common;

use physfit::reference::gsplat_case::{load_gsplat_case, HEIGHT, WIDTH};

#[test]
fn reference_cases_load() {
    for (name, n) in [("tiny_case", 4), ("basic_case", 16)] {
        let case = load_gsplat_case(common::fixture(&format!(
            "gsplat_reference/{name}.safetensors"
        )))
        .unwrap();
        assert_eq!(case.gaussians.len(), n, "{name}");
        assert_eq!(case.gaussians.sh.len(), 16 * n, "{name}");
        assert_eq!(case.image.len(), (WIDTH * HEIGHT) as usize, "{name}");
        let lit = case.image.iter().filter(|p| p[3] > 0.01).count();
        assert!(lit > 0, "{name}: reference image is empty");
    }
}
