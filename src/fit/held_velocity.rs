//! Where a stiffness-only fit takes its velocity from: the per-driver
//! velocity of an earlier fit of the same scene and drivers
//! (docs/design.md § Loss, parameters, fit), and, when the drivers differ,
//! a message that says how.

use std::path::Path;

use super::session_error::SessionError;
use crate::drive::DriverSet;
use crate::output::FittedDrivers;
use crate::scene::Scene;

/// Where a stiffness-only fit takes its velocity from: per-driver values
/// of an earlier fit of the same scene and drivers.
pub(super) fn held_velocity(
    path: &Path,
    scene: &Scene,
    drivers: &DriverSet,
) -> Result<Vec<f64>, SessionError> {
    let fail = |problem: String| SessionError::HeldVelocity {
        path: path.to_path_buf(),
        problem,
    };
    let fitted = FittedDrivers::load(path).map_err(|e| {
        fail(format!(
            "a stiffness-only fit holds the velocity of an earlier fit ({e}); fix: fit the velocity of {} first",
            crate::io::shown::shown(&scene.path)
        ))
    })?;
    fitted
        .check_against(scene)
        .map_err(|e| fail(e.to_string()))?;
    if fitted.rest != drivers.rest {
        return Err(fail(format!(
            "{}; fix: refit the velocity with this scene (`--stage velocity`, or both stages)",
            drivers_differ(&fitted.rest, &drivers.rest, scene.simulation.grid_res)
        )));
    }
    Ok(fitted.velocity.iter().flatten().copied().collect())
}

/// How an earlier fit's drivers (`fitted`, rest positions in the box's
/// normalised units) differ from the scene's (`scene`): by count, or, when
/// the counts match, by how many moved and how far, which tells a reseeded
/// clustering (most moved, by cells) from a rounding difference (a few, by
/// a hair). Called once the splats and `[drivers]` settings are known to
/// match, so the count alone would not say what differs.
fn drivers_differ(fitted: &[[f32; 3]], scene: &[[f32; 3]], grid_res: u32) -> String {
    if fitted.len() != scene.len() {
        return format!(
            "{} drivers where the scene has {} (the splats and `[drivers]` settings match the \
             fit's, so the K-Means clustering itself came out differently: a drivers file of \
             another physfit version)",
            fitted.len(),
            scene.len()
        );
    }
    let distance = |a: &[f32; 3], b: &[f32; 3]| {
        (0..3)
            .map(|i| f64::from(a[i] - b[i]).powi(2))
            .sum::<f64>()
            .sqrt()
    };
    let moves: Vec<f64> = fitted
        .iter()
        .zip(scene)
        .map(|(a, b)| distance(a, b))
        .filter(|&d| d > 0.0)
        .collect();
    let largest = moves.iter().copied().fold(0.0, f64::max);
    format!(
        "the same {} drivers, but {} of them sit elsewhere at rest, by up to {:.3} grid cells \
         (the splats and `[drivers]` settings match the fit's, so the K-Means clustering itself \
         came out differently: a drivers file of another physfit version)",
        scene.len(),
        moves.len(),
        largest * f64::from(grid_res)
    )
}

#[cfg(test)]
mod tests {
    use super::drivers_differ;

    #[test]
    fn drivers_that_match_in_count_say_how_many_moved_and_how_far() {
        let scene = vec![[0.1, 0.2, 0.3], [0.5, 0.5, 0.5], [0.7, 0.2, 0.4]];
        let mut fitted = scene.clone();
        fitted[1][0] += 0.05;
        let text = drivers_differ(&fitted, &scene, 20);
        assert!(
            text.contains("the same 3 drivers, but 1 of them sit elsewhere")
                && text.contains("1.000 grid cells"),
            "{text}"
        );
        assert!(!text.contains("3 drivers where"), "{text}");
        let text = drivers_differ(&fitted[..2], &scene, 20);
        assert!(text.contains("2 drivers where the scene has 3"), "{text}");
    }
}
