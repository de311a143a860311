//! Every kernel wrapper's binding table against its WGSL, reflected with
//! naga: for each entry point, every binding the entry point uses is in the
//! table, and every row of the table names the WGSL variable at its group 0
//! binding, with its kind (uniform / storage) and access (read /
//! read_write). Two buffers of one kind swapped in a table bind silently at
//! run time (wgpu checks kinds only); here they fail by name. Needs no device.

use std::collections::BTreeSet;

use naga::valid::{ValidationFlags, Validator};
use naga::{AddressSpace, StorageAccess};
use physfit::gpu::shader::{compose, shader_names, ShaderOptions};
use physfit::gpu::{AtomicMode, BindingKind, KernelSpec};

/// Every kernel wrapper's entry points. A wrapper missing here is caught by
/// `every_entry_point_has_a_table`.
fn all_kernel_specs() -> Vec<KernelSpec> {
    use physfit::{deform, fit, gpu, loss, mpm, splat};
    vec![
        deform::driver_gather::DriverGather::SPEC,
        deform::gaussian_motion::GaussianMotion::SPEC,
        deform::gaussian_motion_adjoint::GaussianMotionAdjoint::SPEC,
        fit::param_gather::ParamGather::SPEC,
        gpu::prefix_sum_add::PrefixSumAdd::SPEC,
        gpu::prefix_sum_blocks::PrefixSumBlocks::SPEC,
        gpu::radix_sort_histogram::RadixSortHistogram::SPEC,
        gpu::radix_sort_scatter::RadixSortScatter::SPEC,
        loss::color_correction::ColorCorrect::APPLY,
        loss::color_correction::ColorCorrect::BACKWARD,
        loss::reduce_terms::ReduceTerms::SPEC,
        loss::ssim_cols::SsimCols::SPEC,
        loss::ssim_grad_cols::SsimGradCols::SPEC,
        loss::ssim_grad_rows::SsimGradRows::SPEC,
        loss::ssim_rows::SsimRows::SPEC,
        mpm::add_assign::AddAssign::SPEC,
        mpm::cell_scatter::CellScatter::SPEC,
        mpm::external_force::ExternalForce::SPEC,
        mpm::flip_clear::FlipClear::SPEC,
        mpm::flip_gather::FlipGather::SPEC,
        mpm::flip_gather_adjoint::FlipGatherAdjoint::SPEC,
        mpm::flip_grid_adjoint::FlipGridAdjoint::SPEC,
        mpm::flip_scatter::FlipScatter::SPEC,
        mpm::flip_scatter_adjoint::FlipScatterAdjoint::SPEC,
        mpm::g2p::G2p::SPEC,
        mpm::g2p_adjoint::G2pAdjoint::MAIN,
        mpm::g2p_adjoint::G2pAdjoint::MAIN_CELLS,
        mpm::grid_bounds::GridBounds::SPEC,
        mpm::grid_box::GridBox::SPEC,
        mpm::grid_clear::GridClear::CLEAR_GRID,
        mpm::grid_clear::GridClear::CLEAR_GRID_AND_LISTS,
        mpm::grid_update::GridUpdate::SPEC,
        mpm::grid_update_adjoint::GridUpdateAdjoint::SPEC,
        mpm::p2g::P2g::SPEC,
        mpm::p2g_adjoint::P2gAdjoint::MAIN,
        mpm::p2g_adjoint::P2gAdjoint::MAIN_CELLS,
        mpm::p2g_bin::P2gBin::SPEC,
        splat::blend::Blend::SPEC,
        splat::blend_adjoint::BlendAdjoint::SPEC,
        splat::camera_adjoint::CameraAdjoint::SPEC,
        splat::intersect_tiles::IntersectTiles::COUNT,
        splat::intersect_tiles::IntersectTiles::WRITE,
        splat::project::Project::SPEC,
        splat::project_adjoint::ProjectAdjoint::SPEC,
        splat::tile_ranges::TileRanges::SPEC,
        splat::static_tiles::StaticTiles::MARK,
        splat::static_tiles::StaticTiles::SKIP,
    ]
}

/// The kind a WGSL global of `space` needs, or why it has none.
fn wgsl_kind(space: AddressSpace) -> Result<BindingKind, String> {
    match space {
        AddressSpace::Uniform => Ok(BindingKind::Uniform),
        AddressSpace::Storage { access } if access.contains(StorageAccess::STORE) => {
            Ok(BindingKind::StorageReadWrite)
        }
        AddressSpace::Storage { .. } => Ok(BindingKind::StorageRead),
        other => Err(format!(
            "{other:?} (textures and samplers have no binding kind yet)"
        )),
    }
}

