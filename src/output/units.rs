//! World units for outputs (docs/design.md § Units and frames, § Loss, parameters, fit).

/// Young's modulus in world units from the simulator's normalised one:
/// `E_world = E_normalised · side²`, `side` the simulation cube's side in
/// world units.
///
/// Why: inside the simulator lengths are divided by `side` (time is not),
/// so accelerations are `a_n = a_w / side` and gradients `∇_n = side · ∇_w`.
/// Strain has no unit, so the momentum balance `ρ a_n = ∇_n · (E_n ε)`
/// reads `ρ a_w = side² E_n ∇_w · ε` in world units: at the same density
/// the world modulus is `side² E_n`. A different `padding` (another box
/// side) changes the normalised E a fit finds but not this one.
pub fn youngs_world(e_normalised: f64, side: f64) -> f64 {
    e_normalised * side * side
}
