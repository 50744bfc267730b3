//! `kdop demo`: the world at work. Hundreds to thousands of objects (the knot and other
//! built-in shapes) fly billiard paths (§5.2.2, §6.1 "multiple flying objects") through the
//! built-in room of about 100,000 triangles, colliding with it and with each other; every
//! frame is one [`World::step`], timed, and summarised at the end.

use crate::common::{KArg, ModeArg, load_mesh};
use crate::flights;
use crate::stats::TimeStats;
use crate::with_k;
use clap::Args;
use glam::DVec3;
use kdop::scene::{Billiard, Rng, cylinder, demo_environment, icosphere, torus, torus_knot};
use kdop::{Body, Mesh, Mode, ObjectDesc, ObjectId, PartDesc, Pose, World};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Number of moving objects, 1 to 1,000,000.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub objects: u32,
    /// Number of frames (one world step each), 1 to 10^9. Statistics are kept in constant
    /// memory, so any count runs.
    #[arg(long, visible_alias = "frames", default_value_t = 400, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    pub steps: u64,
    /// Seed of the room, the objects' starts and their paths.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Detect (each pair stops at its first contact) or report (all intersecting triangle
    /// pairs) for every object.
    #[arg(long, value_enum, default_value = "report")]
    pub mode: ModeArg,
    /// k of the k-DOPs.
    #[arg(long, value_enum, default_value = "18")]
    pub k: KArg,
    /// Worker threads of the narrow phase (0: one per core), each pinned to a core of its own
    /// when there are enough.
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Leave the workers unpinned (the OS places them), to see what pinning saves.
    #[arg(long)]
    pub unpinned: bool,
    /// Frame time in milliseconds, as a game loop paces its frames: after each step the
    /// program sleeps out the rest of the frame, so the workers idle between steps as they
    /// do in an engine (0: steps back to back).
    #[arg(long, default_value_t = 0.0, value_parser = pace)]
    pub pace: f64,
    /// Environment mesh (OBJ, STL, PLY), one static part, instead of the built-in room.
    #[arg(long)]
    pub env: Option<PathBuf>,
    /// One mesh for every object instead of the built-in shapes.
    #[arg(long)]
    pub object: Option<PathBuf>,
    /// Print the summary as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Live edits: an assembly of `--parts` small parts in the room, this many random edits
    /// per frame among them (moves, removals, insertions, replaced meshes), and a breathing
    /// torus (a deformable object) flying with the others.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub edits: u32,
    /// Share of the objects, 0 to 1, that rest where they were placed (sleeping bodies: never
    /// moved again); the others fly.
    #[arg(long, default_value_t = 0.0, value_parser = crate::common::share)]
    pub resting: f64,
    /// Parts of the edited assembly (with `--edits`).
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub parts: u32,
    /// With `--edits`: write an SVG of the part tree's cost against a fresh build's, the
    /// step time and the edits' time over the frames (sampled, at most 500 points).
    #[arg(long, requires = "edits")]
    pub plot: Option<PathBuf>,
    /// Keep the objects at full size however many there are. Beyond 10,000 objects they
    /// are otherwise scaled down so that the room holds them as sparsely as 10,000; at full
    /// size a larger crowd packs the room (most objects placed touching others), a stress
    /// test of held contacts.
    #[arg(long)]
    pub crowded: bool,
}

/// Objects the room holds at full size with room to fly: beyond this many, the shapes are
/// scaled by the cube root of the ratio so the crowd keeps this count's density (at full
/// size, 30,000 fill the room and placing them apart fails for most).
const FULL_SIZE_OBJECTS: u32 = 10_000;

/// The scale of the objects' shapes for a crowd of `objects`.
fn object_scale(objects: u32, crowded: bool) -> f64 {
    if crowded || objects <= FULL_SIZE_OBJECTS {
        1.0
    } else {
        (f64::from(FULL_SIZE_OBJECTS) / f64::from(objects)).cbrt()
    }
}

/// A frame time in milliseconds, 0 to 1,000.
fn pace(s: &str) -> Result<f64, String> {
    crate::common::number_in(s, 0.0..=1000.0, "a number of milliseconds")
}

pub fn run(a: &DemoArgs) -> kdop::Result<ExitCode> {
    let pool = crate::common::thread_pool_pinned(a.threads, !a.unpinned)?;
    pool.install(|| with_k!(a.k, KK => fly::<KK>(a)))
}

