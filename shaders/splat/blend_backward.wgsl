// Backward of blend.wgsl: one workgroup per tile, one thread per pixel,
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
// Per-splat sums over the tile's pixels are reduced in workgroup memory
// (compare-and-swap on u32 bits: portable, and within one workgroup), then
// flushed with ONE global atomic add per splat and component per batch.
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

var<workgroup> batch_mean_opacity: array<vec4<f32>, TILE_PIXELS>;
var<workgroup> batch_conic: array<vec4<f32>, TILE_PIXELS>;
var<workgroup> batch_color: array<vec4<f32>, TILE_PIXELS>;
var<workgroup> batch_ids: array<u32, TILE_PIXELS>;
var<workgroup> batch_grads: array<atomic<u32>, 2304>; // TILE_PIXELS * GRAD_2D_STRIDE
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

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) tile: vec3<u32>, @builtin(local_invocation_id) local: vec3<u32>, @builtin(local_invocation_index) local_index: u32) {
    let pixel = tile.xy * TILE_SIZE + local.xy;
    let inside = pixel.x < u.image_size.x && pixel.y < u.image_size.y;
    let centre = vec2<f32>(pixel) + 0.5;
    let p = pixel.y * u.image_size.x + pixel.x;
    if local_index == 0u {
        tile_range = ranges[tile.y * u.tile_count.x + tile.x];
        atomicStore(&max_last, 0u);
    }
    for (var c = 0u; c < GRAD_2D_STRIDE; c++) {
        atomicStore(&batch_grads[c * TILE_PIXELS + local_index], 0u);
    }
    var last = 0u;
    var g = vec4<f32>(0.0);
    var final_value = vec4<f32>(0.0);
    if inside {
        last = last_index[p];
        g = grad_image[p];
        final_value = image[p];
    }
    workgroupBarrier();
    atomicMax(&max_last, last);
    workgroupBarrier();
    if local_index == 0u {
        walk_length = atomicLoad(&max_last);
    }
    let range = workgroupUniformLoad(&tile_range);
    let total = min(range.y - range.x, workgroupUniformLoad(&walk_length));

    var transmittance = 1.0;
    var accumulated = vec4<f32>(0.0);
    for (var batch_start = 0u; batch_start < total; batch_start += TILE_PIXELS) {
        let slot = batch_start + local_index;
        if slot < total {
            let id = splat_ids[range.x + slot];
            let s = projected[id];
            batch_ids[local_index] = id;
            batch_mean_opacity[local_index] = vec4<f32>(s.mean_depth_opacity.xy, 0.0, s.mean_depth_opacity.w);
            batch_conic[local_index] = s.conic;
            batch_color[local_index] = s.color;
        }
        workgroupBarrier();
        let batch_len = min(TILE_PIXELS, total - batch_start);
        let my_len = min(batch_len, max(last, batch_start) - batch_start);
        for (var j = 0u; j < my_len; j++) {
            let mo = batch_mean_opacity[j];
            let conic = batch_conic[j].xyz;
            let d = mo.xy - centre;
            let power = conic_power(conic, d);
            let falloff = exp(-power);
            let raw_alpha = mo.w * falloff;
            let alpha = min(ALPHA_MAX, raw_alpha);
            if power < 0.0 || alpha < ALPHA_MIN {
                continue;
            }
            let color = vec4<f32>(batch_color[j].xyz, 1.0);
            let weight = alpha * transmittance;
            accumulated += color * weight;
            let behind = (final_value - accumulated) / (1.0 - alpha);
            let d_alpha = dot(g, color * transmittance - behind);
            transmittance *= 1.0 - alpha;
            let d_color = g.xyz * weight;
            let base = j;
            if d_color.x != 0.0 { batch_grad_add(6u * TILE_PIXELS + base, d_color.x); }
            if d_color.y != 0.0 { batch_grad_add(7u * TILE_PIXELS + base, d_color.y); }
            if d_color.z != 0.0 { batch_grad_add(8u * TILE_PIXELS + base, d_color.z); }
            if raw_alpha < ALPHA_MAX && d_alpha != 0.0 {
                let d_power = -d_alpha * alpha;
                let d_mean = d_power * vec2<f32>(conic.x * d.x + conic.y * d.y, conic.y * d.x + conic.z * d.y);
                batch_grad_add(0u * TILE_PIXELS + base, d_mean.x);
                batch_grad_add(1u * TILE_PIXELS + base, d_mean.y);
                batch_grad_add(2u * TILE_PIXELS + base, d_power * 0.5 * d.x * d.x);
                batch_grad_add(3u * TILE_PIXELS + base, d_power * d.x * d.y);
                batch_grad_add(4u * TILE_PIXELS + base, d_power * 0.5 * d.y * d.y);
                batch_grad_add(5u * TILE_PIXELS + base, d_alpha * falloff);
            }
        }
        workgroupBarrier();
        if local_index < batch_len {
            let id = batch_ids[local_index];
            for (var c = 0u; c < GRAD_2D_STRIDE; c++) {
                let v = bitcast<f32>(atomicLoad(&batch_grads[c * TILE_PIXELS + local_index]));
                if v != 0.0 {
                    grad_2d_atomic_add(GRAD_2D_STRIDE * id + c, v);
                }
                atomicStore(&batch_grads[c * TILE_PIXELS + local_index], 0u);
            }
        }
        workgroupBarrier();
    }
}
