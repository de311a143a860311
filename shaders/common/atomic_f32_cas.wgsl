// f32 scatter-add by a compare-and-swap loop on atomic<u32> holding the f32's
// bits: works on every adapter. Same interface as atomic_f32_native.wgsl
// (accessors generated per buffer by `#atomic_f32_ops NAME`). The loop is
// lock-free: each failed exchange means another invocation succeeded.

alias AtomicF32 = atomic<u32>;
