//! `kdop bench broad`: the broad phase alone on N boxes in billiard motion, against parry3d's
//! BVH broad phase (the one rapier uses: partial leaf updates, refit, incremental
//! optimisation, self-traversal) on the same boxes and motions, pairs checked.
//!
//! Boxes have sizes 0.5 to 1.5 in a cube sized for about one overlapping pair per box; each
//! moves [`SPEED`] of its size per frame and bounces off the cube's walls. Both broad phases
//! get the same fat boxes (the tight box grown by [`FAT`] of its size per side, re-made only
//! when the tight box leaves it), so both see the same changes. Each fat box starts as if
//! made a random number of frames earlier, as in a scene that has been running, so the
//! boxes leave their fat boxes spread over the frames rather than all at once.

use crate::stats::TimeStats;
use clap::Args;
use kdop::scene::Rng;
use kdop::{Aabb, BroadPhase};
use std::process::ExitCode;
use std::time::Instant;

/// Options of `kdop bench broad`.
#[derive(Args, Debug)]
pub struct BroadArgs {
    /// Numbers of moving boxes, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "10000,100000")]
    objects: Vec<usize>,
    /// Static boxes added beside the moving ones (they never move, but for
    /// `--static-edits`).
    #[arg(long, default_value_t = 0)]
    statics: usize,
    /// Static boxes set again each frame, each moved by a third of a unit along x and back
    /// the next time (doors and lifts among static geometry): a static box that changes
    /// costs its own entries, not a pass over every static box.
    #[arg(long, default_value_t = 0)]
    static_edits: usize,
    /// Frames timed (after two warm-up frames).
    #[arg(long, default_value_t = 60)]
    frames: usize,
    /// Threads for kdop's sweep (rayon), each pinned to a core of its own when there are
    /// enough; parry's traversal is single-threaded.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// One JSON line per N.
    #[arg(long)]
    json: bool,
    /// Seed of the boxes and motions.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// A fixed cell edge for kdop's grid instead of the one it chooses (for measuring
    /// the choice: the fat boxes' median extent is 1.4).
    #[arg(long)]
    cell: Option<f32>,
    /// Share of the boxes (0 to 1) ten times larger than the rest, as vehicles among
    /// debris: the grid's cells follow the many small boxes, and the large ones are looked
    /// up in the rows they cover.
    #[arg(long, default_value_t = 0.0, value_parser = crate::common::share)]
    large: f64,
    /// Share of the boxes (0 to 1) ten times longer along one axis (x, y or z at random)
    /// than the rest, as pipes, rails and beams among small parts.
    #[arg(long, default_value_t = 0.0, value_parser = crate::common::share)]
    long: f64,
    /// Share of the moving boxes (0 to 1) that rest: dynamic, but never set again, as
    /// sleeping bodies in a settled scene. parry3d then runs as rapier does for such
    /// scenes: leaves refit along their paths and only pairs with a changed leaf traversed.
    #[arg(long, default_value_t = 0.0, value_parser = crate::common::share)]
    asleep: f64,
    /// Boxes from a real mesh instead of random ones: each triangle's box a body, of its
    /// size and at its place in the file, drifting on a billiard path within the mesh's
    /// bounds (`--objects` is then the triangle count): the clustered sizes and places of
    /// real geometry, where a grid's cells fit some regions and not others.
    #[arg(long)]
    mesh: Option<std::path::PathBuf>,
}

/// How much larger the boxes of `--large` are, and the long axis of those of `--long`.
const LARGE_SCALE: f32 = 10.0;

/// Fat boxes grow by this share of the box's size on each side.
const FAT: f32 = 0.2;
/// Each box moves this share of its size per frame.
const SPEED: f32 = 0.05;
/// Above this many boxes the pairs are checked with the plain sweep, not all pairs.
const ALL_PAIRS_UP_TO: usize = 20_000;

/// The boxes and their motions.
struct Scene {
    centre: Vec<[f32; 3]>,
    /// Half-extents.
    half: Vec<[f32; 3]>,
    /// Per box of a mesh, the length its fat box grows by on each side over [`FAT`] (empty
    /// for random boxes, which grow by their smallest half-extent: [`fat_box`]).
    grow: Vec<f32>,
    velocity: Vec<[f32; 3]>,
    fat: Vec<Aabb>,
    side: f32,
    moving: usize,
}

