//! Every `#[repr(C)]` struct uploaded to a WGSL struct against the layout
//! naga computes for that struct, field by field: the same members in the
//! same order, each at the same offset with the same size, and the same
//! total size. Padding is compared by the bytes it covers only (Rust may
//! declare `_pad: [u32; 2]` where WGSL has `_pad0`, `_pad1`). Needs no
//! device.

use naga::proc::Layouter;
use physfit::gpu::shader::compose;
use physfit::gpu::wgsl_layout::{FieldLayout, MirrorLayout, WgslMirror};
use physfit::gpu::{AtomicMode, ShaderOptions};

/// Every mirrored struct.
fn all_mirrors() -> Vec<MirrorLayout> {
    use physfit::{deform, fit, gpu, loss, mpm, splat};
    vec![
        deform::driver_gather::DriverGatherUniforms::mirror_layout(),
        deform::layout::DeformUniforms::mirror_layout(),
        deform::layout::GaussianRecord::mirror_layout(),
        fit::param_gather::GatherEntry::mirror_layout(),
        fit::param_gather::GatherUniforms::mirror_layout(),
        gpu::prefix_sum_blocks::PrefixSumUniforms::mirror_layout(),
        gpu::radix_sort_pass::RadixPassUniforms::mirror_layout(),
        loss::color_correction::ColorCorrectionUniforms::mirror_layout(),
        loss::uniforms::LossUniforms::mirror_layout(),
        loss::uniforms::ReduceUniforms::mirror_layout(),
        mpm::add_assign::AddAssignUniforms::mirror_layout(),
        mpm::external_force::ImpulseTable::mirror_layout(),
        mpm::uniforms::MpmUniforms::mirror_layout(),
        splat::uniforms::RasterUniforms::mirror_layout(),
    ]
}

/// The members of WGSL struct `name` in shader `shader`, as [`FieldLayout`]s,
/// and its size.
fn wgsl_layout(shader: &str, name: &str) -> Result<(Vec<FieldLayout>, usize), String> {
    let options = ShaderOptions {
        atomics: AtomicMode::CompareSwap,
    };
    let source = compose(shader, &options).map_err(|e| e.to_string())?;
    let module = naga::front::wgsl::parse_str(&source).map_err(|e| e.emit_to_string(&source))?;
    let mut layouter = Layouter::default();
    layouter
        .update(module.to_ctx())
        .map_err(|e| format!("{e:?}"))?;
    let (_, ty) = module
        .types
        .iter()
        .find(|(_, ty)| ty.name.as_deref() == Some(name))
        .ok_or_else(|| format!("no struct {name} in shaders/{shader}.wgsl (composed)"))?;
    let naga::TypeInner::Struct { members, span } = &ty.inner else {
        return Err(format!("{name} in shaders/{shader}.wgsl is not a struct"));
    };
    let fields = members
        .iter()
        .map(|m| FieldLayout {
            name: m.name.clone().map(|n| &*n.leak()).unwrap_or("<unnamed>"),
            offset: m.offset as usize,
            size: layouter[m.ty].size as usize,
        })
        .collect();
    Ok((fields, *span as usize))
}

/// Differences between a Rust struct's fields and the WGSL struct's
/// members, padding aside.
fn field_mismatches(rust: &[FieldLayout], wgsl: &[FieldLayout]) -> Vec<String> {
    let values = |fields: &[FieldLayout]| -> Vec<FieldLayout> {
        fields.iter().filter(|f| !f.is_padding()).copied().collect()
    };
    let (rust, wgsl) = (values(rust), values(wgsl));
    let mut errors = Vec::new();
    for i in 0..rust.len().max(wgsl.len()) {
        match (rust.get(i), wgsl.get(i)) {
            (Some(r), Some(w)) if r == w => {}
            (r, w) => errors.push(format!("field {i}: Rust {r:?}, WGSL {w:?}")),
        }
    }
    errors
}

#[test]
fn every_mirrored_struct_matches_its_wgsl_layout() {
    let mut errors = Vec::new();
    for mirror in all_mirrors() {
        for shader in mirror.shaders {
            let at = format!(
                "{} vs {} in shaders/{shader}.wgsl",
                mirror.rust_name, mirror.wgsl_name
            );
            let (fields, size) = match wgsl_layout(shader, mirror.wgsl_name) {
                Ok(layout) => layout,
                Err(e) => {
                    errors.push(format!("{at}: {e}"));
                    continue;
                }
            };
            if size != mirror.size {
                errors.push(format!(
                    "{at}: {} bytes in Rust, {size} in WGSL",
                    mirror.size
                ));
            }
            for e in field_mismatches(&mirror.fields, &fields) {
                errors.push(format!("{at}: {e}"));
            }
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn two_fields_of_one_type_swapped_are_caught() {
    // dx and inv_dx are both f32 at neighbouring offsets: a size check
    // passes them swapped, a field check does not.
    let mirror = physfit::mpm::uniforms::MpmUniforms::mirror_layout();
    let (wgsl, _) = wgsl_layout(mirror.shaders[0], mirror.wgsl_name).unwrap();
    assert!(field_mismatches(&mirror.fields, &wgsl).is_empty());
    let mut swapped = mirror.fields.clone();
    let dx = swapped.iter().position(|f| f.name == "dx").unwrap();
    let inv_dx = swapped.iter().position(|f| f.name == "inv_dx").unwrap();
    (swapped[dx].offset, swapped[inv_dx].offset) = (swapped[inv_dx].offset, swapped[dx].offset);
    swapped.sort_by_key(|f| f.offset);
    assert_eq!(field_mismatches(&swapped, &wgsl).len(), 2);
}
