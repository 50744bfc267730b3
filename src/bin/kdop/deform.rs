//! `kdop bench deform`: a deforming sheet (a grid of triangles in the plane, waving), its
//! hierarchy refit each frame by [`FlyingObject::deform`], against parry3d's deformable
//! `TriMesh::set_vertices` (feature `peers`) on the same vertices, in the same run.
//!
//! Three motions (`--motion`): `wave`, a travelling wave over the whole sheet (every vertex
//! moves more than the margin, so nearly every leaf escapes); `poke`, a bump rising and
//! falling in a disc of a fifth of the sheet's area (the rest still); and `still`, the
//! bump held (the same vertices given every frame); and `dent`, a bump of radius 0.1 (a
//! local edit of a few hundred vertices). The default runs `wave` and `poke`. With
//! `--some`, kdop is given only the vertices the motion may move
//! ([`FlyingObject::deform_some`]) instead of all of them.
//!
//! `--worn`: the sheet as a world's shape, waving, its positions dealt out to other
//! vertices from frame 1 on (a tree worn past any refit or renewal of subtrees); each
//! frame's `World::deform_shape` timed with the whole rebuild in slices, within the call,
//! and on a thread of its own.
//!
//! `--twist`: the sheet as a world's shape, a disc of a fifth of it wound into a tighter
//! swirl each frame (the subtrees under the disc wear, and in time wind into each other);
//! each frame's `World::deform_shape` timed with worn subtrees renewed in bounded slices and
//! without, and the tree's surface-area cost over its cost as built at the end.

use crate::stats::TimeStats;
use clap::Args;
use glam::DVec3;
use kdop::{BuildOptions, FlyingObject, Mesh};
use std::process::ExitCode;
use std::time::Instant;

/// Options of `kdop bench deform`.
#[derive(Args, Debug)]
pub struct DeformArgs {
    /// Triangles of the sheet (rounded to a square grid), comma-separated for several runs.
    #[arg(long, value_delimiter = ',', default_value = "100000,1000000")]
    triangles: Vec<usize>,
    /// Frames timed per motion (after one warm-up frame).
    #[arg(long, default_value_t = 20)]
    frames: usize,
    /// Threads (rayon) for kdop's refit, each pinned to a core of its own when there are
    /// enough; parry's refit is single-threaded.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Node margin, as a share of the node's largest extent.
    #[arg(long, default_value_t = 0.05)]
    margin: f64,
    /// Motions to run, comma-separated: `wave` (every leaf escapes), `poke` (a fifth
    /// does), `still` (none: the vertices given again), `dent` (a few hundred vertices).
    #[arg(long, value_delimiter = ',', default_value = "wave,poke")]
    motion: Vec<Motion>,
    /// kdop is given only the vertices the motion may move (`FlyingObject::deform_some`:
    /// the bump's disc for `poke`, `still` and `dent`, all of them for `wave`), not all
    /// of them.
    #[arg(long)]
    some: bool,
    /// Triangles per leaf of the sheet's hierarchy (default `BuildOptions::DEFORMING`'s;
    /// 4 is the rigid default, `BuildOptions::FLYING`).
    #[arg(long, default_value_t = BuildOptions::DEFORMING.leaf_size)]
    leaf: u32,
    /// One JSON line per size and motion.
    #[arg(long)]
    json: bool,
    /// Instead: a tree worn past any renewal of subtrees in a world, rebuilt whole in
    /// slices (`WorldOptions::renew_budget`), within the call and on a thread
    /// (`WorldOptions::rebuild_frames`), per frame.
    #[arg(long)]
    worn: bool,
    /// Instead: a swirl wound tighter each frame in a world, with worn subtrees renewed
    /// in slices (`WorldOptions::renew_budget`) and without.
    #[arg(long)]
    twist: bool,
    /// A real mesh instead of the sheet (`--triangles` is then its count): scaled so that its
    /// larger x or y extent is the sheet's 10 and centred where the sheet is, each vertex
    /// moved along z by what the motion gives at its x and y. Real meshes' vertex and
    /// triangle orders are not a grid's, nor are their triangles' sizes.
    #[arg(long)]
    mesh: Option<std::path::PathBuf>,
}

