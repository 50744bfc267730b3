//! Flights for `demo` and `paper`: billiard paths (§5.2.2) that start in free space and
//! reverse on contact, or given paths; any bounding volume, through a check closure.

use crate::stats::TimeStats;
use glam::{DMat3, DVec3};
use indicatif::{ProgressBar, ProgressStyle};
use kdop::scene::paper::Flight;
use kdop::scene::{Billiard, Rng};
use kdop::{Pose, QueryOptions, QueryStats};
use std::time::Instant;

/// One collision check: whether it collides, how many contacts, the work done.
pub type Check<'a> =
    dyn FnMut(&Pose, &QueryOptions) -> kdop::Result<(bool, usize, QueryStats)> + 'a;

/// What a flight did.
#[derive(Clone, Debug, Default)]
pub struct FlightRun {
    /// Count, mean and percentiles of the checks' times, in memory that does not grow.
    pub stats: TimeStats,
    /// Each check's own time, in microseconds, in step order (only if asked to keep steps).
    pub times_us: Vec<f64>,
    /// The pose of each check, so that other engines can replay the flight (only if asked
    /// to keep steps).
    pub poses: Vec<Pose>,
    /// Whether `times_us` and `poses` are kept.
    pub keep_steps: bool,
    pub contact_steps: usize,
    pub contacts: u64,
    pub nv: u64,
    pub np: u64,
    pub nu: u64,
}

impl FlightRun {
    /// Mean time per check in microseconds.
    pub fn mean_us(&self) -> f64 {
        self.stats.mean()
    }
}

/// A progress bar for `len` steps.
pub fn bar(len: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{{spinner}} {what} [{{bar:40}}] {{pos}}/{{len}} ({{per_sec}}, eta {{eta}})"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar
}

/// Flies `steps` checks of `flight` (billiard flights seeded by `seed`; `object_size` sets
/// how far in from the bounds' sides the object starts), ticking `bar`. With `keep_steps`,
/// each step's time and pose are kept (the paper's fixed-size flights, replayed by peers);
/// without, only streaming statistics, so any step count runs in constant memory.
#[allow(clippy::too_many_arguments)]
pub fn fly(
    flight: &Flight,
    steps: u64,
    keep_steps: bool,
    seed: u64,
    object_size: f64,
    options: &QueryOptions,
    check: &mut Check,
    bar: &ProgressBar,
) -> kdop::Result<FlightRun> {
    let mut run = FlightRun {
        keep_steps,
        ..FlightRun::default()
    };
    match flight {
        Flight::Path(poses) => {
            for pose in poses.iter().cycle().take(steps as usize) {
                record(&mut run, check, pose, options, bar)?;
            }
        }
        Flight::Billiard {
            bounds,
            speed,
            max_spin,
        } => {
            let (lo, hi) = *bounds;
            // A start in free space: the first of a seeded sequence of random poses that
            // touches nothing (the same for every bounding volume: answers are exact).
            let margin = DVec3::splat(object_size * 0.5).min((hi - lo) * 0.49);
            let inner = (lo + margin, hi - margin);
            let mut rng = Rng::new(seed ^ 0x5eed);
            let mut start = None;
            for _ in 0..2000 {
                let q = rng.rotation();
                let p = rng.in_box(inner.0, inner.1);
                let pose = Pose::new(DMat3::from_quat(q), p)?;
                if !check(&pose, &QueryOptions::DETECT)?.0 {
                    start = Some((p, q));
                    break;
                }
            }
            let Some((p0, q0)) = start else {
                return Err(kdop::Error::InvalidParameter {
                    name: "scene",
                    reason: "found no free place for the object in 2,000 tries".into(),
                });
            };
            let mut billiard = Billiard::new(seed, p0, q0, *speed, *max_spin, inner);
            for _ in 0..steps {
                let pose = billiard.step();
                if record(&mut run, check, &pose, options, bar)? {
                    billiard.bounce();
                }
            }
        }
    }
    Ok(run)
}

/// Runs and times one check of a flight; returns whether it collided.
fn record(
    run: &mut FlightRun,
    check: &mut Check,
    pose: &Pose,
    options: &QueryOptions,
    bar: &ProgressBar,
) -> kdop::Result<bool> {
    let t0 = Instant::now();
    let (collides, contacts, stats) = check(pose, options)?;
    let us = t0.elapsed().as_secs_f64() * 1e6;
    run.stats.record(us);
    if run.keep_steps {
        run.times_us.push(us);
        run.poses.push(*pose);
    }
    run.nv += stats.nv;
    run.np += stats.np;
    run.nu += stats.nu;
    if collides {
        run.contact_steps += 1;
        run.contacts += contacts as u64;
    }
    bar.inc(1);
    Ok(collides)
}
