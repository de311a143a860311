// Forward blending, one workgroup per 16×16 tile, one thread per pixel.
// Splats of the tile's list are staged in workgroup memory 256 at a time and
// composited front to back (classic 3DGS / gsplat):
//   alpha = min(0.99, opacity · exp(−½ dᵀ conic d)), skipped when < 1/255;
//   stop (excluding the splat) once T·(1 − alpha) ≤ 1e-4;
//   C += colour · alpha · T;  T ← T·(1 − alpha).
// Output per pixel: (C + T·background, 1 − T) in linear RGB, and the number
// of list entries walked up to the last one composited (the backward replay
// stops there).
#import splat/types

@group(0) @binding(0) var<uniform> u: RasterUniforms;
@group(0) @binding(1) var<storage, read> projected: array<ProjectedSplat>;
@group(0) @binding(2) var<storage, read> splat_ids: array<u32>;
@group(0) @binding(3) var<storage, read> ranges: array<vec2<u32>>;
@group(0) @binding(4) var<storage, read_write> image: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> last_index: array<u32>;

var<workgroup> batch_mean_opacity: array<vec4<f32>, TILE_PIXELS>;
var<workgroup> batch_conic: array<vec4<f32>, TILE_PIXELS>;
var<workgroup> batch_color: array<vec4<f32>, TILE_PIXELS>;
var<workgroup> tile_range: vec2<u32>;
var<workgroup> done_count: atomic<u32>;
var<workgroup> done_snapshot: u32;

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) tile: vec3<u32>, @builtin(local_invocation_id) local: vec3<u32>, @builtin(local_invocation_index) local_index: u32) {
    let pixel = tile.xy * TILE_SIZE + local.xy;
    let inside = pixel.x < u.image_size.x && pixel.y < u.image_size.y;
    let centre = vec2<f32>(pixel) + 0.5;
    if local_index == 0u {
        tile_range = ranges[tile.y * u.tile_count.x + tile.x];
        atomicStore(&done_count, 0u);
    }
    let range = workgroupUniformLoad(&tile_range);
    // A tile only static splats reach keeps the backdrop's pixels
    // (static_tiles.wgsl); its last_index is never read.
    if range.x == SKIPPED_TILE {
        return;
    }
    var done = !inside;
    if done {
        atomicAdd(&done_count, 1u);
    }
    var transmittance = 1.0;
    var color = vec3<f32>(0.0);
    var last = 0u;
    // An empty (or corrupt, end < start) range walks nothing: `total` must
    // not wrap, every loop has to end (src/gpu/kernel.rs).
    let total = select(0u, range.y - range.x, range.y > range.x);
    for (var batch_start = 0u; batch_start < total; batch_start += TILE_PIXELS) {
        workgroupBarrier();
        if local_index == 0u {
            done_snapshot = atomicLoad(&done_count);
        }
        if workgroupUniformLoad(&done_snapshot) == TILE_PIXELS {
            break;
        }
        let slot = batch_start + local_index;
        if slot < total {
            let s = projected[splat_ids[range.x + slot]];
            batch_mean_opacity[local_index] = vec4<f32>(s.mean_depth_opacity.xy, 0.0, s.mean_depth_opacity.w);
            batch_conic[local_index] = s.conic;
            batch_color[local_index] = s.color;
        }
        workgroupBarrier();
        let batch_len = min(TILE_PIXELS, total - batch_start);
        for (var j = 0u; j < batch_len && !done; j++) {
            let mo = batch_mean_opacity[j];
            let d = mo.xy - centre;
            let power = conic_power(batch_conic[j].xyz, d);
            let alpha = min(ALPHA_MAX, mo.w * exp(-power));
            if power < 0.0 || alpha < ALPHA_MIN {
                continue;
            }
            let next_t = transmittance * (1.0 - alpha);
            if next_t <= TRANSMITTANCE_MIN {
                done = true;
                atomicAdd(&done_count, 1u);
                break;
            }
            color += batch_color[j].xyz * (alpha * transmittance);
            transmittance = next_t;
            last = batch_start + j + 1u;
        }
    }
    if inside {
        let p = pixel.y * u.image_size.x + pixel.x;
        image[p] = vec4<f32>(color + transmittance * u.background.xyz, 1.0 - transmittance);
        last_index[p] = last;
    }
}