/// The built-in objects: the knot of `kdop flight` at a fifth of its size and three other
/// shapes of a similar size, 770 to 2,240 triangles each.
fn builtin_shapes() -> kdop::Result<Vec<(&'static str, Mesh)>> {
    Ok(vec![
        ("knot", torus_knot(3, 7, 1.0, 0.32, 0.14, 140, 8)?),
        ("torus", torus(1.1, 0.35, 32, 12)?),
        ("ball", icosphere(1.0, 3)?),
        ("rod", cylinder(0.4, 2.6, 24, 3)?),
    ])
}

/// What the run added up, over the flight's frames.
#[derive(Default)]
struct Totals {
    step: TimeStats,
    broad_us: f64,
    narrow_us: f64,
    broad_pairs: u64,
    narrow_pairs: u64,
    resting_pairs: u64,
    colliding: u64,
    object_pairs: u64,
    contacts: u64,
    contact_steps: u64,
    begins: u64,
    ends: u64,
    refattened: u64,
    /// Per edit kind (move, remove, insert, replace): count and total microseconds.
    edits: [(u64, f64); 4],
    /// Time of the breathing torus's deformation per frame.
    deform: TimeStats,
    /// Its nodes refit, and its rebuilds, over all frames.
    deform_refit: u64,
    deform_rebuilds: u64,
    /// Parts in the world (room and assembly) before the first frame.
    parts_start: usize,
    /// With edits, sampled frames: the part tree's cost ratio, the step's and the edits'
    /// microseconds.
    samples: Vec<crate::plots::EditSample>,
}

