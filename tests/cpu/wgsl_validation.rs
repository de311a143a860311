//! Every WGSL file under shaders/ parses and validates with naga, composed
//! with each scatter-add variant. Needs no device.

use physfit::gpu::shader::{parse_and_validate, shader_names, ShaderOptions};
use physfit::gpu::AtomicMode;

#[test]
fn every_shader_validates_in_both_atomic_modes() {
    let names: Vec<_> = shader_names().collect();
    for expected in ["mpm/p2g", "loss/color_correction"] {
        assert!(
            names.contains(&expected),
            "embedded shader table is incomplete (no {expected}): {names:?}"
        );
    }
    let mut failures = Vec::new();
    for name in &names {
        for atomics in AtomicMode::ALL {
            // The native variant's own file declares atomic<f32>: it is only
            // ever composed in native mode.
            if *name == AtomicMode::Native.module() && atomics != AtomicMode::Native {
                continue;
            }
            if let Err(e) = parse_and_validate(name, &ShaderOptions { atomics }) {
                failures.push(format!("[{atomics:?}] {e}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn cas_variant_needs_no_float_atomic_capability() {
    // The CAS variant must validate without SHADER_FLOAT32_ATOMIC, and the
    // native one must not: otherwise one of them is not what it claims.
    let cas = ShaderOptions {
        atomics: AtomicMode::CompareSwap,
    };
    assert!(parse_and_validate("mpm/p2g", &cas).is_ok());
    let source = physfit::gpu::shader::compose(
        "mpm/p2g",
        &ShaderOptions {
            atomics: AtomicMode::Native,
        },
    )
    .unwrap();
    let module = naga::front::wgsl::parse_str(&source).unwrap();
    let without = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::default(),
    )
    .validate(&module);
    assert!(
        without.is_err(),
        "native variant validated without the float-atomic capability"
    );
}

#[test]
fn unknown_import_is_a_typed_error() {
    let err = physfit::gpu::shader::compose(
        "no/such_shader",
        &ShaderOptions {
            atomics: AtomicMode::CompareSwap,
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("no/such_shader"), "{err}");
}