/// How the sheet moves in `kdop bench deform`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Motion {
    /// A travelling wave over the whole sheet.
    Wave,
    /// A bump rising and falling over a fifth of the sheet.
    Poke,
    /// The bump of the first frame, held: nothing moves after it (what a resting
    /// deformable costs).
    Still,
    /// A dent of radius 0.1 (a few hundred vertices of a million-triangle sheet) pressed
    /// in and out: a local edit.
    Dent,
}

impl Motion {
    /// The radius of its bump around the sheet's centre (none for the wave).
    fn radius(self) -> f64 {
        match self {
            Motion::Wave => 0.0,
            Motion::Poke | Motion::Still => 2.5,
            Motion::Dent => 0.1,
        }
    }
}

/// The sheet: `m` × `m` cells of two triangles over the unit square, scaled to 10.
fn sheet(m: usize) -> Mesh {
    let at = |i: usize, j: usize| (i * (m + 1) + j) as u32;
    let mut v = Vec::with_capacity((m + 1) * (m + 1));
    for i in 0..=m {
        for j in 0..=m {
            v.push(DVec3::new(i as f64, j as f64, 0.0) * (10.0 / m as f64));
        }
    }
    let mut t = Vec::with_capacity(2 * m * m);
    for i in 0..m {
        for j in 0..m {
            t.push([at(i, j), at(i + 1, j), at(i + 1, j + 1)]);
            t.push([at(i, j), at(i + 1, j + 1), at(i, j + 1)]);
        }
    }
    Mesh::new(v, t).expect("a valid grid")
}

/// The distance of rest point `p` from the sheet's centre, where bumps rise.
fn from_centre(p: DVec3) -> f64 {
    ((p.x - 5.0).powi(2) + (p.y - 5.0).powi(2)).sqrt()
}

/// The sheet's vertices at frame `f` of a motion: a bump of radius `bump` (`poke`'s 2.5
/// is a fifth of the sheet) rising and falling, or the wave where `bump` is 0.
fn frame(rest: &[DVec3], bump: f64, f: usize, out: &mut Vec<DVec3>) {
    out.clear();
    let t = f as f64 * 0.3;
    out.extend(rest.iter().map(|&p| {
        let z = if bump > 0.0 {
            let d = from_centre(p);
            if d < bump { (bump - d) * t.sin() } else { 0.0 }
        } else {
            0.5 * (p.x * 1.3 + t).sin() * (p.y * 0.9 - t).cos()
        };
        DVec3::new(p.x, p.y, p.z + z)
    }));
}

/// The mesh at `path` scaled and moved so that its larger x or y extent is 10 and its x–y
/// centre the sheet's (5, 5), where the motions are made.
fn on_the_sheet(path: &std::path::Path) -> kdop::Result<Mesh> {
    let m = kdop::io::formats::load_mesh(path)?;
    let (lo, hi) = m.bounds();
    let s = 10.0 / (hi.x - lo.x).max(hi.y - lo.y).max(f64::MIN_POSITIVE);
    let centre = (lo + hi) / 2.0;
    let to = kdop::Pose::new(
        glam::DMat3::from_diagonal(DVec3::splat(s)),
        DVec3::new(5.0, 5.0, 0.0) - centre * s,
    )?;
    m.transformed(&to)
}