impl Scene {
    fn new(moving: usize, statics: usize, seed: u64, a: &BroadArgs) -> Scene {
        let n = moving + statics;
        let mut rng = Rng::new(seed);
        // Mean box volume about 1.25: a density of 1/5 per unit volume gives about one
        // overlapping pair per box (Minkowski sum of two boxes, 8 s^3).
        let side = (n as f64 * 5.0).cbrt() as f32;
        let mut s = Scene {
            centre: Vec::with_capacity(n),
            half: Vec::with_capacity(n),
            grow: Vec::new(),
            velocity: Vec::with_capacity(n),
            fat: Vec::with_capacity(n),
            side,
            moving,
        };
        for i in 0..n {
            let c = [0, 1, 2].map(|_| (rng.f64() as f32) * side);
            let mut h = 0.25 + 0.5 * rng.f64() as f32;
            // Drawn only when asked for, so that the default scene stays the same.
            if a.large > 0.0 && rng.f64() < a.large {
                h *= LARGE_SCALE;
            }
            let mut half = [h; 3];
            if a.long > 0.0 && rng.f64() < a.long {
                half[((rng.f64() * 3.0) as usize).min(2)] *= LARGE_SCALE;
            }
            let dir = loop {
                let d = [0, 1, 2].map(|_| 2.0 * rng.f64() as f32 - 1.0);
                let l = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
                if l > 0.1 && l <= 1.0 {
                    break d.map(|v| v / l);
                }
            };
            // A speed of a share of the box's smallest size per frame.
            let resting = a.asleep > 0.0 && rng.f64() < a.asleep;
            let speed = if i < moving && !resting {
                SPEED * 2.0 * h
            } else {
                0.0
            };
            let velocity = dir.map(|v| v * speed);
            let made = made_at(&mut rng, c, velocity, 2.0 * FAT * h);
            s.centre.push(c);
            s.half.push(half);
            s.velocity.push(velocity);
            s.fat.push(fat_box(made, half));
        }
        s
    }

    /// The boxes of `triangles` (boxes of a mesh's triangles, in its coordinates), moved so
    /// that the mesh's bounds start at the origin; each moves [`SPEED`] of its growth length
    /// (its smallest half-extent, or a quarter of its largest if more: a flat triangle's
    /// box moves too) per frame in a random direction; `--asleep` rests a share of them.
    fn of_mesh(triangles: &[Aabb], seed: u64, a: &BroadArgs) -> Scene {
        let n = triangles.len();
        let mut rng = Rng::new(seed);
        let lo = triangles.iter().fold([f32::INFINITY; 3], |m, b| {
            [0, 1, 2].map(|k| m[k].min(b.lo[k]))
        });
        let hi = triangles.iter().fold([f32::NEG_INFINITY; 3], |m, b| {
            [0, 1, 2].map(|k| m[k].max(b.hi[k]))
        });
        let side = (0..3).map(|k| hi[k] - lo[k]).fold(0.0f32, f32::max);
        let mut s = Scene {
            centre: Vec::with_capacity(n),
            half: Vec::with_capacity(n),
            grow: Vec::with_capacity(n),
            velocity: Vec::with_capacity(n),
            fat: Vec::with_capacity(n),
            side,
            moving: n,
        };
        for b in triangles {
            let c = [0, 1, 2].map(|k| (b.lo[k] + b.hi[k]) / 2.0 - lo[k]);
            let half = [0, 1, 2].map(|k| (b.hi[k] - b.lo[k]) / 2.0);
            let least = half[0].min(half[1]).min(half[2]);
            let most = half[0].max(half[1]).max(half[2]);
            let g = least.max(most / 4.0);
            let dir = rng.unit().to_array().map(|v| v as f32);
            let resting = a.asleep > 0.0 && rng.f64() < a.asleep;
            let speed = if resting { 0.0 } else { SPEED * 2.0 * g };
            let velocity = dir.map(|v| v * speed);
            let made = made_at(&mut rng, c, velocity, 2.0 * FAT * g);
            s.centre.push(c);
            s.half.push(half);
            s.grow.push(g);
            s.velocity.push(velocity);
            s.fat.push(fat_box_by(made, half, g));
        }
        s
    }

