// f32 scatter-add with hardware float atomics (adapter feature
// SHADER_FLOAT32_ATOMIC). Same interface as atomic_f32_cas.wgsl; kernels write
// `#import atomic_f32` and the runtime picks the variant.
//
// WGSL (naga) cannot pass storage pointers to functions, so the accessor
// functions are generated per buffer: a line `#atomic_f32_ops NAME` in a
// kernel emits NAME_atomic_add(i, v), NAME_atomic_load(i), NAME_atomic_store(i, v)
// for a `var<storage, read_write> NAME: array<AtomicF32>` (see src/gpu/shader.rs).

alias AtomicF32 = atomic<f32>;
