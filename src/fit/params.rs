//! Parameterisations of the fit (docs/design.md § Loss, parameters, fit; issue
//! 12): how a low-dimensional parameter vector becomes a value per driver,
//! as one sparse linear map whose transpose takes per-driver gradients back
//! to the parameters.
//!
//! `log10 E` per driver is `Σ_i M_di p_i` ([`YoungsField`]); the initial
//! velocity of driver d, component a, in world units per second, is
//! `Σ_i M_(d,a),i p_i` ([`VelocityField`]). Every field is a [`ParamMap`]:
//! a list of `(driver, component, parameter, weight)` entries. Per driver,
//! global, per region and rigid motion are all such lists, so a new field
//! (a region assignment read from the scene, a smoothness basis) is one
//! more constructor and needs nothing else: the forward applies `M` on the
//! host, and [`super::param_gather`] applies `Mᵀ` on the GPU.
//!
//! Anchored drivers get no velocity entries: their initial velocity is
//! held at zero whatever the parameters, and no gradient flows from them.

use super::error::FitError;

/// How `log10 E` (normalised units) is parameterised.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum YoungsField {
    /// One value per driver (`drivers` parameters).
    PerDriver,
    /// One value for the whole object (1 parameter).
    Global,
    /// One value per region: `region[d]` is driver d's region, `0..count`
    /// (`count` parameters; a region without drivers gets gradient 0).
    Regions {
        /// Region of every driver.
        region: Vec<u32>,
        /// Number of regions.
        count: u32,
    },
}

/// How the initial velocity (world units per second) is parameterised.
/// Anchored drivers are held at zero in every field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VelocityField {
    /// Three values per driver (`3·drivers` parameters, driver-major); those
    /// of anchored drivers have no effect and gradient 0.
    PerDriver,
    /// One velocity for every free driver (3 parameters).
    Global,
    /// A rigid motion about the free drivers' rest centroid `c` (6
    /// parameters): `v_d = u + ω × (X_d − c)`, `u` (world units/s) then `ω`
    /// (rad/s), `X_d` the driver's rest position in world units.
    Rigid,
    /// One velocity per region (`3·count` parameters, region-major).
    Regions {
        /// Region of every driver.
        region: Vec<u32>,
        /// Number of regions.
        count: u32,
    },
}

/// One entry of a [`ParamMap`]: `value[driver][component] += weight · p[param]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MapEntry {
    /// Driver index.
    pub driver: u32,
    /// Component of the per-driver value (0 for E, 0..3 for velocity).
    pub component: u32,
    /// Parameter index.
    pub param: u32,
    /// Coefficient.
    pub weight: f64,
}

/// A sparse linear map from `params` parameters to `drivers × dim` values.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamMap {
    /// Number of parameters.
    pub params: usize,
    /// Number of drivers.
    pub drivers: usize,
    /// Components per driver (1 for E, 3 for v0, 9 for its gradient).
    pub dim: usize,
    /// The nonzero coefficients.
    pub entries: Vec<MapEntry>,
}

fn check_regions(region: &[u32], count: u32, drivers: usize) -> Result<(), FitError> {
    if region.len() != drivers {
        return Err(FitError::Parameterisation(format!(
            "a region assignment lists {} drivers but the scene has {drivers}",
            region.len()
        )));
    }
    if let Some(d) = region.iter().position(|&r| r >= count) {
        return Err(FitError::Parameterisation(format!(
            "driver {d} is in region {} but only {count} regions are declared",
            region[d]
        )));
    }
    Ok(())
}

impl ParamMap {
    /// The map of `field` over `drivers` drivers.
    pub fn youngs(field: &YoungsField, drivers: usize) -> Result<Self, FitError> {
        let entry = |d: usize, p: u32| MapEntry {
            driver: d as u32,
            component: 0,
            param: p,
            weight: 1.0,
        };
        let (params, entries) = match field {
            YoungsField::PerDriver => (drivers, (0..drivers).map(|d| entry(d, d as u32)).collect()),
            YoungsField::Global => (1, (0..drivers).map(|d| entry(d, 0)).collect()),
            YoungsField::Regions { region, count } => {
                check_regions(region, *count, drivers)?;
                (
                    *count as usize,
                    (0..drivers).map(|d| entry(d, region[d])).collect(),
                )
            }
        };
        Ok(Self {
            params,
            drivers,
            dim: 1,
            entries,
        })
    }

