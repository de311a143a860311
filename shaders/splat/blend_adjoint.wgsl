// Backward of blend.wgsl: one workgroup per tile, 64 threads each owning a
// 2×2 pixel block,
// replaying the tile's list FRONT TO BACK exactly as the forward walked it
// (same staging, same alpha arithmetic, stopping at the forward's stored
// last index), so the transmittance T_i before each splat is recomputed, not
// recovered by chained divisions by (1 − alpha).
//
// With g = dL/d(R, G, B, A) of the pixel, c̃_i = (colour_i, 1) (alpha output
// A = 1 − T_N = Σ alpha_i T_i is blended like a fourth channel with colour 1
// and background 0) and F = the forward output (C + T_N·bg, A):
//   dL/dcolour_i = g.rgb · alpha_i T_i
//   dL/dalpha_i  = g · (c̃_i T_i − S_i / (1 − alpha_i)),
//   S_i = F − Σ_{j ≤ i} c̃_j alpha_j T_j   (what lies behind splat i).
// The single division is by 1 − alpha_i ≥ 0.01 and is never chained: the
// absolute error stays ≤ 100·ε·|F|. Where the 0.99 clamp is active alpha does
// not depend on opacity or position: those gradients are zero there.
// alpha = o·exp(−σ), σ = ½(a dx² + c dy²) + b dx dy, d = mean − pixel centre:
//   dL/do = dL/dalpha · exp(−σ),  dL/dσ = −dL/dalpha · alpha,
//   dL/d(a, b, c) = dL/dσ · (½dx², dx dy, ½dy²),
//   dL/dmean = dL/dσ · (a dx + b dy, b dx + c dy).
//
// Per-splat sums over the tile's pixels are reduced first in registers (each
// thread owns a 2×2 pixel block, 64 threads per tile), then in workgroup
// memory (compare-and-swap on u32 bits: portable, wgpu exposes no shared-
// memory float atomics), then flushed with ONE global atomic add per splat
// and component per batch of 256 splats.
// Output grad_2d, 9 floats per splat: mean x, mean y, conic a, b, c,
// opacity, red, green, blue.
#import splat/types

@group(0) @binding(0) var<uniform> u: RasterUniforms;
@group(0) @binding(1) var<storage, read> projected: array<ProjectedSplat>;
@group(0) @binding(2) var<storage, read> splat_ids: array<u32>;
@group(0) @binding(3) var<storage, read> ranges: array<vec2<u32>>;
@group(0) @binding(4) var<storage, read> image: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> last_index: array<u32>;
@group(0) @binding(6) var<storage, read> grad_image: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> grad_2d: array<AtomicF32>;
#atomic_f32_ops grad_2d

const GRAD_2D_STRIDE: u32 = 9u;
// Threads per tile (8×8), each owning a 2×2 block of pixels.
const THREADS: u32 = 64u;
const BLOCK: u32 = 4u;

var<workgroup> batch_mean_opacity: array<vec4<f32>, TILE_PIXELS>;
var<workgroup> batch_conic: array<vec4<f32>, TILE_PIXELS>;
var<workgroup> batch_color: array<vec4<f32>, TILE_PIXELS>;
var<workgroup> batch_ids: array<u32, TILE_PIXELS>;
var<workgroup> batch_grads: array<atomic<u32>, 2304>; // TILE_PIXELS * GRAD_2D_STRIDE, component-major
var<workgroup> tile_range: vec2<u32>;
var<workgroup> max_last: atomic<u32>;
var<workgroup> walk_length: u32;

fn batch_grad_add(i: u32, value: f32) {
    var old = atomicLoad(&batch_grads[i]);
    loop {
        let result = atomicCompareExchangeWeak(&batch_grads[i], old, bitcast<u32>(bitcast<f32>(old) + value));
        if result.exchanged {
            break;
        }
        old = result.old_value;
    }
}