    /// The fat box of box `i` when made at centre `c`.
    fn fat_at(&self, i: usize, c: [f32; 3]) -> Aabb {
        match self.grow.get(i) {
            Some(&g) => fat_box_by(c, self.half[i], g),
            None => fat_box(c, self.half[i]),
        }
    }

    fn tight(&self, i: usize) -> Aabb {
        let (c, h) = (self.centre[i], self.half[i]);
        Aabb::new(
            [0, 1, 2].map(|k| c[k] - h[k]),
            [0, 1, 2].map(|k| c[k] + h[k]),
        )
    }

    /// Moves `count` static boxes of frame `frame` by a third of a unit along x, one way on
    /// even frames and back on odd ones; lists them (id and new box).
    fn edit_statics(&mut self, frame: usize, count: usize, edited: &mut Vec<(u32, Aabb)>) {
        edited.clear();
        let statics = self.fat.len() - self.moving;
        if statics == 0 {
            return;
        }
        let d = if frame % 2 == 0 {
            1.0 / 3.0
        } else {
            -1.0 / 3.0
        };
        for k in 0..count.min(statics) {
            // The same boxes two frames running (there and back), others after that.
            let i = self.moving + ((frame / 2) * count + k) * 7919 % statics;
            let b = &mut self.fat[i];
            b.lo[0] += d;
            b.hi[0] += d;
            edited.push((i as u32, *b));
        }
    }

    /// Moves every moving box one frame; lists the boxes whose fat box was re-made (id and
    /// new fat box, as an engine lists them while it moves its bodies).
    fn step(&mut self, changed: &mut Vec<(u32, Aabb)>) {
        changed.clear();
        for i in 0..self.moving {
            for k in 0..3 {
                let v = self.centre[i][k] + self.velocity[i][k];
                if v < 0.0 || v > self.side {
                    self.velocity[i][k] = -self.velocity[i][k];
                }
                self.centre[i][k] += self.velocity[i][k];
            }
            if !self.fat[i].contains(&self.tight(i)) {
                self.fat[i] = self.fat_at(i, self.centre[i]);
                changed.push((i as u32, self.fat[i]));
            }
        }
    }

    fn boxes(&self) -> Vec<(u32, Aabb, bool)> {
        (0..self.fat.len())
            .map(|i| (i as u32, self.fat[i], i < self.moving))
            .collect()
    }
}

/// The fat box of a box of centre `c` and half-extents `h`: grown on each side by [`FAT`]
/// times its smallest size, so that a long box's fat box lasts as many frames as a
/// small one's.
fn fat_box(c: [f32; 3], h: [f32; 3]) -> Aabb {
    let least = h[0].min(h[1]).min(h[2]);
    // Along the shortest axes as one product, so that cubes' fat boxes stay the same to
    // the last bit as before long boxes existed (and with them the pairs of a run).
    let f = h.map(|v| {
        if v == least {
            v * (1.0 + 2.0 * FAT)
        } else {
            v + least * 2.0 * FAT
        }
    });
    Aabb::new(
        [0, 1, 2].map(|k| c[k] - f[k]),
        [0, 1, 2].map(|k| c[k] + f[k]),
    )
}

/// Where the fat box of a box at centre `c` moving `velocity` a frame was made, its fat box
/// lasting `reach` along the fastest axis: some frames ago on the same path, a random share
/// of the frames it lasts, so that the boxes leave their fat boxes spread over the frames,
/// not in one wave no running scene has. Draws from `rng` only for a moving box.
fn made_at(rng: &mut Rng, c: [f32; 3], velocity: [f32; 3], reach: f32) -> [f32; 3] {
    let fastest = velocity.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let age = if fastest > 0.0 {
        rng.f64() as f32 * reach / fastest
    } else {
        0.0
    };
    [0, 1, 2].map(|k| c[k] - velocity[k] * age)
}

/// The box of centre `c` and half-extents `h` grown by [`FAT`] times `g` on each side.
fn fat_box_by(c: [f32; 3], h: [f32; 3], g: f32) -> Aabb {
    Aabb::new(
        [0, 1, 2].map(|k| c[k] - h[k] - g * 2.0 * FAT),
        [0, 1, 2].map(|k| c[k] + h[k] + g * 2.0 * FAT),
    )
}

