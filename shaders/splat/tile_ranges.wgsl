// Per-tile [start, end) ranges in the tile-sorted intersection list: one
// thread per intersection marks where its tile's run begins and ends. Tiles
// with no intersection keep the zeroed range (0, 0).
#import common/dispatch
#import splat/types

@group(0) @binding(0) var<uniform> u: RasterUniforms;
@group(0) @binding(1) var<storage, read> tile_ids: array<u32>;
@group(0) @binding(2) var<storage, read_write> ranges: array<vec2<u32>>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let i = flat_thread_index(global_id, num_workgroups, 256u);
    let n = u.intersection_count;
    if i >= n {
        return;
    }
    let tile = tile_ids[i];
    if i == 0u || tile_ids[i - 1u] != tile {
        ranges[tile].x = i;
    }
    if i + 1u == n || tile_ids[i + 1u] != tile {
        ranges[tile].y = i + 1u;
    }
}
