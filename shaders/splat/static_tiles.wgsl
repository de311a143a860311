// Tiles that only static splats reach (docs/design.md § Gaussian splatting,
// "Static tiles"): `mark` runs over the tile-sorted intersections and flags
// the tile of every intersection whose splat may move; `skip` runs over the
// tiles and sets the range of every unflagged tile to SKIPPED_TILE. Such a
// tile's list holds static splats only, so its pixels are those of the
// static splats' own render (the backdrop, copied into the image before
// blending): blend.wgsl leaves them as they are, and blend_adjoint.wgsl
// walks nothing there (the range is empty), since no gradient of a static
// splat is wanted.
#import common/dispatch
#import splat/types

@group(0) @binding(0) var<uniform> u: RasterUniforms;
@group(0) @binding(1) var<storage, read> tile_ids: array<u32>;
@group(0) @binding(2) var<storage, read> splat_ids: array<u32>;
@group(0) @binding(3) var<storage, read> moving: array<u32>;
@group(0) @binding(4) var<storage, read_write> tile_moving: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> ranges: array<vec2<u32>>;

// tile_moving[t] = 1 when a splat that may move intersects tile t (the
// buffer cleared first).
@compute @workgroup_size(256)
fn mark(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let i = flat_thread_index(global_id, num_workgroups, 256u);
    if i >= u.intersection_count {
        return;
    }
    if moving[splat_ids[i]] != 0u {
        atomicOr(&tile_moving[tile_ids[i]], 1u);
    }
}

@compute @workgroup_size(256)
fn skip(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let t = flat_thread_index(global_id, num_workgroups, 256u);
    if t >= u.tile_count.x * u.tile_count.y {
        return;
    }
    if atomicLoad(&tile_moving[t]) == 0u {
        ranges[t] = vec2<u32>(SKIPPED_TILE, SKIPPED_TILE);
    }
}