/// Runs `kdop bench broad`.
pub fn run(a: &BroadArgs) -> kdop::Result<ExitCode> {
    let pool = crate::common::thread_pool(a.threads.max(1))?;
    let triangles = a.mesh.as_ref().map(|p| mesh_boxes(p)).transpose()?;
    if triangles.is_some() && a.statics > 0 {
        return Err(kdop::Error::InvalidParameter {
            name: "statics",
            reason: "static boxes are random boxes: not with --mesh".into(),
        });
    }
    if !a.json {
        println!(
            "{:>9} {:>8} {:>10} {:>10} {:>10} {:>11} {:>10} {:>9} {:>11} {:>9} {:>8}",
            "objects",
            "static",
            "kdop p50",
            "kdop p99",
            "kdop max",
            "statics add",
            "parry p50",
            "query",
            "parry query",
            "pairs",
            "checked"
        );
    }
    let counts = match &triangles {
        Some(t) => vec![t.len()],
        None => a.objects.clone(),
    };
    for &n in &counts {
        let row = pool.install(|| measure(n, a, triangles.as_deref()))?;
        if a.json {
            println!("{}", row.json(n, a));
        } else {
            println!(
                "{:>9} {:>8} {:>8.3}ms {:>8.3}ms {:>8.3}ms {:>11} {:>10} {:>7.0}ns {:>11} {:>9} {:>8}",
                n,
                a.statics,
                row.p50,
                row.p99,
                row.max,
                row.alone
                    .map_or("-".to_string(), |m| format!("{:.3}ms", row.p50 - m)),
                row.parry.map_or("-".to_string(), |p| format!("{p:.3}ms")),
                row.query_ns,
                row.parry_query_ns
                    .map_or("-".to_string(), |q| format!("{q:.0}ns")),
                row.pairs,
                row.checked
            );
        }
    }
    if !cfg!(feature = "peers") && !a.json {
        println!("(parry3d not built: add --features peers for its column)");
    }
    Ok(ExitCode::SUCCESS)
}

struct Row {
    p50: f64,
    p99: f64,
    max: f64,
    /// With statics: the p50 of the same moving boxes without them, in the same frames.
    alone: Option<f64>,
    parry: Option<f64>,
    /// Mean time of one [`BroadPhase::query`] with a box of the scene, and of parry3d's
    /// `intersect_aabb` on the same boxes.
    query_ns: f64,
    parry_query_ns: Option<f64>,
    pairs: usize,
    checked: bool,
}

impl Row {
    fn json(&self, n: usize, a: &BroadArgs) -> String {
        serde_json::json!({
            "objects": n,
            "statics": a.statics,
            "static_edits": a.static_edits,
            "kdop_ms_p50": self.p50,
            "kdop_ms_p99": self.p99,
            "kdop_ms_max": self.max,
            "moving_alone_ms_p50": self.alone,
            "statics_add_ms": self.alone.map(|a| self.p50 - a),
            "parry_ms_p50": self.parry,
            "query_ns": self.query_ns,
            "parry_query_ns": self.parry_query_ns,
            "pairs": self.pairs,
            "checked": self.checked,
        })
        .to_string()
    }
}

/// Boxes of the scene looked up one at a time after the frames (a world asks so for each
/// object whose fat box changed when few did, and for each inserted or moved part).
const QUERIES: usize = 10_000;

/// The mean time of one [`BroadPhase::query`] with each of up to [`QUERIES`] of `fat`
/// (spread over the ids, so over the scene), and of parry3d's lookup of the same boxes; in
/// nanoseconds. Both count what they find, so that neither lookup is optimised away.
fn time_queries(bp: &BroadPhase, parry: Option<&Parry>, fat: &[Aabb]) -> (f64, Option<f64>) {
    let step = (fat.len() / QUERIES).max(1);
    let boxes: Vec<Aabb> = fat.iter().step_by(step).copied().collect();
    let per = |t: Instant| t.elapsed().as_secs_f64() * 1e9 / boxes.len().max(1) as f64;
    let (t, mut found) = (Instant::now(), 0usize);
    for b in &boxes {
        bp.query(b, |_| found += 1);
    }
    let kdop = per(t);
    let peer = parry.map(|p| {
        let (t, mut theirs) = (Instant::now(), 0usize);
        for b in &boxes {
            theirs += p.query(b);
        }
        let ns = per(t);
        std::hint::black_box(theirs);
        ns
    });
    std::hint::black_box(found);
    (kdop, peer)
}