    /// The map of `field` over drivers at `rest` (normalised), `anchored`
    /// ones held at zero; `side` is the box side (world units per
    /// normalised unit), for the rigid field's lever arms.
    pub fn velocity(
        field: &VelocityField,
        rest: &[[f32; 3]],
        anchored: &[bool],
        side: f64,
    ) -> Result<Self, FitError> {
        let drivers = rest.len();
        let free: Vec<usize> = (0..drivers).filter(|&d| !anchored[d]).collect();
        let entry = |d: usize, a: usize, p: usize, weight: f64| MapEntry {
            driver: d as u32,
            component: a as u32,
            param: p as u32,
            weight,
        };
        let mut entries = Vec::new();
        let params = match field {
            VelocityField::PerDriver => {
                for &d in &free {
                    for a in 0..3 {
                        entries.push(entry(d, a, 3 * d + a, 1.0));
                    }
                }
                3 * drivers
            }
            VelocityField::Global => {
                for &d in &free {
                    for a in 0..3 {
                        entries.push(entry(d, a, a, 1.0));
                    }
                }
                3
            }
            VelocityField::Regions { region, count } => {
                check_regions(region, *count, drivers)?;
                for &d in &free {
                    for a in 0..3 {
                        entries.push(entry(d, a, 3 * region[d] as usize + a, 1.0));
                    }
                }
                3 * *count as usize
            }
            VelocityField::Rigid => {
                let mut c = [0.0f64; 3];
                for &d in &free {
                    for a in 0..3 {
                        c[a] += f64::from(rest[d][a]) / free.len() as f64;
                    }
                }
                for &d in &free {
                    let r: [f64; 3] =
                        std::array::from_fn(|a| (f64::from(rest[d][a]) - c[a]) * side);
                    for a in 0..3 {
                        entries.push(entry(d, a, a, 1.0));
                    }
                    // (ω × r)_a = ω_{a+1} r_{a+2} − ω_{a+2} r_{a+1}.
                    for a in 0..3 {
                        let (b, e) = ((a + 1) % 3, (a + 2) % 3);
                        entries.push(entry(d, a, 3 + b, r[e]));
                        entries.push(entry(d, a, 3 + e, -r[b]));
                    }
                }
                6
            }
        };
        Ok(Self {
            params,
            drivers,
            dim: 3,
            entries,
        })
    }

    /// The initial affine velocity `C0` (APIC's `C`, 9 per driver,
    /// row-major `C[a][b] = ∂v_a/∂x_b`, 1/s: the gradient of a velocity in
    /// world units/s over world positions equals that of the normalised
    /// velocity over normalised positions) that `field` gives its free
    /// drivers, as a map of the same parameters as
    /// [`ParamMap::velocity`] (docs/design.md § Loss, parameters, fit,
    /// "The initial affine velocity").
    ///
    /// The fields whose velocity is affine in position define it: `rigid`,
    /// `v = u + ω × (X − c)`, has `∇v = [ω]×` (`C[a][a+2] = ω_(a+1)`,
    /// `C[a][a+1] = −ω_(a+2)`), the same at every free driver; `global`
    /// and `regions` are constant (`∇v = 0`: no entries). Per-driver
    /// velocities define no field between the drivers, so no gradient
    /// (no entries): `C0 = 0`, as before the fields had one. Anchored
    /// drivers get none either. Through this map's transpose the
    /// simulator's `∂L/∂C0` joins `∂L/∂ω`.
    pub fn velocity_gradient(field: &VelocityField, anchored: &[bool]) -> Self {
        let drivers = anchored.len();
        let mut entries = Vec::new();
        let params = match field {
            VelocityField::PerDriver => 3 * drivers,
            VelocityField::Global => 3,
            VelocityField::Regions { count, .. } => 3 * *count as usize,
            VelocityField::Rigid => {
                for d in (0..drivers).filter(|&d| !anchored[d]) {
                    for a in 0..3 {
                        let (b, e) = ((a + 1) % 3, (a + 2) % 3);
                        // (ω × r)_a = ω_b r_e − ω_e r_b.
                        for (col, param, weight) in [(e, 3 + b, 1.0), (b, 3 + e, -1.0)] {
                            entries.push(MapEntry {
                                driver: d as u32,
                                component: (3 * a + col) as u32,
                                param: param as u32,
                                weight,
                            });
                        }
                    }
                }
                6
            }
        };
        Self {
            params,
            drivers,
            dim: 9,
            entries,
        }
    }

    /// `M · p`: the per-driver values (`drivers · dim`, driver-major).
    pub fn apply(&self, p: &[f64]) -> Result<Vec<f64>, FitError> {
        if p.len() != self.params {
            return Err(FitError::ParameterCount {
                what: self.what(),
                got: p.len(),
                expected: self.params,
            });
        }
        if let Some(i) = p.iter().position(|v| !v.is_finite()) {
            return Err(FitError::NonFiniteParameter {
                what: self.what(),
                index: i,
                value: p[i],
            });
        }
        let mut out = vec![0.0; self.drivers * self.dim];
        for e in &self.entries {
            out[e.driver as usize * self.dim + e.component as usize] +=
                e.weight * p[e.param as usize];
        }
        Ok(out)
    }

    /// The parameters' name in errors.
    fn what(&self) -> &'static str {
        match self.dim {
            1 => "log10 E",
            _ => "v0",
        }
    }

    /// `Mᵀ · g` on the host, `g` per driver (`drivers · dim`).
    pub fn transpose(&self, g: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; self.params];
        for e in &self.entries {
            out[e.param as usize] +=
                e.weight * g[e.driver as usize * self.dim + e.component as usize];
        }
        out
    }
}
