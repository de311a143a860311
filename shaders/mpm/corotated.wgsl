// Fixed corotated first Piola–Kirchhoff stress and its reverse-mode
// derivative (docs/design.md § MPM): P = 2μ(F − R) + λ(J − 1)·J·F⁻ᵀ, written as
// P = 2μ(F − R) + λ(J − 1)·cof(F) since J·F⁻ᵀ = cof(F): no inverse, so the
// stress and its adjoint stay finite at J → 0.
#import common/svd3

// cof(F) with F's columns c₀, c₁, c₂: columns (c₁×c₂, c₂×c₀, c₀×c₁).
fn cofactor(f: mat3x3<f32>) -> mat3x3<f32> {
    return mat3x3<f32>(cross(f[1], f[2]), cross(f[2], f[0]), cross(f[0], f[1]));
}

// ∂⟨G, cof(F)⟩/∂F, column by column.
fn cofactor_adjoint(f: mat3x3<f32>, g: mat3x3<f32>) -> mat3x3<f32> {
    return mat3x3<f32>(
        cross(g[1], f[2]) + cross(f[1], g[2]),
        cross(g[2], f[0]) + cross(f[2], g[0]),
        cross(g[0], f[1]) + cross(f[0], g[1]),
    );
}

fn frobenius(a: mat3x3<f32>, b: mat3x3<f32>) -> f32 {
    return dot(a[0], b[0]) + dot(a[1], b[1]) + dot(a[2], b[2]);
}

// Stress per unit Young's modulus, P/E (P is linear in E for fixed ν),
// given the SVD of F (computed once per particle and kernel).
fn corotated_stress_per_youngs(f: mat3x3<f32>, svd: Svd3, mu_hat: f32, lambda_hat: f32) -> mat3x3<f32> {
    let r = polar_rotation(svd);
    let j = determinant(f);
    return 2.0 * mu_hat * (f - r) + lambda_hat * (j - 1.0) * cofactor(f);
}

// ∂L/∂F given G = ∂L/∂P, for P = E·P̂(F).
fn corotated_stress_adjoint(f: mat3x3<f32>, svd: Svd3, youngs: f32, mu_hat: f32, lambda_hat: f32, g: mat3x3<f32>) -> mat3x3<f32> {
    let mu = youngs * mu_hat;
    let lambda = youngs * lambda_hat;
    let r = polar_rotation(svd);
    let j = determinant(f);
    let cof = cofactor(f);
    // 2μ(F − R): direct term and the rotation's derivative (G_R = −2μ·G).
    var gf = 2.0 * mu * g + polar_rotation_adjoint(svd, r, -2.0 * mu * g);
    // λ(J − 1)·cof(F): through J (dJ = ⟨cof F, dF⟩) and through cof(F).
    gf += lambda * frobenius(g, cof) * cof;
    gf += cofactor_adjoint(f, lambda * (j - 1.0) * g);
    return gf;
}

// ∂L/∂ν given G = ∂L/∂P, for P = E·(2μ̂(F − R) + λ̂(J − 1)·cof(F)) with the
// particle's `lame` = (μ̂, λ̂, dμ̂/dν, dλ̂/dν) (src/mpm/lame.rs):
// E·(dμ̂/dν·⟨G, 2(F − R)⟩ + dλ̂/dν·(J − 1)·⟨G, cof F⟩).
fn corotated_poisson_adjoint(f: mat3x3<f32>, svd: Svd3, youngs: f32, lame: vec4<f32>, g: mat3x3<f32>) -> f32 {
    let r = polar_rotation(svd);
    let j = determinant(f);
    let shear = 2.0 * frobenius(g, f - r);
    let volume = (j - 1.0) * frobenius(g, cofactor(f));
    return youngs * (lame.z * shear + lame.w * volume);
}
