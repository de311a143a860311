//! A fit stage as the solvers see it ([`crate::solve::Objective`]): the
//! parameters the stage fits, as `x`, to the loss and its gradient through
//! [`FitProblem::evaluate`]; and the one place where a blown-up simulation
//! becomes an unusable point rather than an error ([`blown_up`]).
//!
//! A low-dimensional stage solved by L-BFGS runs in scaled coordinates
//! `z = x / scale` (the scale its group's first step: world units/s for a
//! velocity, decades for `log10 E`), so that a unit step in `z` moves each
//! group by its own scale.
//!
//! A solver's loss-first trial ([`Objective::measure`]) runs the forward
//! only ([`FitProblem::loss`]: rollout, renders, loss terms), skipping the
//! backward that is about half of an evaluation (docs/benchmarks.md § Cost
//! per evaluation); it is not kept ([`Remember`]), since a point the
//! solver keeps is evaluated again with its gradient.

use super::error::FitError;
use super::evaluation::{LossReport, Parameters, Selection};
use super::observer::{EvaluationDone, EvaluationHook, EvaluationPurpose};
use super::plan::{StageKind, StagePlan, LBFGS_MAX_PARAMETERS};
use super::problem::FitProblem;
use crate::gpu::GpuContext;
use crate::mpm::{GradientFlow, MpmError};
use crate::solve::{usable, Evaluated, Measured, Objective};

/// `Ok(None)` for a simulation that blew up (non-finite, or out of the
/// box): a point the solvers step back from, not an error of the fit.
/// Every other error passes through.
pub fn blown_up<T>(result: Result<T, FitError>) -> Result<Option<T>, FitError> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(FitError::Mpm(MpmError::NonFinite { .. } | MpmError::LeftBox { .. })) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Which group of the parameters `x` holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unknowns {
    /// The velocity parameters (world units/s; rad/s for rigid angular
    /// parts).
    Velocity,
    /// The `log10 E` parameters (normalised units), then Poisson's
    /// ratio's `z` when ν is fitted ([`super::poisson`]): ν rides with E.
    Youngs,
}

/// True when a stage of `kind` at `params` is solved by L-BFGS (a group of
/// at most [`LBFGS_MAX_PARAMETERS`] parameters, ν's counted with E's),
/// false for Adam. The stage's gradient flow follows the same choice
/// ([`StageKind::flow`]).
pub fn by_lbfgs(kind: StageKind, params: &Parameters) -> bool {
    Unknowns::of(kind).get(params).len() <= LBFGS_MAX_PARAMETERS
}

impl Unknowns {
    /// What a stage of `kind` fits.
    pub fn of(kind: StageKind) -> Self {
        match kind {
            StageKind::Velocity => Unknowns::Velocity,
            StageKind::Scan | StageKind::Stiffness => Unknowns::Youngs,
        }
    }

    /// The group in `params`.
    pub fn get(self, params: &Parameters) -> Vec<f64> {
        match self {
            Unknowns::Velocity => params.velocity.clone(),
            Unknowns::Youngs => [&params.log10_youngs[..], &params.poisson].concat(),
        }
    }

    /// `params` with the group set to `x` (for [`Unknowns::Youngs`], the
    /// first `params.log10_youngs.len()` values are `log10 E`, the rest ν's
    /// `z`).
    pub fn set(self, params: &mut Parameters, x: &[f64]) {
        match self {
            Unknowns::Velocity => params.velocity = x.to_vec(),
            Unknowns::Youngs => {
                let n = params.log10_youngs.len().min(x.len());
                params.log10_youngs = x[..n].to_vec();
                params.poisson = x[n..].to_vec();
            }
        }
    }
}

/// An evaluated point: where (in the solver's coordinates), its report,
/// its gradient (in parameter units, unscaled).
pub type Seen = (Vec<f64>, LossReport, Vec<f64>);

/// What a [`StageObjective`] keeps of its evaluations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Remember {
    /// The last usable one (Adam: it steps from the point last evaluated).
    Last,
    /// Every usable one (L-BFGS: its accepted point is the best of a line
    /// search, not always the last tried).
    All,
}

/// One group of the parameters against one selection and gradient flow,
/// the rest held at `base` (module doc).
pub struct StageObjective<'a> {
    ctx: &'a GpuContext,
    problem: &'a mut FitProblem,
    selection: &'a Selection,
    flow: GradientFlow,
    base: Parameters,
    unknowns: Unknowns,
    /// `x = z · scale` per coordinate; `None`: `x = z`.
    scale: Option<Vec<f64>>,
    remember: Remember,
    seen: Vec<Seen>,
    /// Told of each evaluation as it ends, with what it measured.
    hook: Option<(EvaluationHook<'a>, EvaluationPurpose)>,
    /// The points measured without their gradient since the last
    /// gradient: the gradient of one of them (a line search's accepted
    /// trial) is not a new point (the solvers count it so).
    measured: Vec<Vec<f64>>,
}

impl<'a> StageObjective<'a> {
    /// The objective of `unknowns` on `selection` with `flow`, the other
    /// group held at `base`'s.
    pub fn new(
        ctx: &'a GpuContext,
        problem: &'a mut FitProblem,
        selection: &'a Selection,
        flow: GradientFlow,
        base: Parameters,
        unknowns: Unknowns,
        remember: Remember,
    ) -> Self {
        Self {
            ctx,
            problem,
            selection,
            flow,
            base,
            unknowns,
            scale: None,
            remember,
            seen: Vec::new(),
            hook: None,
            measured: Vec::new(),
        }
    }

