// Flat thread index for 1-D work dispatched by `ComputeKernel::dispatch_threads`,
// which folds more than 65,535 workgroups into a 2-D grid of workgroups.
fn flat_thread_index(global_id: vec3<u32>, num_workgroups: vec3<u32>, workgroup_size_x: u32) -> u32 {
    return global_id.x + global_id.y * num_workgroups.x * workgroup_size_x;
}
