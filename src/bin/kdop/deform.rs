//! `kdop bench deform`: a deforming sheet (a grid of triangles in the plane, waving), its
//! hierarchy refit each frame by [`FlyingObject::deform`], against parry3d's deformable
//! `TriMesh::set_vertices` (feature `peers`) on the same vertices, in the same run.
//!
//! Two motions: `wave`, a travelling wave over the whole sheet (every vertex moves more
//! than the margin, so nearly every leaf escapes), and `poke`, a bump rising and falling in
//! a disc of a fifth of the sheet's area (the rest still).
//!
//! `--worn`: the sheet as a world's shape, its vertices shuffled once (a tree worn past
//! any refit) and then waving; each frame's `World::deform_shape` timed with the rebuild
//! within the call and with the rebuild on a thread of its own.

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
    /// Threads (rayon) for kdop's refit; parry's refit is single-threaded.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Node margin, as a share of the node's largest extent.
    #[arg(long, default_value_t = 0.05)]
    margin: f64,
    /// One JSON line per size and motion.
    #[arg(long)]
    json: bool,
    /// Instead: the worn-shape rebuild in a world, within the call against on a thread
    /// (`WorldOptions::rebuild_frames`, default and 0), per frame.
    #[arg(long)]
    worn: bool,
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

/// The sheet's vertices at frame `f` of a motion.
fn frame(rest: &[DVec3], poke: bool, f: usize, out: &mut Vec<DVec3>) {
    out.clear();
    let t = f as f64 * 0.3;
    out.extend(rest.iter().map(|&p| {
        let z = if poke {
            // A bump of radius 2.5 (a fifth of the sheet), rising and falling.
            let d = ((p.x - 5.0).powi(2) + (p.y - 5.0).powi(2)).sqrt();
            if d < 2.5 { (2.5 - d) * t.sin() } else { 0.0 }
        } else {
            0.5 * (p.x * 1.3 + t).sin() * (p.y * 0.9 - t).cos()
        };
        DVec3::new(p.x, p.y, z)
    }));
}

pub fn run(a: &DeformArgs) -> kdop::Result<ExitCode> {
    let pool = crate::common::thread_pool(a.threads.max(1))?;
    if a.worn {
        return pool.install(|| worn(a));
    }
    for &n in &a.triangles {
        let m = ((n as f64 / 2.0).sqrt().round() as usize).max(1);
        let rest = sheet(m);
        let tris = rest.triangle_count();
        for poke in [false, true] {
            let motion = if poke { "poke" } else { "wave" };
            let mut obj = FlyingObject::<18>::new(rest.clone(), &BuildOptions::FLYING)?;
            let nodes = obj.bvh().node_count();
            let mut verts = Vec::new();
            let mut kdop_t = TimeStats::default();
            let (mut escaped, mut leaves) = (0u64, 0u64);
            #[cfg(feature = "peers")]
            let mut parry = peer::Sheet::new(&rest);
            #[cfg(feature = "peers")]
            let mut parry_t = TimeStats::default();
            for f in 0..=a.frames {
                frame(rest.vertices(), poke, f + 1, &mut verts);
                let t0 = Instant::now();
                let stats = pool.install(|| obj.deform(&verts, a.margin))?;
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
                        "nodes": nodes, "escaped_share": share,
                        "kdop_ms_p50": p50 / 1e3, "kdop_ms_max": kdop_t.max() / 1e3,
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
                    "{tris} triangles, {motion}: {:.0} % of leaves escaped; kdop deform p50 \
                     {:.2} ms, max {:.2} ms ({:.0} M nodes/s, {} threads); {peer}",
                    share * 100.0,
                    p50 / 1e3,
                    kdop_t.max() / 1e3,
                    nodes as f64 / p50,
                    a.threads
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `--worn`: per size, the frames of a shuffled-then-waving sheet in a world, with the
/// rebuild within the call and on a thread.
fn worn(a: &DeformArgs) -> kdop::Result<ExitCode> {
    for &n in &a.triangles {
        let m = ((n as f64 / 2.0).sqrt().round() as usize).max(1);
        let rest = sheet(m);
        let tris = rest.triangle_count();
        let default = kdop::WorldOptions::default().rebuild_frames;
        for frames in [0, default] {
            let mut w = kdop::World::<18>::with_options(kdop::WorldOptions {
                rebuild_frames: frames,
                ..kdop::WorldOptions::default()
            })?;
            let s = w.add_shape(rest.clone())?;
            w.add_object(s, kdop::Pose::IDENTITY, kdop::ObjectDesc::default())?;
            w.step()?;
            let mut verts = Vec::new();
            let mut times = TimeStats::default();
            let (mut taken, mut taken_ms) = (None, 0.0);
            for f in 0..=a.frames.max(frames as usize + 2) {
                frame(rest.vertices(), false, f + 1, &mut verts);
                if f == 1 {
                    // The same positions dealt out again: no refit can keep this tree.
                    let k = verts.len();
                    for i in 1..k {
                        verts.swap(i, (i * 7919) % (i + 1));
                    }
                }
                let t0 = Instant::now();
                let stats = w.deform_shape(s, &verts)?;
                let ms = t0.elapsed().as_secs_f64() * 1e3;
                w.step()?;
                if f > 0 {
                    times.record(ms * 1e3);
                }
                if stats.rebuilt {
                    (taken, taken_ms) = (Some(f), ms);
                }
            }
            let how = if frames == 0 {
                "rebuilt within the call".to_string()
            } else {
                format!("rebuilt on a thread over {frames} deformations")
            };
            if a.json {
                println!(
                    "{}",
                    serde_json::json!({
                        "triangles": tris, "rebuild_frames": frames, "taken_over_at": taken,
                        "take_over_ms": taken_ms, "ms_p50": times.percentile(0.5) / 1e3,
                        "ms_max": times.max() / 1e3,
                    })
                );
            } else {
                println!(
                    "{tris} triangles worn at frame 1, {how}: taken over at frame {}, that frame {taken_ms:.1} ms; frames p50 {:.1} ms, max {:.1} ms",
                    taken.map_or("-".into(), |f| f.to_string()),
                    times.percentile(0.5) / 1e3,
                    times.max() / 1e3
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
