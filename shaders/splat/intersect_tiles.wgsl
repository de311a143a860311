// Tile binning, two passes over the splats in depth order (after the depth
// sort): `count` writes each splat's number of covered tiles; an exclusive
// prefix sum turns those into write offsets; `write` emits one (tile id,
// splat id) pair per covered tile at those offsets. Both passes read the same
// stored rectangle (computed once in project.wgsl), so they agree bit for bit.
// Intersections come out grouped by splat in depth order; a stable sort by
// tile id then yields per-tile lists in front-to-back order (equivalent to
// sorting on the 64-bit key tile·2³² + depth).
#import common/dispatch
#import splat/types
#import splat/projection

@group(0) @binding(0) var<uniform> u: RasterUniforms;
@group(0) @binding(1) var<storage, read> tile_rects: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> depth_order: array<u32>;
@group(0) @binding(3) var<storage, read> offsets: array<u32>;
@group(0) @binding(4) var<storage, read_write> counts: array<u32>;
@group(0) @binding(5) var<storage, read_write> tile_ids: array<u32>;
@group(0) @binding(6) var<storage, read_write> splat_ids: array<u32>;

// counts[i] = tiles covered by the i-th nearest splat; counts[N] = 0 so the
// exclusive scan's last entry is the total.
@compute @workgroup_size(256)
fn count(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let i = flat_thread_index(global_id, num_workgroups, 256u);
    if i > u.splat_count {
        return;
    }
    if i == u.splat_count {
        counts[i] = 0u;
        return;
    }
    counts[i] = tile_rect_area(tile_rects[depth_order[i]]);
}

@compute @workgroup_size(256)
fn write(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let i = flat_thread_index(global_id, num_workgroups, 256u);
    if i >= u.splat_count {
        return;
    }
    let splat = depth_order[i];
    let rect = tile_rects[splat];
    var slot = offsets[i];
    for (var ty = rect.y; ty < rect.w; ty++) {
        for (var tx = rect.x; tx < rect.z; tx++) {
            if slot < u.intersection_count {
                tile_ids[slot] = ty * u.tile_count.x + tx;
                splat_ids[slot] = splat;
            }
            slot++;
        }
    }
}