    /// The objective of `stage`: what it fits, on its selection with its
    /// gradient flow.
    pub fn of_stage(
        ctx: &'a GpuContext,
        problem: &'a mut FitProblem,
        stage: &'a StagePlan,
        base: Parameters,
        remember: Remember,
    ) -> Self {
        let flow = stage.kind.flow(by_lbfgs(stage.kind, &base));
        Self::new(
            ctx,
            problem,
            &stage.selection,
            flow,
            base,
            Unknowns::of(stage.kind),
            remember,
        )
    }

    /// The same in scaled coordinates `z = x / scale` (module doc).
    pub fn scaled(mut self, scale: Vec<f64>) -> Self {
        self.scale = Some(scale);
        self
    }

    /// The same, telling `hook` of each evaluation as it ends (progress
    /// within a stage, [`super::FitObserver::evaluation_done`]).
    pub fn reporting(mut self, hook: EvaluationHook<'a>, purpose: EvaluationPurpose) -> Self {
        self.hook = Some((hook, purpose));
        self
    }

    /// Tells the hook, if any, of an evaluation at `z` that ended with
    /// `loss`.
    fn report(&mut self, z: &[f64], loss: Option<f64>, with_gradient: bool) {
        let counted = !with_gradient || !self.measured.iter().any(|m| m == z);
        if with_gradient {
            self.measured.clear();
        } else {
            self.measured.push(z.to_vec());
        }
        if let Some((hook, purpose)) = self.hook {
            hook(&EvaluationDone {
                loss,
                with_gradient,
                counted,
                purpose,
            });
        }
    }

    /// `x` in the solver's coordinates.
    pub fn to_solver(&self, x: &[f64]) -> Vec<f64> {
        match &self.scale {
            Some(s) => x.iter().zip(s).map(|(x, s)| x / s).collect(),
            None => x.to_vec(),
        }
    }

    /// The parameters at `z` (solver coordinates).
    pub fn parameters(&self, z: &[f64]) -> Parameters {
        let x = match &self.scale {
            Some(s) => z.iter().zip(s).map(|(z, s)| z * s).collect(),
            None => z.to_vec(),
        };
        let mut params = self.base.clone();
        self.unknowns.set(&mut params, &x);
        params
    }

    /// The evaluation at `z` kept ([`Remember`]), the latest if several.
    pub fn seen(&self, z: &[f64]) -> Option<&Seen> {
        self.seen.iter().rev().find(|(p, _, _)| p == z)
    }

    /// The first evaluation kept.
    pub fn first_seen(&self) -> Option<&Seen> {
        self.seen.first()
    }

    /// The evaluations kept, ending the objective's hold on the problem.
    #[cfg(feature = "reference")]
    pub fn into_seen(self) -> Vec<Seen> {
        self.seen
    }
}

impl Objective for StageObjective<'_> {
    type Error = FitError;

    fn evaluate(&mut self, z: &[f64]) -> Result<Evaluated, FitError> {
        let evaluated = self.evaluate_unreported(z)?;
        self.report(z, evaluated.as_ref().map(|(loss, _)| *loss), true);
        Ok(evaluated)
    }

    /// The loss at `z` from the forward alone (module doc); no gradient.
    fn measure(&mut self, z: &[f64]) -> Result<Measured, FitError> {
        let params = self.parameters(z);
        let measured = self.problem.loss(self.ctx, &params, self.selection);
        let measured = blown_up(measured)?
            .map(|report| report.loss)
            .filter(|loss| loss.is_finite())
            .map(|loss| (loss, None));
        self.report(z, measured.as_ref().map(|(loss, _)| *loss), false);
        Ok(measured)
    }
}

impl StageObjective<'_> {
    /// [`Objective::evaluate`] before its hook is told.
    fn evaluate_unreported(&mut self, z: &[f64]) -> Result<Evaluated, FitError> {
        let params = self.parameters(z);
        let evaluated = self
            .problem
            .evaluate(self.ctx, &params, self.selection, self.flow);
        let Some(eval) = blown_up(evaluated)? else {
            return Ok(None);
        };
        let grads = eval.read(self.ctx)?;
        let widen = |g: Vec<f32>| g.into_iter().map(f64::from);
        let grad: Vec<f64> = match self.unknowns {
            Unknowns::Velocity => widen(grads.velocity).collect(),
            Unknowns::Youngs => widen(grads.youngs)
                .chain(
                    self.problem
                        .poisson_parameter_gradient(&params.poisson, &grads.poisson)?,
                )
                .collect(),
        };
        let Some((loss, grad)) = usable(eval.report.loss, grad) else {
            return Ok(None);
        };
        let solver_grad = match &self.scale {
            Some(s) => grad.iter().zip(s).map(|(g, s)| g * s).collect(),
            None => grad.clone(),
        };
        if self.remember == Remember::Last {
            self.seen.clear();
        }
        self.seen.push((z.to_vec(), eval.report, grad));
        Ok(Some((loss, solver_grad)))
    }
}