fn fly<const K: usize>(a: &DemoArgs) -> kdop::Result<ExitCode> {
    let start = Instant::now();
    let mut world = World::<K>::new();
    // The environment: each part a shape of its own.
    let parts = match &a.env {
        Some(p) => vec![(load_mesh(p, "ENV")?, Pose::IDENTITY)],
        None => demo_environment(a.seed)?,
    };
    let (mut lo, mut hi) = (DVec3::splat(f64::INFINITY), DVec3::splat(f64::NEG_INFINITY));
    let mut env_triangles = 0;
    for (i, (mesh, placement)) in parts.into_iter().enumerate() {
        let (plo, phi) = mesh.transformed(&placement)?.bounds();
        (lo, hi) = (lo.min(plo), hi.max(phi));
        env_triangles += mesh.triangle_count();
        let shape = world.add_shape(mesh).map_err(|e| e.context("ENV"))?;
        let desc = PartDesc {
            user: i as u64,
            ..PartDesc::default()
        };
        world.add_part(shape, placement, desc)?;
    }
    let shapes = match &a.object {
        Some(p) => vec![("object", load_mesh(p, "OBJECT")?)],
        None => builtin_shapes()?,
    };
    let mut shape_ids = Vec::new();
    let mut extent = 0.0f64;
    let mut object_triangles = Vec::new();
    let scale = object_scale(a.objects, a.crowded);
    for (name, mesh) in shapes {
        let mesh = if scale == 1.0 {
            mesh
        } else {
            let vertices = mesh.vertices().iter().map(|&v| v * scale).collect();
            Mesh::new(vertices, mesh.triangles().to_vec())
                .map_err(|e| e.context(format!("OBJECT {name} scaled by {scale}")))?
        };
        let (mlo, mhi) = mesh.bounds();
        extent = extent.max((mhi - mlo).max_element());
        object_triangles.push(format!("{name} {}", mesh.triangle_count()));
        shape_ids.push(
            world
                .add_shape(mesh)
                .map_err(|e| e.context(format!("OBJECT {name}")))?,
        );
    }

    let mut live = if a.edits > 0 {
        Some(Assembly::new::<K>(&mut world, a, lo, hi, extent)?)
    } else {
        None
    };
    if let Some(asm) = &live {
        shape_ids.push(asm.torus);
        object_triangles.push(format!("breathing torus {}", asm.rest.len()));
    }

    // Billiard paths inside the room, kept half an object away from its walls.
    let room = (hi - lo).min_element();
    if extent > 0.5 * room {
        eprintln!(
            "note: the objects ({extent:.3} across) are larger than half the room ({room:.3}): \
             they touch its walls and one another from the start"
        );
    }
    let margin = DVec3::splat(extent).min((hi - lo) * 0.49);
    let bounds = (lo + margin, hi - margin);
    let speed = 0.02 * extent;
    let mut rng = Rng::new(a.seed ^ 0xdead_beef);
    let path = |seed: u64, rng: &mut Rng| {
        let start = rng.in_box(bounds.0, bounds.1);
        Billiard::new(seed, start, rng.rotation(), speed, 0.03, bounds)
    };
    let mut paths = Vec::with_capacity(a.objects as usize);
    let mut ids: Vec<ObjectId> = Vec::with_capacity(a.objects as usize);
    // Placed in detect mode: whether an object touches something is all the placing asks,
    // and in a crowded scene a report of every contact takes far longer.
    let desc = |i: usize, mode| ObjectDesc {
        mode,
        user: i as u64,
        ..ObjectDesc::default()
    };
    for i in 0..a.objects as usize {
        let billiard = path(
            a.seed.wrapping_mul(1_000_003).wrapping_add(i as u64),
            &mut rng,
        );
        // With live edits, the breathing torus is the first object; others take turns.
        let shape = match &live {
            Some(asm) if i == 0 => asm.torus,
            Some(_) => shape_ids[i % (shape_ids.len() - 1)],
            None => shape_ids[i % shape_ids.len()],
        };
        ids.push(world.add_object(shape, billiard.pose(), desc(i, Mode::Detect))?);
        paths.push(billiard);
    }
    // Starts in free space, as in the single flight: objects that touch something are
    // placed again, a few rounds.
    let mut touching: Vec<usize> = Vec::with_capacity(a.objects as usize);
    let mut seen = vec![0u64; (a.objects as usize).div_ceil(64)];
    let mut progress = false;
    for round in 1..=20 {
        world.step()?;
        in_contact(&world, &mut seen, &mut touching);
        if touching.is_empty() {
            break;
        }
        if !a.json {
            eprint!(
                "\rplacing the objects apart: round {round} of at most 20, {} touching   ",
                touching.len()
            );
            progress = true;
        }
        for &i in &touching {
            let seed = rng.next_u64();
            paths[i] = path(seed, &mut rng);
            world.set_pose(ids[i], paths[i].pose())?;
        }
    }
    if progress {
        eprintln!();
    }
    // The touching pairs are the same in either mode, so the first frame's events are too;
    // stepped once in the run's mode, so that the first frame finds resting pairs answered.
    for (i, &id) in ids.iter().enumerate() {
        world.set_object_desc(id, desc(i, a.mode.options().mode))?;
    }
    world.step()?;
    let build_ms = start.elapsed().as_secs_f64() * 1e3;
    if !a.json {
        eprintln!(
            "{K}-DOP world: {} objects ({}), environment {env_triangles} triangles in {} parts; \
             built and placed in {build_ms:.0} ms on {} threads{}{}",
            a.objects,
            object_triangles.join(", "),
            world.part_count(),
            rayon::current_num_threads(),
            if a.unpinned { " (unpinned)" } else { "" },
            if a.pace > 0.0 {
                format!("; frames paced at {} ms", a.pace)
            } else {
                String::new()
            }
        );
        if scale != 1.0 {
            eprintln!(
                "objects scaled by {scale:.3} so that the room holds {} as sparsely as {FULL_SIZE_OBJECTS} \
                 (--crowded keeps them full size)",
                a.objects
            );
        }
    }

    let bar = flights::bar(a.steps, "frames");
    let mut t = Totals {
        parts_start: world.part_count(),
        ..Totals::default()
    };
    // Sampled frames of the tree's quality: a fresh build per sample, outside the timers.
    let stride = a.steps.div_ceil(500);
    // The first objects rest: a share of every shape, as `i % shapes` takes turns.
    let resting = (a.resting * f64::from(a.objects)).round() as usize;
    let frame_time = std::time::Duration::from_secs_f64(a.pace / 1e3);
    for frame in 0..a.steps {
        let frame_start = Instant::now();
        for (path, &id) in paths.iter_mut().zip(&ids).skip(resting) {
            world.set_pose(id, path.step())?;
        }
        let edit_us_before: f64 = t.edits.iter().map(|e| e.1).sum();
        if let Some(asm) = &mut live {
            asm.edit(&mut world, a.edits, &mut t)?;
            let t0 = Instant::now();
            let d = asm.breathe(&mut world, frame)?;
            t.deform.record(t0.elapsed().as_secs_f64() * 1e6);
            t.deform_refit += d.refit as u64;
            t.deform_rebuilds += u64::from(d.rebuilt);
        }
        let t0 = Instant::now();
        let s = world.step()?;
        let step_us = t0.elapsed().as_secs_f64() * 1e6;
        t.step.record(step_us);
        if live.is_some() && frame % stride == 0 {
            t.samples.push(crate::plots::EditSample {
                frame,
                cost_ratio: world.part_tree().cost_ratio(),
                step_us,
                edit_us: t.edits.iter().map(|e| e.1).sum::<f64>() - edit_us_before,
            });
        }
        t.broad_us += s.broad_us;
        t.narrow_us += s.narrow_us;
        t.broad_pairs += s.broad_pairs;
        t.narrow_pairs += s.narrow_pairs;
        t.resting_pairs += s.resting_pairs;
        t.colliding += s.colliding;
        t.contacts += s.contacts;
        t.contact_steps += u64::from(s.colliding > 0);
        t.begins += s.begins;
        t.ends += s.ends;
        t.refattened += s.refattened;
        // Objects that ended the frame in contact go back and turn round (§5.2.2).
        t.object_pairs += in_contact(&world, &mut seen, &mut touching);
        for &i in &touching {
            paths[i].bounce();
        }
        bar.inc(1);
        if let Some(rest) = frame_time.checked_sub(frame_start.elapsed()) {
            std::thread::sleep(rest);
        }
    }
    bar.finish_and_clear();
    if let Some(path) = &a.plot {
        crate::plots::edit_frames(path, &t.samples)?;
        if !a.json {
            eprintln!("plot written to {}", path.display());
        }
    }
    summary(a, &t, &world, build_ms, env_triangles);
    Ok(ExitCode::SUCCESS)
}