/// The boxes of the triangles of the mesh file at `path`, in file order.
fn mesh_boxes(path: &std::path::Path) -> kdop::Result<Vec<Aabb>> {
    let mesh = kdop::io::formats::load_mesh(path)?;
    Ok((0..mesh.triangle_count())
        .filter_map(|i| mesh.triangle(i))
        .map(|t| {
            let (lo, hi) = (t[0].min(t[1]).min(t[2]), t[0].max(t[1]).max(t[2]));
            Aabb::new(lo.as_vec3().to_array(), hi.as_vec3().to_array())
        })
        .collect())
}

fn measure(n: usize, a: &BroadArgs, triangles: Option<&[Aabb]>) -> kdop::Result<Row> {
    let mut scene = match triangles {
        Some(t) => Scene::of_mesh(t, a.seed, a),
        None => Scene::new(n, a.statics, a.seed, a),
    };
    let new_phase = || match a.cell {
        Some(size) => BroadPhase::with_cell_size(size),
        None => Ok(BroadPhase::new()),
    };
    let mut bp = new_phase()?;
    for (i, f) in scene.fat.iter().enumerate() {
        bp.set(i as u32, *f, i < n)?;
    }
    bp.update();
    // With statics, the same moving boxes without them, updated in the same frames right
    // after kdop's: what the statics add is the difference of the two in one run.
    let mut alone = (a.statics > 0)
        .then(|| -> kdop::Result<BroadPhase> {
            let mut b = new_phase()?;
            for (i, f) in scene.fat[..n].iter().enumerate() {
                b.set(i as u32, *f, true)?;
            }
            b.update();
            Ok(b)
        })
        .transpose()?;
    let mut alone_times = TimeStats::default();
    let mut parry = Parry::new(&scene.fat, a.asleep > 0.0);
    let mut changed = Vec::with_capacity(n + a.static_edits);
    let mut edited = Vec::with_capacity(a.static_edits);
    let mut times = TimeStats::default();
    let mut parry_times = TimeStats::default();
    let mut parry_pairs = 0;
    for frame in 0..a.frames + 2 {
        scene.step(&mut changed);
        scene.edit_statics(frame, a.static_edits, &mut edited);
        let t = Instant::now();
        bp.set_many(&edited, false)?;
        bp.set_many(&changed, true)?;
        bp.update();
        let kdop_ms = t.elapsed().as_secs_f64() * 1e3;
        if let Some(b) = alone.as_mut() {
            let t = Instant::now();
            b.set_many(&changed, true)?;
            b.update();
            if frame >= 2 {
                alone_times.record(t.elapsed().as_secs_f64() * 1e6);
            }
        }
        // parry3d's leaves are updated alike, static or not.
        changed.extend_from_slice(&edited);
        let parry_ms = parry.as_mut().map(|p| {
            let t = Instant::now();
            parry_pairs = p.update(&changed);
            t.elapsed().as_secs_f64() * 1e3
        });
        if frame >= 2 {
            times.record(kdop_ms * 1e3);
            if let Some(ms) = parry_ms {
                parry_times.record(ms * 1e3);
            }
        }
    }
    let pairs = bp.pair_count();
    let (query_ns, parry_query_ns) = time_queries(&bp, parry.as_ref(), &scene.fat);
    let mut mine: Vec<(u32, u32)> = bp.pairs().collect();
    mine.sort_unstable();
    let boxes = scene.boxes();
    let truth = if boxes.len() <= ALL_PAIRS_UP_TO {
        kdop::oracle::brute_force_pairs(&boxes)
    } else {
        kdop::oracle::single_sweep_pairs(&boxes)
    };
    let checked = mine == truth
        && parry
            .as_ref()
            .is_none_or(|p| a.statics > 0 || !p.counts_all() || parry_pairs == truth.len());
    if !checked {
        eprintln!(
            "warning: {n} objects: kdop found {} pairs, the oracle {}, parry {parry_pairs}",
            mine.len(),
            truth.len()
        );
    }
    Ok(Row {
        p50: times.percentile(0.5) / 1e3,
        p99: times.percentile(0.99) / 1e3,
        max: times.max() / 1e3,
        alone: alone.map(|_| alone_times.percentile(0.5) / 1e3),
        parry: parry.map(|_| parry_times.percentile(0.5) / 1e3),
        query_ns,
        parry_query_ns,
        pairs,
        checked,
    })
}

