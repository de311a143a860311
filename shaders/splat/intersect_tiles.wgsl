// Tile binning, two passes over the splats in depth order (after the depth
// sort): `count` writes each splat's number of reached tiles; an exclusive
// prefix sum turns those into write offsets; `write` emits one (tile id,
// splat id) pair per reached tile at those offsets. A tile is reached when
// it lies in the splat's stored rectangle (computed once in project.wgsl)
// and the splat's ellipse reaches its pixels (ellipse_reaches_tile in
// splat/projection.wgsl): the rectangle is the ellipse's axis-aligned box,
// which for a thin or tilted splat holds many tiles the ellipse misses.
// Intersections come out grouped by splat in depth order; a stable sort by
// tile id then yields per-tile lists in front-to-back order (equivalent to
// sorting on the 64-bit key tile·2³² + depth).
//
// Both passes run the same test on the same stored values, but they are two
// entry points, which a driver may compile with different float
// contractions. So `count` tests with twice `write`'s rounding margin
// (COUNT_MARGIN, WRITE_MARGIN): far apart next to f32 rounding, so every
// tile `write` finds was counted, and `write` never writes past its
// splat's slots. A tile only `count` takes lies on the margin, where no
// pixel reaches 1/255; `write` fills such unused slots with tiles of the
// rectangle that it rejected, which blending skips pixel by pixel as it
// skipped every tile of the rectangle before this test. So the lists blend
// the same either way.
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
@group(0) @binding(7) var<storage, read> projected: array<ProjectedSplat>;

// The rounding margins of the two passes (module comment).
const COUNT_MARGIN: f32 = 2e-4;
const WRITE_MARGIN: f32 = 1e-4;

// Whether splat `splat` reaches tile (tx, ty) of its rectangle.
fn reaches(splat: u32, tx: u32, ty: u32, margin: f32) -> bool {
    let s = projected[splat];
    return ellipse_reaches_tile(u, s.mean_depth_opacity.xy, s.conic.xyz, s.mean_depth_opacity.w, vec2<u32>(tx, ty), margin);
}

// counts[i] = tiles reached by the i-th nearest splat; counts[N] = 0 so the
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
    let splat = depth_order[i];
    let rect = tile_rects[splat];
    var reached = 0u;
    for (var ty = rect.y; ty < rect.w; ty++) {
        for (var tx = rect.x; tx < rect.z; tx++) {
            if reaches(splat, tx, ty, COUNT_MARGIN) {
                reached++;
            }
        }
    }
    counts[i] = reached;
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
    // This splat's slots end where the next one's begin (offsets[N] is the
    // total).
    let end = min(offsets[i + 1u], u.intersection_count);
    for (var ty = rect.y; ty < rect.w && slot < end; ty++) {
        for (var tx = rect.x; tx < rect.z && slot < end; tx++) {
            if reaches(splat, tx, ty, WRITE_MARGIN) {
                tile_ids[slot] = ty * u.tile_count.x + tx;
                splat_ids[slot] = splat;
                slot++;
            }
        }
    }
    // Slots this pass's test left unused (module comment).
    for (var ty = rect.y; ty < rect.w && slot < end; ty++) {
        for (var tx = rect.x; tx < rect.z && slot < end; tx++) {
            if !reaches(splat, tx, ty, WRITE_MARGIN) {
                tile_ids[slot] = ty * u.tile_count.x + tx;
                splat_ids[slot] = splat;
                slot++;
            }
        }
    }
}
