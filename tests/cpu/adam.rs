//! Adam (src/solve/adam.rs): Adam's update against the
//! formula, the schedule, clipping, the projection, and that a proposal
//! leaves the state alone until accepted.

use physfit::solve::adam::{clip_norm, BETA1, BETA2, EPSILON};
use physfit::solve::{Adam, Schedule};

#[test]
fn first_step_moves_each_parameter_by_the_rate_against_its_gradient_sign() {
    let adam = Adam::new(3);
    let p = adam.propose(&[1.0, 2.0, 3.0], &[0.5, -4.0, 0.0], 0.1, &[]);
    // After one step m̂ = g, v̂ = g², so the step is rate·g/(|g| + ε).
    let expect = [
        1.0 - 0.1 * 0.5 / (0.5 + EPSILON),
        2.0 + 0.1 * 4.0 / (4.0 + EPSILON),
        3.0,
    ];
    for (a, b) in p.params.iter().zip(expect) {
        assert!((a - b).abs() < 1e-15, "{a} vs {b}");
    }
    assert_eq!(adam.t, 0, "propose must not change the state");
    let mut adam = adam;
    let moved = adam.accept(p);
    assert_eq!(adam.t, 1);
    assert_eq!(moved.len(), 3);
}

#[test]
fn second_step_follows_the_bias_corrected_moments() {
    let mut adam = Adam::new(1);
    let p1 = adam.accept(adam.propose(&[0.0], &[1.0], 0.01, &[]));
    let p2 = adam.propose(&p1, &[3.0], 0.01, &[]);
    let m = BETA1 * (1.0 - BETA1) * 1.0 + (1.0 - BETA1) * 3.0;
    let v = BETA2 * (1.0 - BETA2) * 1.0 + (1.0 - BETA2) * 9.0;
    let step = 0.01 * (m / (1.0 - BETA1 * BETA1)) / ((v / (1.0 - BETA2 * BETA2)).sqrt() + EPSILON);
    assert!((p2.params[0] - (p1[0] - step)).abs() < 1e-15);
    assert!((p2.state.m[0] - m).abs() < 1e-15 && (p2.state.v[0] - v).abs() < 1e-15);
}

#[test]
fn bounds_project_after_the_step() {
    let adam = Adam::new(2);
    let p = adam.propose(&[6.45, 3.02], &[-1.0, 1.0], 0.1, &[(3.0, 6.5); 2]);
    assert_eq!(p.params, vec![6.5, 3.0]);
}

#[test]
fn gradient_scale_is_the_root_of_the_corrected_second_moment() {
    let mut adam = Adam::new(2);
    assert_eq!(adam.gradient_scale(), vec![0.0, 0.0]);
    adam.accept(adam.propose(&[0.0, 0.0], &[2.0, -0.5], 0.1, &[]));
    let s = adam.gradient_scale();
    assert!(
        (s[0] - 2.0).abs() < 1e-12 && (s[1] - 0.5).abs() < 1e-12,
        "{s:?}"
    );
}

#[test]
fn schedule_warms_up_linearly_then_decays_exponentially_to_its_factor() {
    let s = Schedule {
        learning_rate: 0.05,
        warmup: 10,
        decay: 0.1,
        iterations: 100,
    };
    assert!((s.rate(0) - 0.005).abs() < 1e-15);
    assert!((s.rate(9) - 0.05).abs() < 1e-15);
    assert!((s.rate(10) - 0.05).abs() < 1e-15);
    assert!((s.rate(99) - 0.005).abs() < 1e-15);
    let mid = s.rate(10 + 89 / 2);
    assert!(mid < 0.05 && mid > 0.005);
    // Σ rates ≈ 2 at lr 0.05: Adam moves a parameter by at most about 2 in
    // 100 iterations; the default lr 0.1 doubles that, for margin.
    let total: f64 = (0..100).map(|i| s.rate(i)).sum();
    assert!((1.8..2.3).contains(&total), "{total}");
    // Degenerate stages still give finite, positive rates.
    let short = Schedule { iterations: 5, ..s };
    assert!((0..5).all(|i| short.rate(i) > 0.0 && short.rate(i).is_finite()));
}

#[test]
fn clipping_scales_long_gradients_to_the_bound_and_leaves_short_ones() {
    let mut g = vec![3.0, 4.0];
    assert_eq!(clip_norm(&mut g, 1.0), 5.0);
    assert!((g[0] - 0.6).abs() < 1e-15 && (g[1] - 0.8).abs() < 1e-15);
    let mut g = vec![0.3, 0.4];
    assert_eq!(clip_norm(&mut g, 1.0), 0.5);
    assert_eq!(g, vec![0.3, 0.4]);
    let mut g = vec![30.0, 40.0];
    clip_norm(&mut g, f64::INFINITY);
    assert_eq!(g, vec![30.0, 40.0]);
}