#[cfg(feature = "peers")]
use parry_bvh::Parry;

#[cfg(not(feature = "peers"))]
struct Parry;

#[cfg(not(feature = "peers"))]
impl Parry {
    fn new(_: &[Aabb], _: bool) -> Option<Parry> {
        None
    }
    fn counts_all(&self) -> bool {
        true
    }
    fn update(&mut self, _: &[(u32, Aabb)]) -> usize {
        0
    }
    fn query(&self, _: &Aabb) -> usize {
        0
    }
}

#[cfg(feature = "peers")]
mod parry_bvh {
    use kdop::Aabb;
    use parry3d::bounding_volume::Aabb as PAabb;
    use parry3d::math::Vector;
    use parry3d::partitioning::{Bvh, BvhWorkspace};

    /// parry3d's BVH broad phase as rapier drives it each step.
    pub struct Parry {
        bvh: Bvh,
        ws: BvhWorkspace,
        /// For scenes of resting boxes: refit only the changed leaves' paths and traverse
        /// only pairs with a changed leaf (then the new pairs alone are counted).
        partial: bool,
        /// The leaves changed by the update before and by this one (for `refit_partial`).
        before: Vec<u32>,
        now: Vec<u32>,
    }

    fn aabb(b: &Aabb) -> PAabb {
        PAabb::new(
            Vector::new(b.lo[0], b.lo[1], b.lo[2]),
            Vector::new(b.hi[0], b.hi[1], b.hi[2]),
        )
    }

    impl Parry {
        pub fn new(fat: &[Aabb], partial: bool) -> Option<Parry> {
            let mut bvh = Bvh::new();
            for (i, b) in fat.iter().enumerate() {
                bvh.insert(aabb(b), i as u32);
            }
            let mut ws = BvhWorkspace::default();
            if partial {
                // The first refit marks the inserted leaves changed, the second clears
                // them: the updates then start from a tree where nothing changed.
                bvh.refit(&mut ws);
                bvh.refit(&mut ws);
            }
            Some(Parry {
                bvh,
                ws,
                partial,
                before: Vec::new(),
                now: Vec::new(),
            })
        }

        /// Whether [`Parry::update`] counts all pairs (or only those of changed leaves).
        pub fn counts_all(&self) -> bool {
            !self.partial
        }

        /// The leaves whose boxes overlap `b`, counted.
        pub fn query(&self, b: &Aabb) -> usize {
            let q = aabb(b);
            self.bvh.intersect_aabb(&q).count()
        }

        /// Updates the changed leaves, refits, optimises a little, and counts all pairs;
        /// or, for resting scenes, refits their paths and counts their pairs.
        pub fn update(&mut self, changed: &[(u32, Aabb)]) -> usize {
            for &(i, b) in changed {
                self.bvh.insert_or_update_partially(aabb(&b), i, 0.0);
            }
            if self.partial {
                std::mem::swap(&mut self.before, &mut self.now);
                self.now.clear();
                self.now.extend(changed.iter().map(|&(i, _)| i));
                self.bvh.refit_partial(&self.before, &self.now);
                let mut pairs = 0;
                self.bvh
                    .traverse_bvtt_single_tree::<true>(&mut self.ws, &mut |_, _| pairs += 1);
                return pairs;
            }
            self.bvh.refit(&mut self.ws);
            self.bvh.optimize_incremental(&mut self.ws);
            let mut pairs = 0;
            self.bvh
                .traverse_bvtt_single_tree::<false>(&mut self.ws, &mut |_, _| pairs += 1);
            pairs
        }
    }
}