pub fn run(a: &DeformArgs) -> kdop::Result<ExitCode> {
    let pool = crate::common::thread_pool(a.threads.max(1))?;
    if a.mesh.is_some() && (a.worn || a.twist) {
        return Err(kdop::Error::InvalidParameter {
            name: "mesh",
            reason: "--worn and --twist deform the sheet: not with --mesh".into(),
        });
    }
    if a.worn {
        return pool.install(|| worn(a));
    }
    if a.twist {
        return pool.install(|| twist(a));
    }
    let real = a.mesh.as_deref().map(on_the_sheet).transpose()?;
    let sizes = match &real {
        Some(m) => vec![m.triangle_count()],
        None => a.triangles.clone(),
    };
    for &n in &sizes {
        let rest = match &real {
            Some(m) => m.clone(),
            None => sheet(((n as f64 / 2.0).sqrt().round() as usize).max(1)),
        };
        let tris = rest.triangle_count();
        for &m in &a.motion {
            let motion = match m {
                Motion::Wave => "wave",
                Motion::Poke => "poke",
                Motion::Still => "still",
                Motion::Dent => "dent",
            };
            let mut obj = FlyingObject::<18>::new(rest.clone(), &a.build())?;
            let nodes = obj.bvh().node_count();
            let mut verts = Vec::new();
            // With `--some`, the vertices the motion may move, and their positions.
            let listed: Vec<u32> = (0..rest.vertices().len() as u32)
                .filter(|&i| {
                    m == Motion::Wave || from_centre(rest.vertices()[i as usize]) < m.radius()
                })
                .collect();
            let mut positions = Vec::with_capacity(listed.len());
            let mut kdop_t = TimeStats::default();
            let (mut escaped, mut leaves) = (0u64, 0u64);
            #[cfg(feature = "peers")]
            let mut parry = peer::Sheet::new(&rest);
            #[cfg(feature = "peers")]
            let mut parry_t = TimeStats::default();
            for f in 0..=a.frames {
                let at = if m == Motion::Still { 1 } else { f + 1 };
                frame(rest.vertices(), m.radius(), at, &mut verts);
                positions.clear();
                if a.some {
                    positions.extend(listed.iter().map(|&i| verts[i as usize]));
                }
                let t0 = Instant::now();
                let stats = if a.some {
                    pool.install(|| obj.deform_some(&listed, &positions, a.margin))?
                } else {
                    pool.install(|| obj.deform(&verts, a.margin))?
                };
                let us = t0.elapsed().as_secs_f64() * 1e6;
                #[cfg(feature = "peers")]
                let parry_us = parry.deform(&verts);
                if f > 0 {
                    kdop_t.record(us);
                    escaped += u64::from(stats.escaped_leaves);
                    leaves += u64::from(stats.leaves);
                    #[cfg(feature = "peers")]
                    parry_t.record(parry_us);
                }
            }
            let p50 = kdop_t.percentile(0.5);
            let share = escaped as f64 / leaves.max(1) as f64;
            #[cfg(feature = "peers")]
            let parry_ms = Some(parry_t.percentile(0.5) / 1e3);
            #[cfg(not(feature = "peers"))]
            let parry_ms: Option<f64> = None;
            if a.json {
                println!(
                    "{}",
                    serde_json::json!({
                        "triangles": tris, "motion": motion, "threads": a.threads,
                        "some": a.some, "leaf_size": a.leaf,
                        "nodes": nodes, "escaped_share": share,
                        "kdop_ms_p50": p50 / 1e3, "kdop_ms_mean": kdop_t.mean() / 1e3,
                        "kdop_ms_max": kdop_t.max() / 1e3,
                        "mnodes_per_s": nodes as f64 / p50,
                        "parry_ms_p50": parry_ms,
                    })
                );
            } else {
                let peer = parry_ms.map_or_else(
                    || "parry3d: build with --features peers".to_string(),
                    |p| format!("parry3d set_vertices {p:.2} ms ({:.2}x)", p * 1e3 / p50),
                );
                println!(
                    "{tris} triangles, {motion}, leaves of {}: {:.0} % of leaves escaped; kdop {} \
                     p50 {:.2} ms, mean {:.2} ms, max {:.2} ms ({:.0} M nodes/s, {} threads); {peer}",
                    a.leaf,
                    share * 100.0,
                    if a.some { "deform_some" } else { "deform" },
                    p50 / 1e3,
                    kdop_t.mean() / 1e3,
                    kdop_t.max() / 1e3,
                    nodes as f64 / p50,
                    a.threads
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

impl DeformArgs {
    /// The sheet's build options: `BuildOptions::DEFORMING` with the leaf size asked for.
    fn build(&self) -> BuildOptions {
        BuildOptions {
            leaf_size: self.leaf,
            ..BuildOptions::DEFORMING
        }
    }
}

/// A world of `options` with the sheet as its one shape (built with `build`) and one
/// object of it, stepped once.
fn sheet_world(
    rest: &Mesh,
    options: kdop::WorldOptions,
    build: &BuildOptions,
) -> kdop::Result<(kdop::World<18>, kdop::ShapeId)> {
    let mut w = kdop::World::<18>::with_options(options)?;
    let s = w.add_shape_with(rest.clone(), build)?;
    w.add_object(s, kdop::Pose::IDENTITY, kdop::ObjectDesc::default())?;
    w.step()?;
    Ok((w, s))
}

/// `--worn`: per size, the frames of a dealt-then-waving sheet in a world: the whole
/// rebuild in slices (the default), within the call, and on a thread.
fn worn(a: &DeformArgs) -> kdop::Result<ExitCode> {
    let defaults = kdop::WorldOptions::default();
    let ways = [
        ("rebuilt in slices", defaults.renew_budget, 0),
        ("rebuilt within the call", 0, 0),
        ("rebuilt on a thread", 0, defaults.rebuild_frames),
    ];
    for &n in &a.triangles {
        let m = ((n as f64 / 2.0).sqrt().round() as usize).max(1);
        let rest = sheet(m);
        let tris = rest.triangle_count();
        // A fixed random permutation of the vertices (Fisher–Yates).
        let mut deal: Vec<usize> = (0..rest.vertices().len()).collect();
        let mut rng = kdop::scene::Rng::new(0x2545_f491_4f6c_dd1d);
        for i in (1..deal.len()).rev() {
            deal.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
        }
        for (how, budget, frames) in ways {
            let (mut w, s) = sheet_world(
                &rest,
                kdop::WorldOptions {
                    renew_budget: budget,
                    rebuild_frames: frames,
                    ..defaults
                },
                &a.build(),
            )?;
            let mut verts = Vec::new();
            let mut times = TimeStats::default();
            let (mut taken, mut taken_ms, mut slices) = (None, 0.0, 0);
            for f in 0..=a.frames.max(frames as usize + 2) {
                frame(rest.vertices(), 0.0, f + 1, &mut verts);
                if f >= 1 {
                    // From frame 1 on, the positions dealt out to other vertices: every
                    // triangle spans the sheet, and no refit or subtree can keep this tree.
                    let moved: Vec<DVec3> = deal.iter().map(|&i| verts[i]).collect();
                    verts = moved;
                }
                let t0 = Instant::now();
                let stats = w.deform_shape(s, &verts)?;
                let ms = t0.elapsed().as_secs_f64() * 1e3;
                w.step()?;
                if f > 0 {
                    times.record(ms * 1e3);
                }
                slices += u32::from(stats.rebuilding && budget > 0);
                if stats.rebuilt && taken.is_none() {
                    (taken, taken_ms) = (Some(f), ms);
                }
            }
            if a.json {
                println!(
                    "{}",
                    serde_json::json!({
                        "triangles": tris, "renew_budget": budget, "rebuild_frames": frames,
                        "slices": slices, "taken_over_at": taken, "take_over_ms": taken_ms,
                        "ms_p50": times.percentile(0.5) / 1e3, "ms_max": times.max() / 1e3,
                    })
                );
            } else {
                println!(
                    "{tris} triangles worn at frame 1, {how}: taken over at frame {} after {slices} \
                     slices, that frame {taken_ms:.1} ms; frames p50 {:.1} ms, max {:.1} ms",
                    taken.map_or("-".into(), |f| f.to_string()),
                    times.percentile(0.5) / 1e3,
                    times.max() / 1e3
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The sheet's vertices at frame `f` of the swirl: points within 2.5 of the centre turned
/// about it by `f` times a quarter turn at the centre, falling to none at the rim.
fn swirl(rest: &[DVec3], f: usize, out: &mut Vec<DVec3>) {
    out.clear();
    out.extend(rest.iter().map(|&p| {
        let (dx, dy) = (p.x - 5.0, p.y - 5.0);
        let d = (dx * dx + dy * dy).sqrt();
        if d >= 2.5 {
            return p;
        }
        let a = f as f64 * std::f64::consts::FRAC_PI_2 * (1.0 - d / 2.5).powi(2);
        let (s, c) = a.sin_cos();
        DVec3::new(5.0 + dx * c - dy * s, 5.0 + dx * s + dy * c, 0.0)
    }));
}

/// `--twist`: per size, the frames of a swirling sheet in a world, with worn subtrees
/// renewed and without.
fn twist(a: &DeformArgs) -> kdop::Result<ExitCode> {
    for &n in &a.triangles {
        let m = ((n as f64 / 2.0).sqrt().round() as usize).max(1);
        let rest = sheet(m);
        let tris = rest.triangle_count();
        let budget = kdop::WorldOptions::default().renew_budget;
        for renew in [0, budget] {
            let (mut w, s) = sheet_world(
                &rest,
                kdop::WorldOptions {
                    renew_budget: renew,
                    ..kdop::WorldOptions::default()
                },
                &a.build(),
            )?;
            let mut verts = Vec::new();
            let mut times = TimeStats::default();
            let (mut renewed, mut rebuilt, mut started, mut last) = (0u64, None, None, None);
            for f in 1..=a.frames.max(2) {
                swirl(rest.vertices(), f, &mut verts);
                let t0 = Instant::now();
                let stats = w.deform_shape(s, &verts)?;
                times.record(t0.elapsed().as_secs_f64() * 1e6);
                w.step()?;
                renewed += stats.renewed;
                if stats.rebuilding || stats.rebuilt {
                    started.get_or_insert(f);
                }
                if stats.rebuilt {
                    rebuilt.get_or_insert(f);
                }
                last = Some(stats);
            }
            let last = last.expect("frames ran");
            if a.json {
                println!(
                    "{}",
                    serde_json::json!({
                        "triangles": tris, "renew_budget": renew,
                        "ms_p50": times.percentile(0.5) / 1e3, "ms_max": times.max() / 1e3,
                        "renew_work": renewed, "whole_started_at": started, "rebuilt_at": rebuilt,
                        "cost_ratio": last.cost_ratio, "top_cost_ratio": last.top_cost_ratio,
                    })
                );
            } else {
                println!(
                    "{tris} triangles swirled over {} frames, renew_budget {renew}: frames p50 \
                     {:.2} ms, max {:.2} ms; renewal work {renewed}, whole rebuild from frame \
                     {} to {}; cost {:.2} (top {:.2}) of the built tree's",
                    a.frames.max(2),
                    times.percentile(0.5) / 1e3,
                    times.max() / 1e3,
                    started.map_or("-".into(), |f: usize| f.to_string()),
                    rebuilt.map_or("-".into(), |f: usize| f.to_string()),
                    last.cost_ratio,
                    last.top_cost_ratio
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(feature = "peers")]
mod peer {
    use glam::DVec3;
    use parry3d::math::Vector;
    use parry3d::shape::{TriMesh, TriMeshFlags};
    use std::time::Instant;

    /// parry3d's deformable mesh of the sheet.
    pub struct Sheet {
        mesh: TriMesh,
        verts: Vec<Vector>,
    }

    impl Sheet {
        pub fn new(m: &kdop::Mesh) -> Sheet {
            let v: Vec<Vector> = m
                .vertices()
                .iter()
                .map(|p| Vector::new(p.x as f32, p.y as f32, p.z as f32))
                .collect();
            let mesh = TriMesh::with_flags(v, m.triangles().to_vec(), TriMeshFlags::DEFORMABLE)
                .expect("a valid grid");
            Sheet {
                mesh,
                verts: Vec::new(),
            }
        }

        /// Sets the vertices; returns the microseconds of `set_vertices` alone.
        pub fn deform(&mut self, v: &[DVec3]) -> f64 {
            self.verts.clear();
            self.verts.extend(
                v.iter()
                    .map(|p| Vector::new(p.x as f32, p.y as f32, p.z as f32)),
            );
            let t0 = Instant::now();
            self.mesh.set_vertices(&self.verts);
            t0.elapsed().as_secs_f64() * 1e6
        }
    }
}