/// The objects (by index: their user value) in some colliding pair of the last step, into
/// `out`, sorted; returns the pairs of two objects. A bit per object (`seen`, a bit for
/// each, all clear, and left clear), so that a frame costs its pairs, not a sort of them.
fn in_contact<const K: usize>(world: &World<K>, seen: &mut [u64], out: &mut Vec<usize>) -> u64 {
    out.clear();
    let mut object_pairs = 0;
    let mut mark = |i: u64| seen[(i / 64) as usize] |= 1 << (i % 64);
    for p in world.pairs() {
        mark(p.a_user);
        if let Body::Object(_) = p.b {
            object_pairs += 1;
            mark(p.b_user);
        }
    }
    for (w, word) in seen.iter_mut().enumerate() {
        let mut bits = std::mem::take(word);
        while bits != 0 {
            out.push(w * 64 + bits.trailing_zeros() as usize);
            bits &= bits - 1;
        }
    }
    object_pairs
}

fn summary<const K: usize>(
    a: &DemoArgs,
    t: &Totals,
    world: &World<K>,
    build_ms: f64,
    env_triangles: usize,
) {
    let s = &t.step;
    let n = s.count().max(1) as f64;
    let (mean, p50, p99, max) = (s.mean(), s.percentile(0.5), s.percentile(0.99), s.max());
    let memory = world.memory_per_object();
    let bytes_per_object = memory.total();
    if a.json {
        let v = serde_json::json!({
            "objects": a.objects,
            "env_triangles": env_triangles,
            "threads": rayon::current_num_threads(),
            "pinned": !a.unpinned,
            "pace_ms": a.pace,
            "steps": s.count(),
            "contact_steps": t.contact_steps,
            "contacts": t.contacts,
            "mean_us": mean,
            "p50_us": p50,
            "p99_us": p99,
            "max_us": max,
            "broad_us_mean": t.broad_us / n,
            "narrow_us_mean": t.narrow_us / n,
            "broad_pairs_mean": t.broad_pairs as f64 / n,
            "narrow_pairs_mean": t.narrow_pairs as f64 / n,
            "resting_pairs_mean": t.resting_pairs as f64 / n,
            "resting": a.resting,
            "colliding_mean": t.colliding as f64 / n,
            "object_pairs": t.object_pairs,
            "begins": t.begins,
            "ends": t.ends,
            "refattened_mean": t.refattened as f64 / n,
            "bytes_per_object": bytes_per_object,
            "bytes_per_object_record": memory.record,
            "bytes_per_object_broad": memory.broad_phase,
            "bytes_per_object_step": memory.step,
            "build_ms": build_ms,
            "object_scale": object_scale(a.objects, a.crowded),
        });
        let mut v = v;
        if a.edits > 0 {
            let kind = |k: usize| {
                let (n, us) = t.edits[k];
                serde_json::json!({"count": n, "mean_us": us / n.max(1) as f64})
            };
            v["edits"] = serde_json::json!({
                "per_frame": a.edits, "parts_start": t.parts_start, "parts_end": world.part_count(),
                "move": kind(0), "remove": kind(1), "insert": kind(2), "replace": kind(3),
                "deform_us_p50": t.deform.percentile(0.5), "deform_us_max": t.deform.max(),
                "deform_refit_mean": t.deform_refit as f64 / n, "deform_rebuilds": t.deform_rebuilds,
                "tree_cost_ratio_last": t.samples.last().map(|s| s.cost_ratio),
                "tree_cost_ratio_max": t.samples.iter().map(|s| s.cost_ratio).fold(None, |m: Option<f64>, c| Some(m.map_or(c, |m| m.max(c)))),
                "tree_height": world.part_tree().height(),
            });
        }
        println!("{v}");
        return;
    }
    let contacts = if a.mode == ModeArg::Detect {
        "one per colliding pair in detect mode"
    } else {
        "intersecting triangle pairs"
    };
    println!("frames              {}", s.count());
    println!("step time (us)      mean {mean:.0}  p50 {p50:.0}  p99 {p99:.0}  max {max:.0}");
    println!(
        "  broad / narrow    {:.0} / {:.0} us per frame (bounds and sweep-and-prune / pairs and events)",
        t.broad_us / n,
        t.narrow_us / n
    );
    println!(
        "pairs per frame     {:.1} from the broad phase, {:.1} after filters and k-DOPs ({:.1} of them resting, answers kept), {:.2} colliding",
        t.broad_pairs as f64 / n,
        t.narrow_pairs as f64 / n,
        t.resting_pairs as f64 / n,
        t.colliding as f64 / n
    );
    println!(
        "frames in contact   {} ({} object-object pair-frames)",
        t.contact_steps, t.object_pairs
    );
    println!("contacts            {} ({contacts})", t.contacts);
    println!("events              {} begin, {} end", t.begins, t.ends);
    println!(
        "memory              {bytes_per_object} bytes per object: record {}, broad phase {}, step buffers {} (shapes, parts and per-thread workspaces apart)",
        memory.record, memory.broad_phase, memory.step
    );
    println!("build time          {build_ms:.0} ms");
    if a.edits > 0 {
        let kinds = ["moves", "removals", "insertions", "replaced meshes"];
        let list: Vec<String> = kinds
            .iter()
            .zip(&t.edits)
            .map(|(k, &(n, us))| format!("{n} {k} ({:.1} us)", us / n.max(1) as f64))
            .collect();
        println!(
            "edits               {} per frame: {}; {} parts at the end",
            a.edits,
            list.join(", "),
            world.part_count()
        );
        println!(
            "deformation         breathing torus p50 {:.0} us, max {:.0} us per frame; {:.0} nodes refit per frame, {} rebuilds",
            t.deform.percentile(0.5),
            t.deform.max(),
            t.deform_refit as f64 / n,
            t.deform_rebuilds
        );
        let costs = t.samples.iter().map(|s| s.cost_ratio);
        println!(
            "part tree           cost {:.3}x a fresh build's at the end, at most {:.3}x over {} sampled frames; height {}",
            t.samples.last().map_or(1.0, |s| s.cost_ratio),
            costs.fold(f64::NAN, f64::max),
            t.samples.len(),
            world.part_tree().height()
        );
    }
}