@compute @workgroup_size(8, 8)
fn main(@builtin(workgroup_id) tile: vec3<u32>, @builtin(local_invocation_id) local: vec3<u32>, @builtin(local_invocation_index) local_index: u32) {
    if local_index == 0u {
        tile_range = ranges[tile.y * u.tile_count.x + tile.x];
        atomicStore(&max_last, 0u);
    }
    for (var c = local_index; c < GRAD_2D_STRIDE * TILE_PIXELS; c += THREADS) {
        atomicStore(&batch_grads[c], 0u);
    }
    // Per-pixel state of this thread's 2×2 block.
    var centre: array<vec2<f32>, 4>;
    var last: array<u32, 4>;
    var g: array<vec4<f32>, 4>;
    var final_value: array<vec4<f32>, 4>;
    var transmittance: array<f32, 4>;
    var accumulated: array<vec4<f32>, 4>;
    var my_last = 0u;
    for (var q = 0u; q < BLOCK; q++) {
        let pixel = tile.xy * TILE_SIZE + local.xy * 2u + vec2<u32>(q & 1u, q >> 1u);
        centre[q] = vec2<f32>(pixel) + 0.5;
        transmittance[q] = 1.0;
        accumulated[q] = vec4<f32>(0.0);
        last[q] = 0u;
        g[q] = vec4<f32>(0.0);
        final_value[q] = vec4<f32>(0.0);
        if pixel.x < u.image_size.x && pixel.y < u.image_size.y {
            let p = pixel.y * u.image_size.x + pixel.x;
            last[q] = last_index[p];
            g[q] = grad_image[p];
            final_value[q] = image[p];
        }
        my_last = max(my_last, last[q]);
    }
    workgroupBarrier();
    atomicMax(&max_last, my_last);
    workgroupBarrier();
    if local_index == 0u {
        walk_length = atomicLoad(&max_last);
    }
    let range = workgroupUniformLoad(&tile_range);
    // end < start (corrupt) walks nothing: `total` must not wrap. A tile
    // only static splats reach (SKIPPED_TILE, start == end) walks nothing.
    let total = min(select(0u, range.y - range.x, range.y > range.x), workgroupUniformLoad(&walk_length));

    for (var batch_start = 0u; batch_start < total; batch_start += TILE_PIXELS) {
        for (var slot = local_index; slot < TILE_PIXELS; slot += THREADS) {
            if batch_start + slot < total {
                let id = splat_ids[range.x + batch_start + slot];
                let s = projected[id];
                batch_ids[slot] = id;
                batch_mean_opacity[slot] = vec4<f32>(s.mean_depth_opacity.xy, 0.0, s.mean_depth_opacity.w);
                batch_conic[slot] = s.conic;
                batch_color[slot] = s.color;
            }
        }
        workgroupBarrier();
        let batch_len = min(TILE_PIXELS, total - batch_start);
        let my_len = min(batch_len, max(my_last, batch_start) - batch_start);
        for (var j = 0u; j < my_len; j++) {
            let mo = batch_mean_opacity[j];
            let conic = batch_conic[j].xyz;
            let color = vec4<f32>(batch_color[j].xyz, 1.0);
            let list_index = batch_start + j;
            var d_mean = vec2<f32>(0.0);
            var d_conic = vec3<f32>(0.0);
            var d_opacity = 0.0;
            var d_color = vec3<f32>(0.0);
            var touched = false;
            for (var q = 0u; q < BLOCK; q++) {
                if list_index >= last[q] {
                    continue;
                }
                let d = mo.xy - centre[q];
                let power = conic_power(conic, d);
                let falloff = exp(-power);
                let raw_alpha = mo.w * falloff;
                let alpha = min(ALPHA_MAX, raw_alpha);
                if power < 0.0 || alpha < ALPHA_MIN {
                    continue;
                }
                touched = true;
                let t = transmittance[q];
                let weight = alpha * t;
                accumulated[q] += color * weight;
                let behind = (final_value[q] - accumulated[q]) / (1.0 - alpha);
                let d_alpha = dot(g[q], color * t - behind);
                transmittance[q] = t * (1.0 - alpha);
                d_color += g[q].xyz * weight;
                if raw_alpha < ALPHA_MAX {
                    let d_power = -d_alpha * alpha;
                    d_mean += d_power * vec2<f32>(conic.x * d.x + conic.y * d.y, conic.y * d.x + conic.z * d.y);
                    d_conic += d_power * vec3<f32>(0.5 * d.x * d.x, d.x * d.y, 0.5 * d.y * d.y);
                    d_opacity += d_alpha * falloff;
                }
            }
            if touched {
                let v = array<f32, 9>(d_mean.x, d_mean.y, d_conic.x, d_conic.y, d_conic.z, d_opacity, d_color.x, d_color.y, d_color.z);
                for (var c = 0u; c < GRAD_2D_STRIDE; c++) {
                    if v[c] != 0.0 {
                        batch_grad_add(c * TILE_PIXELS + j, v[c]);
                    }
                }
            }
        }
        workgroupBarrier();
        for (var slot = local_index; slot < batch_len; slot += THREADS) {
            let id = batch_ids[slot];
            for (var c = 0u; c < GRAD_2D_STRIDE; c++) {
                let value = bitcast<f32>(atomicLoad(&batch_grads[c * TILE_PIXELS + slot]));
                if value != 0.0 {
                    grad_2d_atomic_add(GRAD_2D_STRIDE * id + c, value);
                }
                atomicStore(&batch_grads[c * TILE_PIXELS + slot], 0u);
            }
        }
        workgroupBarrier();
    }
}
