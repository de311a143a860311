//! Scatter-add on the present adapter, both f32 atomic variants, exact sums
//! (DESIGN.md § Verification 4: atomic-heavy kernels are tested on the
//! software driver itself).

mod common;

use physfit::gpu::scatter_add::{ScatterAdd, ScatterAddBuffers, ScatterAddUniforms};
use physfit::gpu::{encoder, AtomicMode, GpuOptions};

fn run(force_cas: bool) -> (AtomicMode, Vec<f32>, Vec<f32>) {
    let ctx = common::gpu_with(GpuOptions {
        force_cas_atomics: force_cas,
    });
    // Quarter-integers sum exactly in f32 in any order (all partial sums < 2^22),
    // so the GPU result must equal the CPU one bit for bit.
    let count = 200_003usize;
    let slots = 37usize;
    let values: Vec<f32> = (0..count)
        .map(|i| ((i * 7919) % 13) as f32 * 0.25 - 1.0)
        .collect();
    let targets: Vec<u32> = (0..count).map(|i| ((i * 31) % slots) as u32).collect();
    let mut expected = vec![0.0f32; slots];
    for (v, t) in values.iter().zip(&targets) {
        expected[*t as usize] += v;
    }
    let kernel = ScatterAdd::new(&ctx).unwrap();
    let uniforms = ctx
        .uniform_buffer(
            "scatter uniforms",
            &ScatterAddUniforms {
                count: count as u32,
                _pad: [0; 3],
            },
        )
        .unwrap();
    let values_buf = ctx.storage_from_slice("scatter values", &values).unwrap();
    let targets_buf = ctx.storage_from_slice("scatter targets", &targets).unwrap();
    let sums = ctx.storage_zeroed::<f32>("scatter sums", slots).unwrap();
    let mut enc = encoder(&ctx, "scatter test");
    kernel.dispatch(
        &ctx,
        &mut enc,
        &ScatterAddBuffers {
            uniforms: &uniforms,
            values: &values_buf,
            targets: &targets_buf,
            sums: &sums,
        },
        count as u32,
    );
    ctx.queue.submit([enc.finish()]);
    let got: Vec<f32> = ctx.read_buffer(&sums).unwrap();
    (ctx.shader_options.atomics, got, expected)
}

#[test]
fn compare_swap_scatter_add_is_exact() {
    let (mode, got, expected) = run(true);
    assert_eq!(mode, AtomicMode::CompareSwap);
    assert_eq!(got, expected);
}

#[test]
fn native_float_scatter_add_is_exact() {
    let ctx = common::gpu();
    if !ctx.caps.float_atomics {
        // lavapipe and every desktop Vulkan driver we target have float atomics;
        // only then is the native variant testable.
        assert!(
            !ctx.adapter_info.name.contains("llvmpipe"),
            "lavapipe should report SHADER_FLOAT32_ATOMIC"
        );
        eprintln!("adapter has no float atomics: native variant not testable here");
        return;
    }
    drop(ctx);
    let (mode, got, expected) = run(false);
    assert_eq!(mode, AtomicMode::Native);
    assert_eq!(got, expected);
}

#[test]
fn oversized_storage_buffer_names_the_limit() {
    let ctx = common::gpu();
    let too_big = ctx.limits.max_storage_buffer_binding_size + 4;
    let err = ctx
        .create_buffer("huge particles", too_big, physfit::gpu::STORAGE)
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("huge particles") && msg.contains("max_storage_buffer_binding_size"),
        "{msg}"
    );
}
