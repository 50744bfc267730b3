//! `kdop bench edits`: the editable part tree (issue 20) under random edits. N parts
//! (boxes of extent 0.5 to 1.5 at about one overlap each) are loaded in bulk
//! ([`DynamicTree::insert_bulk`], as an assembly is opened); then E edits, each
//! removing a random part and inserting a new one elsewhere, in frames of `--per-frame`
//! edits, each frame ending with [`DynamicTree::optimize`] of `--budget` leaves. Reported:
//! the mean insertion and removal, the tree's cost against a fresh build, the time of the
//! same queries on the edited tree and on a rebuilt one, and the largest frame's
//! optimisation.

use crate::stats::TimeStats;
use clap::Args;
use glam::DVec3;
use kdop::scene::Rng;
use kdop::{Dop, DynamicTree, TreeLeaf};
use std::process::ExitCode;
use std::time::Instant;

/// Options of `kdop bench edits`.
#[derive(Args, Debug)]
pub struct EditsArgs {
    /// Numbers of parts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "100000")]
    parts: Vec<usize>,
    /// Random edits (a removal and an insertion each).
    #[arg(long, default_value_t = 10_000)]
    edits: usize,
    /// Edits per frame; each frame ends with one optimisation call.
    #[arg(long, default_value_t = 100)]
    per_frame: usize,
    /// Leaves re-inserted by each frame's optimisation.
    #[arg(long, default_value_t = 100)]
    budget: u32,
    /// Queries (boxes of a part's size) timed on the edited and on a rebuilt tree.
    #[arg(long, default_value_t = 100_000)]
    queries: usize,
    /// One JSON line per N.
    #[arg(long)]
    json: bool,
    /// Seed of the boxes and edits.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// A random box of extent 0.5 to 1.5 in a cube of side `side`.
fn random_box(rng: &mut Rng, side: f64) -> Dop<18> {
    let c = DVec3::new(rng.f64(), rng.f64(), rng.f64()) * side;
    let h = DVec3::new(rng.f64(), rng.f64(), rng.f64()) * 0.5 + DVec3::splat(0.25);
    Dop::from_points(&[c - h, c + h])
}

/// Runs `queries` through `tree`; returns the seconds taken and the hits.
fn time_queries(tree: &mut DynamicTree<18>, queries: &[Dop<18>]) -> (f64, u64) {
    let mut hits = 0u64;
    let t0 = Instant::now();
    for q in queries {
        tree.query(q, |_| hits += 1);
    }
    (t0.elapsed().as_secs_f64(), hits)
}

pub fn run(a: &EditsArgs) -> kdop::Result<ExitCode> {
    let bad = |name: &'static str, reason: &str| kdop::Error::InvalidParameter {
        name,
        reason: reason.into(),
    };
    if a.per_frame == 0 {
        return Err(bad("per-frame", "must be at least 1"));
    }
    for &n in &a.parts {
        if n == 0 {
            return Err(bad("parts", "must be at least 1"));
        }
        let side = (n as f64 * 5.0).cbrt();
        let mut rng = Rng::new(a.seed);
        let mut tree = DynamicTree::<18>::new(0.1)?;
        let boxes: Vec<(Dop<18>, u32)> = (0..n)
            .map(|i| (random_box(&mut rng, side), i as u32))
            .collect();
        let t0 = Instant::now();
        let mut leaves: Vec<TreeLeaf> = tree.insert_bulk(&boxes)?;
        let load_s = t0.elapsed().as_secs_f64();
        let (mut insert_s, mut remove_s) = (0.0, 0.0);
        let mut optimise = TimeStats::default();
        let mut frame_edits = TimeStats::default();
        let mut done = 0;
        while done < a.edits {
            let count = a.per_frame.min(a.edits - done);
            let f0 = Instant::now();
            for _ in 0..count {
                let j = (rng.f64() * n as f64) as usize % n;
                let b = random_box(&mut rng, side);
                let t0 = Instant::now();
                let item = tree.remove(leaves[j])?;
                let t1 = Instant::now();
                leaves[j] = tree.insert(&b, item)?;
                insert_s += t1.elapsed().as_secs_f64();
                remove_s += (t1 - t0).as_secs_f64();
            }
            frame_edits.record(f0.elapsed().as_secs_f64() * 1e6);
            let t0 = Instant::now();
            tree.optimize(a.budget);
            optimise.record(t0.elapsed().as_secs_f64() * 1e6);
            done += count;
        }
        let cost_ratio = tree.cost_ratio();
        let queries: Vec<Dop<18>> = (0..a.queries).map(|_| random_box(&mut rng, side)).collect();
        let mut fresh = tree.clone();
        fresh.rebuild();
        // Alternating rounds, the best of five each: the VM's clock wanders.
        let (mut edited_s, mut fresh_s) = (f64::INFINITY, f64::INFINITY);
        let (mut edited_hits, mut fresh_hits) = (0, 0);
        for _ in 0..5 {
            let (t, h) = time_queries(&mut tree, &queries);
            edited_s = edited_s.min(t);
            edited_hits = h;
            let (t, h) = time_queries(&mut fresh, &queries);
            fresh_s = fresh_s.min(t);
            fresh_hits = h;
        }
        if edited_hits != fresh_hits {
            return Err(bad(
                "edits",
                &format!("the edited tree found {edited_hits} hits, a rebuilt one {fresh_hits}"),
            ));
        }
        let e = a.edits.max(1) as f64;
        let insert_us = insert_s / e * 1e6;
        let remove_us = remove_s / e * 1e6;
        let query_ratio = edited_s / fresh_s;
        let max_optimize_ms = optimise.max() / 1e3;
        if a.json {
            println!(
                "{}",
                serde_json::json!({
                    "parts": n, "edits": a.edits, "insert_us": insert_us, "remove_us": remove_us,
                    "cost_ratio": cost_ratio, "query_ratio": query_ratio,
                    "max_optimize_ms": max_optimize_ms,
                    "optimize_ms_p50": optimise.percentile(0.5) / 1e3,
                    "budget": a.budget, "per_frame": a.per_frame,
                    "frame_edits_ms_p50": frame_edits.percentile(0.5) / 1e3,
                    "frame_edits_ms_max": frame_edits.max() / 1e3,
                    "load_s": load_s, "height": tree.height(),
                })
            );
        } else {
            println!(
                "{n} parts, {} edits in frames of {}: insert {insert_us:.2} us, remove \
                 {remove_us:.2} us; cost {cost_ratio:.3}x a fresh build's, queries \
                 {query_ratio:.3}x ({} queries, {edited_hits} hits); optimise {} leaves per \
                 frame: p50 {:.3} ms, max {max_optimize_ms:.3} ms; loaded in {load_s:.2} s",
                a.edits,
                a.per_frame,
                a.queries,
                a.budget,
                optimise.percentile(0.5) / 1e3
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
