// Colliders of the grid update and the adjoint of their contact rules
// (src/mpm/collider.rs fixes the rules and the record layout; docs/design.md
// § MPM, Colliders). Shared by grid_update and grid_update_adjoint, which
// loop over the collider buffer in order: a collider acts on the velocity
// the previous ones left, at every node inside or on it.

struct Collider {
    // COLLIDER_PLANE or COLLIDER_BOX.
    kind: u32,
    // CONTACT_STICKY, CONTACT_SLIP or CONTACT_FRICTION.
    contact: u32,
    // μ of the friction rule.
    friction: f32,
    _pad: u32,
    // Plane: a point of it; box: the lower corner (xyz).
    a: vec4<f32>,
    // Plane: the unit outward normal; box: the upper corner (xyz).
    b: vec4<f32>,
}

const COLLIDER_PLANE: u32 = 0u;
const COLLIDER_BOX: u32 = 1u;
const CONTACT_STICKY: u32 = 0u;
const CONTACT_SLIP: u32 = 1u;
const CONTACT_FRICTION: u32 = 2u;

// True when the node at x (normalised units) is inside or on the collider.
fn collider_contains(c: Collider, x: vec3<f32>) -> bool {
    if c.kind == COLLIDER_PLANE {
        return dot(x - c.a.xyz, c.b.xyz) <= 0.0;
    }
    return all(x >= c.a.xyz) && all(x <= c.b.xyz);
}

// Unit outward normal at a node inside or on the collider: the plane's, or
// that of the box face nearest x (ties: the first of −x, +x, −y, +y, −z, +z).
fn collider_normal(c: Collider, x: vec3<f32>) -> vec3<f32> {
    if c.kind == COLLIDER_PLANE {
        return c.b.xyz;
    }
    let below = x - c.a.xyz;
    let above = c.b.xyz - x;
    var depth = below.x;
    var n = vec3<f32>(-1.0, 0.0, 0.0);
    if above.x < depth {
        depth = above.x;
        n = vec3<f32>(1.0, 0.0, 0.0);
    }
    if below.y < depth {
        depth = below.y;
        n = vec3<f32>(0.0, -1.0, 0.0);
    }
    if above.y < depth {
        depth = above.y;
        n = vec3<f32>(0.0, 1.0, 0.0);
    }
    if below.z < depth {
        depth = below.z;
        n = vec3<f32>(0.0, 0.0, -1.0);
    }
    if above.z < depth {
        n = vec3<f32>(0.0, 0.0, 1.0);
    }
    return n;
}

// The contact rule on velocity v at a node inside the collider, normal n:
// sticky → 0; slip and friction act only when v_n = v·n < 0 (into the
// collider): slip → v_t = v − v_n n; friction → v_t·(|v_t| + μ v_n)/|v_t|
// when |v_t| + μ v_n > 0, else 0.
fn contact_velocity(c: Collider, n: vec3<f32>, v: vec3<f32>) -> vec3<f32> {
    if c.contact == CONTACT_STICKY {
        return vec3<f32>(0.0);
    }
    let vn = dot(v, n);
    if vn >= 0.0 {
        return v;
    }
    let vt = v - vn * n;
    if c.contact == CONTACT_SLIP {
        return vt;
    }
    let s = length(vt);
    let slide = s + c.friction * vn;
    if slide <= 0.0 {
        return vec3<f32>(0.0);
    }
    return vt * (slide / s);
}

// Reverse mode of contact_velocity at the same (v, n): given g = ∂L/∂v'
// returns (∂L/∂v, ∂L/∂μ). With P = I − n nᵀ and, sliding, t = v_t/|v_t|:
// slip: Pg; friction: Pg + μ n (t·g) + (μ v_n/|v_t|)(Pg − t (t·g)), and
// ∂L/∂μ = v_n (t·g); zeroed velocities pass nothing back.
fn contact_adjoint(c: Collider, n: vec3<f32>, v: vec3<f32>, g: vec3<f32>) -> vec4<f32> {
    if c.contact == CONTACT_STICKY {
        return vec4<f32>(0.0);
    }
    let vn = dot(v, n);
    if vn >= 0.0 {
        return vec4<f32>(g, 0.0);
    }
    let pg = g - dot(g, n) * n;
    if c.contact == CONTACT_SLIP {
        return vec4<f32>(pg, 0.0);
    }
    let vt = v - vn * n;
    let s = length(vt);
    if s + c.friction * vn <= 0.0 {
        return vec4<f32>(0.0);
    }
    let t = vt / s;
    let tg = dot(t, g);
    let back = pg + c.friction * tg * n + (c.friction * vn / s) * (pg - tg * t);
    return vec4<f32>(back, vn * tg);
}