/// The edited assembly of `kdop demo --edits`: small parts of a few shapes placed at random
/// in the room, and the breathing torus's shape with its rest vertices.
struct Assembly {
    /// Shapes the parts are made of; a replaced mesh is another of these.
    shapes: Vec<kdop::ShapeId>,
    parts: Vec<kdop::PartHandle>,
    torus: kdop::ShapeId,
    rest: Vec<DVec3>,
    verts: Vec<DVec3>,
    /// The breathing torus's major radius.
    major: f64,
    lo: DVec3,
    hi: DVec3,
    rng: Rng,
    next_user: u64,
}

impl Assembly {
    fn new<const K: usize>(
        world: &mut World<K>,
        a: &DemoArgs,
        lo: DVec3,
        hi: DVec3,
        extent: f64,
    ) -> kdop::Result<Assembly> {
        let size = extent * 0.4;
        let meshes = [
            kdop::scene::box_mesh(DVec3::new(1.0, 0.5, 0.3) * size, 2, false)?,
            icosphere(size * 0.6, 1)?,
            cylinder(size * 0.3, size * 2.0, 12, 2)?,
            torus(size * 0.7, size * 0.2, 16, 8)?,
        ];
        let shapes = meshes
            .into_iter()
            .map(|m| world.add_shape(m))
            .collect::<kdop::Result<Vec<_>>>()?;
        let major = extent * 0.5;
        let rest = torus(major, extent * 0.18, 48, 16)?;
        let verts = rest.vertices().to_vec();
        let torus = world.add_shape_with(rest, &kdop::BuildOptions::DEFORMING)?;
        let mut asm = Assembly {
            shapes,
            parts: Vec::new(),
            torus,
            rest: verts.clone(),
            verts,
            major,
            lo,
            hi,
            rng: Rng::new(a.seed ^ 0x5eed),
            next_user: 1_000_000,
        };
        for _ in 0..a.parts {
            let (shape, placement) = (asm.random_shape(), asm.placement()?);
            asm.insert(world, shape, placement)?;
        }
        Ok(asm)
    }