/// Mismatches between `spec` and its shader composed with `options`.
fn mismatches(spec: &KernelSpec, options: &ShaderOptions) -> Vec<String> {
    let at = format!("{}::{} [{:?}]", spec.shader, spec.entry, options.atomics);
    let source = match compose(spec.shader, options) {
        Ok(source) => source,
        Err(e) => return vec![format!("{at}: {e}")],
    };
    let module = naga::front::wgsl::parse_str(&source)
        .unwrap_or_else(|e| panic!("{at}: {}", e.emit_to_string(&source)));
    let info = Validator::new(ValidationFlags::all(), options.capabilities())
        .validate(&module)
        .unwrap_or_else(|e| panic!("{at}: {}", e.emit_to_string(&source)));
    let Some(index) = module
        .entry_points
        .iter()
        .position(|ep| ep.name == spec.entry)
    else {
        return vec![format!(
            "{at}: the shader has no entry point '{}'",
            spec.entry
        )];
    };
    let used = info.get_entry_point(index);
    let mut errors = Vec::new();
    let mut seen = BTreeSet::new();
    for row in spec.bindings {
        if !seen.insert(row.binding) {
            errors.push(format!("{at}: binding {} twice in the table", row.binding));
        }
        if spec.bindings.iter().filter(|r| r.name == row.name).count() > 1 {
            errors.push(format!("{at}: name '{}' twice in the table", row.name));
        }
    }
    for (handle, var) in module.global_variables.iter() {
        let Some(resource) = &var.binding else {
            continue;
        };
        let name = var.name.as_deref().unwrap_or("<unnamed>");
        let is_used = !used[handle].is_empty();
        if resource.group != 0 {
            if is_used {
                errors.push(format!(
                    "{at}: '{name}' is in group {}; kernels bind group 0 only",
                    resource.group
                ));
            }
            continue;
        }
        let Some(row) = spec.bindings.iter().find(|r| r.binding == resource.binding) else {
            if is_used {
                errors.push(format!(
                    "{at}: the entry point uses '{name}' at binding {}, which the table lacks",
                    resource.binding
                ));
            }
            continue;
        };
        if row.name != name {
            errors.push(format!(
                "{at}: binding {} is '{name}' in the WGSL but '{}' in the table",
                resource.binding, row.name
            ));
        }
        match wgsl_kind(var.space) {
            Ok(kind) if kind == row.kind => {}
            Ok(kind) => errors.push(format!(
                "{at}: binding {} ('{name}') is {kind:?} in the WGSL but {:?} in the table",
                resource.binding, row.kind
            )),
            Err(why) => errors.push(format!(
                "{at}: binding {} ('{name}'): {why}",
                resource.binding
            )),
        }
    }
    for row in spec.bindings {
        let declared = module.global_variables.iter().any(|(_, var)| {
            var.binding
                .as_ref()
                .is_some_and(|b| b.group == 0 && b.binding == row.binding)
        });
        if !declared {
            errors.push(format!(
                "{at}: the table binds '{}' at {}, which the WGSL does not declare",
                row.name, row.binding
            ));
        }
    }
    errors
}

#[test]
fn every_binding_table_matches_its_wgsl() {
    let mut errors = Vec::new();
    for spec in all_kernel_specs() {
        for atomics in AtomicMode::ALL {
            errors.extend(mismatches(&spec, &ShaderOptions { atomics }));
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn every_entry_point_has_a_table() {
    let options = ShaderOptions {
        atomics: AtomicMode::CompareSwap,
    };
    let covered: BTreeSet<(&str, &str)> = all_kernel_specs()
        .iter()
        .map(|s| (s.shader, s.entry))
        .collect();
    let mut missing = Vec::new();
    for name in shader_names() {
        if name == AtomicMode::Native.module() {
            continue;
        }
        let source = compose(name, &options).unwrap();
        let module = naga::front::wgsl::parse_str(&source).unwrap();
        for ep in &module.entry_points {
            if !covered.contains(&(name, ep.name.as_str())) {
                missing.push(format!("{name}::{}", ep.name));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "entry points without a binding table in all_kernel_specs: {missing:?}"
    );
}

#[test]
fn a_swapped_pair_of_rows_is_caught() {
    // Two read-only storage buffers of the projection exchanged: same kind,
    // same access, so only the names tell them apart.
    let spec = physfit::splat::project::Project::SPEC;
    let mut rows = spec.bindings.to_vec();
    let (means, rotations) = (1, 2);
    assert_eq!(rows[means].name, "means");
    assert_eq!(rows[rotations].name, "rotations");
    (rows[means].binding, rows[rotations].binding) = (rows[rotations].binding, rows[means].binding);
    let swapped = KernelSpec {
        bindings: Box::leak(rows.into_boxed_slice()),
        ..spec
    };
    let errors = mismatches(
        &swapped,
        &ShaderOptions {
            atomics: AtomicMode::CompareSwap,
        },
    );
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors[0].contains("'means' in the WGSL but 'rotations' in the table"));
}
