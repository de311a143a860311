//! The memory refusal every allocating command runs right after loading
//! its scene and before it allocates anything ([`physfit::budget`]): the
//! estimate of its workload against the host and the adapter it will use
//! (probed, no device created).

use anyhow::Result;
use physfit::budget::{estimate, MachineMemory, Workload};
use physfit::scene::{Camera, Scene};

/// Refuses `workload` on `scene` when it does not fit the machine.
pub fn refuse_over_memory(scene: &Scene, workload: &Workload) -> Result<()> {
    let machine = MachineMemory::probe();
    let estimate = estimate(scene, workload);
    log::debug!("{}", estimate.against(&machine));
    estimate.check(&scene.path, &machine)?;
    Ok(())
}

/// Every camera of `scene`, resized to `size` when given.
pub fn scene_cameras(scene: &Scene, size: Option<(u32, u32)>) -> Vec<Camera> {
    scene
        .views
        .iter()
        .map(|v| match size {
            Some((w, h)) => v.camera.resized(w, h),
            None => v.camera.clone(),
        })
        .collect()
}