    fn placement(&mut self) -> kdop::Result<Pose> {
        let q = self.rng.rotation();
        let at = self.rng.in_box(self.lo, self.hi);
        Pose::new(glam::DMat3::from_quat(q), at)
    }

    fn random_shape(&mut self) -> kdop::ShapeId {
        self.shapes[(self.rng.next_u64() % self.shapes.len() as u64) as usize]
    }

    fn insert<const K: usize>(
        &mut self,
        world: &mut World<K>,
        shape: kdop::ShapeId,
        placement: Pose,
    ) -> kdop::Result<()> {
        let desc = PartDesc {
            user: self.next_user,
            ..PartDesc::default()
        };
        self.next_user += 1;
        self.parts.push(world.add_part(shape, placement, desc)?);
        Ok(())
    }

    /// `n` random edits; each world call timed into `t.edits` (its inputs drawn before).
    fn edit<const K: usize>(
        &mut self,
        world: &mut World<K>,
        n: u32,
        t: &mut Totals,
    ) -> kdop::Result<()> {
        for _ in 0..n {
            let r = self.rng.f64();
            let kind = if self.parts.is_empty() || r < 0.25 {
                2
            } else if r < 0.5 {
                1
            } else if r < 0.9 {
                0
            } else {
                3
            };
            let j = (self.rng.next_u64() % self.parts.len().max(1) as u64) as usize;
            let (shape, placement) = (self.random_shape(), self.placement()?);
            let t0 = Instant::now();
            match kind {
                0 => world.set_part_placement(self.parts[j], placement)?,
                1 => world.remove_part(self.parts.swap_remove(j))?,
                2 => self.insert(world, shape, placement)?,
                _ => world.set_part_shape(self.parts[j], shape)?,
            }
            t.edits[kind].1 += t0.elapsed().as_secs_f64() * 1e6;
            t.edits[kind].0 += 1;
        }
        Ok(())
    }

    /// The torus breathes: its tube swells and a ripple runs round it.
    fn breathe<const K: usize>(
        &mut self,
        world: &mut World<K>,
        frame: u64,
    ) -> kdop::Result<kdop::DeformStats> {
        let t = frame as f64 * 0.15;
        let swell = 1.0 + 0.25 * t.sin();
        for (v, &p) in self.verts.iter_mut().zip(&self.rest) {
            // The point of the tube's centre circle nearest the vertex.
            let ring = DVec3::new(p.x, p.y, 0.0);
            let centre = ring.normalize_or_zero() * self.major;
            let ripple = 1.0 + 0.1 * (p.y.atan2(p.x) * 5.0 + t).sin();
            *v = centre + (p - centre) * swell * ripple;
        }
        world.deform_shape(self.torus, &self.verts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Beyond 10,000 objects the shapes shrink with the cube root of the count, so the
    /// crowd's volume stays that of 10,000 (eight times as many at half the size).
    #[test]
    fn large_crowds_keep_the_density_of_ten_thousand() {
        assert_eq!(object_scale(300, false), 1.0);
        assert_eq!(object_scale(FULL_SIZE_OBJECTS, false), 1.0);
        assert!((object_scale(8 * FULL_SIZE_OBJECTS, false) - 0.5).abs() < 1e-12);
        assert!((object_scale(1_000_000, false) - 0.1f64.powf(2.0 / 3.0)).abs() < 1e-12);
        assert_eq!(object_scale(1_000_000, true), 1.0);
    }
}
