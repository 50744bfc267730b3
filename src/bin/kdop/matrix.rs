//! `kdop bench matrix`: every real mesh as the environment against every one as the flying
//! object, on seeded near poses ([`kdop::scene::near_poses`]), detect and report, for each
//! k-DOP, kdop's OBB back-end, the two meshes as two flying objects (the world's
//! object-against-object query) and FCL (python-fcl, OBBRSS, in a virtual environment made
//! here from PyPI), in one run on the same poses. Every report is checked: against the
//! brute-force oracle where the cell is small enough, else against FCL's pairs, each pair
//! on which they differ decided by the exact triangle test; and every back-end against the
//! others. Writes a section of `docs/benchmarks.md` and two heat maps.

use crate::common::{Bv, KArg, OBB_LEAF, load_mesh};
use crate::with_k;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use kdop::{
    BuildOptions, Environment, FlyingObject, Mesh, ObbQueryState, ObbTree, Pose, QueryOptions,
    QueryState,
};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

/// The FCL side, written into the work folder and run there.
const FCL_SCRIPT: &str = include_str!("../../../benches/fcl_matrix.py");
/// The python-fcl release measured (the newest on PyPI when the benchmark was written).
const FCL_PACKAGES: [&str; 2] = ["python-fcl==0.7.0.11", "numpy<3"];
/// Where the section of `docs/benchmarks.md` starts and ends.
const BEGIN: &str = "<!-- kdop bench matrix: begin -->";
const END: &str = "<!-- kdop bench matrix: end -->";

#[derive(Args, Debug)]
pub struct MatrixArgs {
    /// Folder of meshes (OBJ, STL, PLY): each is an environment and a flying object.
    #[arg(long, default_value = "../shared/data/meshes")]
    pub meshes: PathBuf,
    /// Near poses per cell.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub poses: u64,
    /// Seed of the poses.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Only these mesh files (names, comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Work folder: meshes and poses for FCL, FCL's virtual environment, raw results.
    #[arg(long, default_value = "target/matrix")]
    pub work: PathBuf,
    /// Run kdop alone (no ratios; reports checked by the oracle where it is small enough).
    #[arg(long)]
    pub no_fcl: bool,
    /// The page whose matrix section is rewritten (between its markers, else appended);
    /// the heat maps go to `img/` beside it. `-` writes the section to standard output
    /// and the heat maps to `img/` in the work folder, so that a partial run (`--only`)
    /// leaves the page's figures as they are.
    #[arg(long, default_value = "docs/benchmarks.md")]
    pub doc: PathBuf,
    /// Each cell's poses are run again, in order, until a mode has taken this long (for
    /// kdop and FCL alike): means of microsecond queries need more than ten samples.
    #[arg(long, default_value_t = 2.0)]
    pub min_ms: f64,
    /// Each mode of a cell is timed this many times over, each round from a fresh query
    /// state (for kdop and FCL alike), and the round of the lowest mean is kept: a stall of
    /// the machine in one round does not decide a cell.
    #[arg(long, default_value_t = 3)]
    pub rounds: u32,
    /// Cells whose triangle counts multiply to at most this are checked against brute force.
    #[arg(long, default_value_t = 100_000_000)]
    pub oracle_limit: u64,
}

/// A back-end of the matrix: an environment of a bounding-volume kind against a flying
/// object, or the two meshes as two flying objects (`FlyingObject::collide_with`, the world's
/// object-against-object query) under the default k-DOP.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Backend {
    Env(Bv),
    Objects,
}

/// The back-ends measured, default first: its reports are the ones the others must equal.
const BACKENDS: [Backend; 6] = [
    Backend::Env(Bv::Dop(KArg::K18)),
    Backend::Objects,
    Backend::Env(Bv::Dop(KArg::K6)),
    Backend::Env(Bv::Dop(KArg::K14)),
    Backend::Env(Bv::Dop(KArg::K26)),
    Backend::Env(Bv::Obb),
];

/// Where kdop's OBB back-end is in [`BACKENDS`]: every cell is compared with it.
const OBB_AT: usize = 5;

/// Where the object-against-object back-end is in [`BACKENDS`].
const OBJECTS_AT: usize = 1;

// The two places above follow the list, or the program does not build.
const _: () = assert!(
    matches!(BACKENDS[OBB_AT], Backend::Env(Bv::Obb))
        && matches!(BACKENDS[OBJECTS_AT], Backend::Objects)
);

fn backend_name(b: Backend) -> String {
    match b {
        Backend::Env(Bv::Dop(KArg::K18)) => "kdop 18-DOP (default)".into(),
        Backend::Env(Bv::Dop(k)) => format!("kdop {}-DOP", k.k()),
        Backend::Env(Bv::Obb) => "kdop OBB".into(),
        Backend::Objects => "kdop 18-DOP, object against object".into(),
    }
}

/// Per cell and mode, what one back-end did: the answers and counts of the first pass
/// over the poses, the time of every pass.
#[derive(Clone, Debug, Default)]
struct Run {
    total_us: f64,
    queries: u64,
    collides: Vec<bool>,
    nv: u64,
    np: u64,
    nu: u64,
}

impl Run {
    fn mean(&self) -> f64 {
        self.total_us / self.queries.max(1) as f64
    }

    fn add(&mut self, us: f64) {
        self.total_us += us;
        self.queries += 1;
    }

    fn answer(&mut self, collides: bool, stats: kdop::QueryStats) {
        self.collides.push(collides);
        (self.nv, self.np, self.nu) = (self.nv + stats.nv, self.np + stats.np, self.nu + stats.nu);
    }

    /// Whether the passes so far took `min_ms` (a single pose is never repeated: its
    /// second pass would find the pose's bounds already computed).
    fn done(&self, min_ms: f64, poses: usize) -> bool {
        poses < 2 || self.total_us >= min_ms * 1e3
    }
}

/// One cell: environment mesh, object mesh, poses.
struct Cell {
    env: usize,
    object: usize,
    poses: Vec<Pose>,
}

type Pairs = Vec<Vec<[u32; 2]>>;

pub fn run(a: &MatrixArgs) -> kdop::Result<ExitCode> {
    let start = Instant::now();
    let meshes = load_all(a)?;
    let n = meshes.len();
    let mut cells = Vec::with_capacity(n * n);
    for env in 0..n {
        for object in 0..n {
            // Seeded by the two names, so that `--only` keeps every cell's poses.
            let seed = kdop::scene::cell_seed(&meshes[env].0, &meshes[object].0, a.seed);
            let poses =
                kdop::scene::near_poses(&meshes[env].1, &meshes[object].1, a.poses as usize, seed)?;
            cells.push(Cell { env, object, poses });
        }
    }
    std::fs::create_dir_all(&a.work)?;
    write_plan(&a.work, &meshes, &cells)?;
    let fcl = if a.no_fcl {
        None
    } else {
        Some(run_fcl(&a.work, cells.len(), a.min_ms, a.rounds)?)
    };

    // kdop, back-end by back-end; the default's reports kept for the checks.
    let mut runs: Vec<Vec<[Run; 2]>> = Vec::new();
    let mut reference: Vec<Pairs> = Vec::new();
    // What kdop got wrong (the run fails), and where FCL differs from the exact answer.
    let mut problems: Vec<String> = Vec::new();
    let mut fcl_notes: Vec<String> = Vec::new();
    let mut oracle_cells = 0;
    for (bi, &backend) in BACKENDS.iter().enumerate() {
        let bar = bar(cells.len() as u64, &backend_name(backend));
        let mut per_cell = Vec::with_capacity(cells.len());
        // A cell done: its runs kept, its answers checked against each other and the
        // default's.
        let mut record = |ci: usize, [d, r]: [Run; 2], pairs: Pairs, problems: &mut Vec<String>| {
            consistent(backend, &meshes, &cells[ci], &d, &r, problems);
            per_cell.push([d, r]);
            bar.inc(1);
            if bi == 0 {
                reference.push(pairs);
            } else if pairs != reference[ci] {
                let c = &cells[ci];
                problems.push(format!(
                    "{} disagrees with the default on {} x {}",
                    backend_name(backend),
                    meshes[c.env].0,
                    meshes[c.object].0
                ));
            }
        };
        match backend {
            Backend::Env(Bv::Dop(k)) => with_k!(k, KK => {
                let envs: Vec<Environment<KK>> = build(&meshes, "environments", |m| {
                    Environment::<KK>::from_mesh(m.clone(), &BuildOptions::ENVIRONMENT)
                })?;
                let objects: Vec<FlyingObject<KK>> = build(&meshes, "objects", |m| {
                    FlyingObject::<KK>::new(m.clone(), &BuildOptions::FLYING)
                })?;
                for (ci, c) in cells.iter().enumerate() {
                    let (env, obj) = (&envs[c.env], &objects[c.object]);
                    let mut state = QueryState::new();
                    state.prepare(env, obj);
                    let ([d, r], pairs) = time_cell(c, a.min_ms, a.rounds, |pose, o, keep, fresh| {
                        if fresh {
                            state = QueryState::new();
                            state.prepare(env, obj);
                        }
                        let t0 = Instant::now();
                        let r = env.collide(obj, pose, o, &mut state)?;
                        let us = t0.elapsed().as_secs_f64() * 1e6;
                        let pairs = if keep {
                            r.contacts
                                .iter()
                                .map(|x| [x.env_triangle, x.object_triangle])
                                .collect()
                        } else {
                            Vec::new()
                        };
                        Ok((us, r.collides, r.stats, pairs))
                    })?;
                    if bi == 0 {
                        oracle_cells += oracle_check(a, &meshes, c, env, obj, &pairs, &mut problems);
                    }
                    record(ci, [d, r], pairs, &mut problems);
                }
            }),
            Backend::Objects => {
                // The environment's mesh as an object left where it is (the identity
                // pose), the flying one placed by each pose: the same triangles in the
                // same places as against the environment, so the same pairs. The
                // flying one first, as a world asks an object against a part.
                let objects = build(&meshes, "objects", |m| {
                    FlyingObject::<18>::new(m.clone(), &BuildOptions::FLYING)
                })?;
                for (ci, c) in cells.iter().enumerate() {
                    let (still, obj) = (&objects[c.env], &objects[c.object]);
                    let mut state = QueryState::new();
                    state.prepare_objects(obj, still);
                    let ([d, r], pairs) =
                        time_cell(c, a.min_ms, a.rounds, |pose, o, keep, fresh| {
                            if fresh {
                                state = QueryState::new();
                                state.prepare_objects(obj, still);
                            }
                            let t0 = Instant::now();
                            let r =
                                obj.collide_with(pose, still, &Pose::IDENTITY, o, &mut state)?;
                            let us = t0.elapsed().as_secs_f64() * 1e6;
                            let pairs = if keep {
                                // In the environment's order: its triangle first.
                                let mut p: Vec<[u32; 2]> = r
                                    .contacts
                                    .iter()
                                    .map(|x| [x.b_triangle, x.a_triangle])
                                    .collect();
                                p.sort_unstable();
                                p
                            } else {
                                Vec::new()
                            };
                            Ok((us, r.collides, r.stats, pairs))
                        })?;
                    record(ci, [d, r], pairs, &mut problems);
                }
            }
            Backend::Env(Bv::Obb) => {
                let envs = build(&meshes, "environments", |m| ObbTree::from_mesh(m, OBB_LEAF))?;
                let objects = build(&meshes, "objects", |m| ObbTree::from_mesh(m, OBB_LEAF))?;
                for (ci, c) in cells.iter().enumerate() {
                    let (env, obj) = (&envs[c.env], &objects[c.object]);
                    let mut state = ObbQueryState::new();
                    state.prepare(obj);
                    let ([d, r], pairs) =
                        time_cell(c, a.min_ms, a.rounds, |pose, o, keep, fresh| {
                            if fresh {
                                state = ObbQueryState::new();
                                state.prepare(obj);
                            }
                            let t0 = Instant::now();
                            let r = env.collide(obj, pose, o, &mut state)?;
                            let us = t0.elapsed().as_secs_f64() * 1e6;
                            let pairs = if keep {
                                r.contacts.to_vec()
                            } else {
                                Vec::new()
                            };
                            Ok((us, r.collides, r.stats, pairs))
                        })?;
                    record(ci, [d, r], pairs, &mut problems);
                }
            }
        }
        bar.finish_and_clear();
        runs.push(per_cell);
    }
    let mut fcl_checked = 0;
    if let Some(fcl) = &fcl {
        for (ci, c) in cells.iter().enumerate() {
            for (mode, name) in [(0, "detect"), (1, "report")] {
                if fcl.cells[ci][mode].collides != runs[0][ci][mode].collides {
                    let differ = fcl.cells[ci][mode]
                        .collides
                        .iter()
                        .zip(&runs[0][ci][mode].collides)
                        .filter(|(x, y)| x != y)
                        .count();
                    fcl_notes.push(format!(
                        "FCL ({name}) answers collides differently on {differ} poses of {} x {}",
                        meshes[c.env].0, meshes[c.object].0
                    ));
                }
            }
            if (meshes[c.env].1.triangle_count() as u64)
                * (meshes[c.object].1.triangle_count() as u64)
                > a.oracle_limit
            {
                fcl_checked += 1;
                let theirs = read_fcl_pairs(&a.work, ci, c.poses.len())?;
                compare_with_fcl(
                    &meshes,
                    c,
                    &reference[ci],
                    &theirs,
                    &mut problems,
                    &mut fcl_notes,
                );
            }
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    let section = render(
        a,
        &meshes,
        &cells,
        &runs,
        fcl.as_ref(),
        &problems,
        &fcl_notes,
        oracle_cells,
        fcl_checked,
        elapsed,
    )?;
    write_section(&a.doc, &section)?;
    save_raw(&a.work, &meshes, &cells, &runs, fcl.as_ref())?;
    eprintln!("matrix: {} cells in {elapsed:.0} s", cells.len());
    for p in problems.iter().chain(&fcl_notes) {
        eprintln!("check: {p}");
    }
    Ok(if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// One back-end on one cell: detect, then report, over the poses in order and again until
/// a mode has taken `min_ms`, in `rounds` rounds of which the lowest mean is kept (the
/// answers and pairs are the first round's). `query(pose, options, keep, fresh)` answers
/// one query with its time in microseconds, and its pairs when `keep` (report mode, first
/// pass); `fresh` asks for a new, prepared state first (each round after the first), so
/// that every round pays the first queries' costs alike.
fn time_cell(
    c: &Cell,
    min_ms: f64,
    rounds: u32,
    mut query: impl FnMut(
        &Pose,
        &QueryOptions,
        bool,
        bool,
    ) -> kdop::Result<(f64, bool, kdop::QueryStats, Vec<[u32; 2]>)>,
) -> kdop::Result<([Run; 2], Pairs)> {
    let mut pairs = Vec::new();
    let mut runs = [Run::default(), Run::default()];
    for (run, o) in runs
        .iter_mut()
        .zip([QueryOptions::DETECT, QueryOptions::REPORT])
    {
        for round in 0..rounds.max(1) {
            let mut this = Run::default();
            for pass in 0.. {
                for (i, pose) in c.poses.iter().enumerate() {
                    let first = round == 0 && pass == 0;
                    let keep = first && o.mode == kdop::Mode::Report;
                    let fresh = round > 0 && pass == 0 && i == 0;
                    let (us, collides, stats, found) = query(pose, &o, keep, fresh)?;
                    this.add(us);
                    if first {
                        this.answer(collides, stats);
                    }
                    if keep {
                        pairs.push(found);
                    }
                }
                if this.done(min_ms, c.poses.len()) {
                    break;
                }
            }
            if round == 0 {
                *run = this;
            } else if this.mean() < run.mean() {
                (run.total_us, run.queries) = (this.total_us, this.queries);
            }
        }
    }
    Ok((runs, pairs))
}

fn bar(len: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} cells, {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message(what.to_string());
    bar
}

/// The meshes of the folder, sorted by file name.
fn load_all(a: &MatrixArgs) -> kdop::Result<Vec<(String, Mesh)>> {
    let dir = std::fs::read_dir(&a.meshes).map_err(|e| {
        kdop::Error::from(e).context(format!("meshes folder {}", a.meshes.display()))
    })?;
    let mut paths: Vec<PathBuf> = dir
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| kdop::io::formats::MeshFormat::from_path(p).is_some())
        .filter(|p| {
            a.only.is_empty()
                || p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| a.only.iter().any(|o| o == n))
        })
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(kdop::Error::InvalidParameter {
            name: "meshes",
            reason: format!("no OBJ, STL or PLY file in {}", a.meshes.display()),
        });
    }
    paths
        .iter()
        .map(|p| {
            let name = p
                .file_name()
                .map_or(String::new(), |n| n.to_string_lossy().into_owned());
            Ok((name, load_mesh(p, "MESH")?))
        })
        .collect()
}

/// Builds one structure per mesh, on all cores, in mesh order.
fn build<T: Send>(
    meshes: &[(String, Mesh)],
    what: &str,
    f: impl Fn(&Mesh) -> kdop::Result<T> + Sync,
) -> kdop::Result<Vec<T>> {
    use rayon::prelude::*;
    meshes
        .par_iter()
        .map(|(name, m)| f(m).map_err(|e| e.context(format!("{what}: {name}"))))
        .collect()
}

/// Whether detect and report agree on which poses collide.
fn consistent(
    backend: Backend,
    meshes: &[(String, Mesh)],
    c: &Cell,
    detect: &Run,
    report: &Run,
    problems: &mut Vec<String>,
) {
    if detect.collides != report.collides {
        problems.push(format!(
            "{}: detect and report disagree on {} x {}",
            backend_name(backend),
            meshes[c.env].0,
            meshes[c.object].0
        ));
    }
}

/// Checks the default's reports against brute force where the cell is small enough;
/// returns 1 if it did.
fn oracle_check<const K: usize>(
    a: &MatrixArgs,
    meshes: &[(String, Mesh)],
    c: &Cell,
    env: &Environment<K>,
    obj: &FlyingObject<K>,
    pairs: &Pairs,
    problems: &mut Vec<String>,
) -> usize {
    let work = (env.triangle_count() as u64) * (obj.bvh().triangle_count() as u64);
    if work > a.oracle_limit {
        return 0;
    }
    for (i, pose) in c.poses.iter().enumerate() {
        let want: Vec<[u32; 2]> = kdop::oracle::brute_force_contacts(env, obj, pose, 0.0)
            .iter()
            .map(|x| [x.env_triangle, x.object_triangle])
            .collect();
        if want != pairs[i] {
            problems.push(format!(
                "report differs from brute force on {} x {} pose {i}: {} pairs, brute force {}",
                meshes[c.env].0,
                meshes[c.object].0,
                pairs[i].len(),
                want.len()
            ));
        }
    }
    1
}

/// Compares kdop's reports with FCL's on a cell too large for brute force. Where they
/// differ, the exact triangle test decides: a pair kdop got wrong is a problem of kdop's;
/// FCL's rounding is counted as FCL's.
fn compare_with_fcl(
    meshes: &[(String, Mesh)],
    c: &Cell,
    ours: &Pairs,
    theirs: &Pairs,
    problems: &mut Vec<String>,
    fcl_notes: &mut Vec<String>,
) {
    let (env, obj) = (&meshes[c.env].1, &meshes[c.object].1);
    let (mut ours_wrong, mut fcl_wrong) = (0, 0);
    for (i, pose) in c.poses.iter().enumerate() {
        let t = &theirs[i];
        let exact = |[e, o]: [u32; 2]| -> bool {
            let (Some(et), Some(ot)) = (env.triangle(e as usize), obj.triangle(o as usize)) else {
                return false;
            };
            kdop::triangles_intersect(&et, &ot.map(|v| pose.transform_point(v)))
        };
        let (mut x, mut y) = (0, 0);
        while x < ours[i].len() || y < t.len() {
            match (ours[i].get(x), t.get(y)) {
                (Some(p), Some(q)) if p == q => {
                    x += 1;
                    y += 1;
                }
                (Some(p), q) if q.is_none_or(|q| p < q) => {
                    if exact(*p) {
                        fcl_wrong += 1;
                    } else {
                        ours_wrong += 1;
                    }
                    x += 1;
                }
                (_, Some(q)) => {
                    if exact(*q) {
                        ours_wrong += 1;
                    } else {
                        fcl_wrong += 1;
                    }
                    y += 1;
                }
                (None, None) | (Some(_), None) => break,
            }
        }
    }
    if ours_wrong > 0 {
        problems.push(format!(
            "kdop's report differs from the exact test on {ours_wrong} pairs of {} x {}",
            meshes[c.env].0, meshes[c.object].0
        ));
    }
    if fcl_wrong > 0 {
        fcl_notes.push(format!(
            "FCL's report differs from the exact test on {fcl_wrong} pairs of {} x {}",
            meshes[c.env].0, meshes[c.object].0
        ));
    }
}

/// The meshes as raw arrays and the cells with their poses, for FCL.
fn write_plan(work: &Path, meshes: &[(String, Mesh)], cells: &[Cell]) -> kdop::Result<()> {
    let mut list = Vec::new();
    for (i, (name, m)) in meshes.iter().enumerate() {
        let file = format!("mesh_{i}.bin");
        let mut raw = Vec::with_capacity(8 + 24 * m.vertices().len() + 12 * m.triangle_count());
        raw.extend_from_slice(&(m.vertices().len() as u32).to_le_bytes());
        raw.extend_from_slice(&(m.triangle_count() as u32).to_le_bytes());
        for v in m.vertices() {
            for x in v.to_array() {
                raw.extend_from_slice(&x.to_le_bytes());
            }
        }
        for t in m.triangles() {
            for x in t {
                raw.extend_from_slice(&x.to_le_bytes());
            }
        }
        std::fs::write(work.join(&file), raw)?;
        list.push(serde_json::json!({
            "name": name, "file": file,
            "vertices": m.vertices().len(), "triangles": m.triangle_count(),
        }));
    }
    let cells: Vec<_> = cells
        .iter()
        .map(|c| {
            serde_json::json!({
                "env": meshes[c.env].0,
                "object": meshes[c.object].0,
                "poses": c.poses.iter().map(Pose::to_rows).collect::<Vec<_>>(),
            })
        })
        .collect();
    let plan = serde_json::json!({ "meshes": list, "cells": cells });
    std::fs::write(work.join("plan.json"), plan.to_string())?;
    Ok(())
}

/// FCL's answers: per cell, detect and report.
struct Fcl {
    version: String,
    overhead_us: f64,
    cells: Vec<[Run; 2]>,
}

/// Makes the virtual environment if it is missing, runs the FCL script, reads its answers.
fn run_fcl(work: &Path, cells: usize, min_ms: f64, rounds: u32) -> kdop::Result<Fcl> {
    let venv = work.join("venv");
    let python = venv.join("bin").join("python");
    let ready = |p: &Path| {
        Command::new(p)
            .args(["-c", "import fcl, numpy"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let fail = |what: &str| kdop::Error::Io(format!("FCL: {what} (run with --no-fcl to skip FCL)"));
    if !ready(&python) {
        eprintln!(
            "matrix: making {} with {}",
            venv.display(),
            FCL_PACKAGES.join(", ")
        );
        let ok = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return Err(fail("python3 -m venv failed"));
        }
        let ok = Command::new(venv.join("bin").join("pip"))
            .args(["install", "--quiet", "--disable-pip-version-check"])
            .args(FCL_PACKAGES)
            .status()
            .is_ok_and(|s| s.success());
        if !ok || !ready(&python) {
            return Err(fail("pip could not install python-fcl"));
        }
    }
    let script = work.join("fcl_matrix.py");
    std::fs::write(&script, FCL_SCRIPT)?;
    eprintln!("matrix: FCL on {cells} cells");
    let ok = Command::new(&python)
        .arg(&script)
        .arg(work.join("plan.json"))
        .arg(work)
        .arg(min_ms.to_string())
        .arg(rounds.to_string())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return Err(fail("the FCL script failed"));
    }
    let text = std::fs::read_to_string(work.join("fcl.json"))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| fail(&format!("fcl.json: {e}")))?;
    let run = |m: &serde_json::Value| Run {
        total_us: m["total_us"].as_f64().unwrap_or(f64::NAN),
        queries: m["queries"].as_u64().unwrap_or(0),
        collides: m["collides"]
            .as_array()
            .map(|a| a.iter().filter_map(serde_json::Value::as_bool).collect())
            .unwrap_or_default(),
        ..Run::default()
    };
    let list = v["cells"].as_array().cloned().unwrap_or_default();
    if list.len() != cells {
        return Err(fail(&format!("{} cells answered of {cells}", list.len())));
    }
    Ok(Fcl {
        version: v["fcl_version"].as_str().unwrap_or("?").to_string(),
        overhead_us: v["call_overhead_us"].as_f64().unwrap_or(f64::NAN),
        cells: list
            .iter()
            .map(|c| [run(&c["detect"]), run(&c["report"])])
            .collect(),
    })
}

/// FCL's report pairs of cell `ci`, per pose, sorted, each once.
fn read_fcl_pairs(work: &Path, ci: usize, poses: usize) -> kdop::Result<Pairs> {
    let raw = std::fs::read(work.join(format!("pairs_{ci}.u32")))?;
    let mut out = vec![Vec::new(); poses];
    for rec in raw.chunks_exact(12) {
        let w = |i: usize| u32::from_le_bytes([rec[i], rec[i + 1], rec[i + 2], rec[i + 3]]);
        if let Some(p) = out.get_mut(w(0) as usize) {
            p.push([w(4), w(8)]);
        }
    }
    for p in &mut out {
        p.sort_unstable();
        p.dedup();
    }
    Ok(out)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) * 0.5,
    }
}

/// Markdown for `docs/benchmarks.md`, and the heat maps beside it.
#[allow(clippy::too_many_arguments)]
fn render(
    a: &MatrixArgs,
    meshes: &[(String, Mesh)],
    cells: &[Cell],
    runs: &[Vec<[Run; 2]>],
    fcl: Option<&Fcl>,
    problems: &[String],
    fcl_notes: &[String],
    oracle_cells: usize,
    fcl_checked: usize,
    elapsed: f64,
) -> kdop::Result<String> {
    let mut s = String::new();
    let n = meshes.len();
    let only = if a.only.is_empty() {
        String::new()
    } else {
        format!(" --only {}", a.only.join(","))
    };
    let _ = writeln!(s, "## Cross-matrix of real meshes against FCL\n");
    let _ = writeln!(
        s,
        "Made by `cargo run --release -- bench matrix --poses {} --seed {} --min-ms {} --rounds {}{only}` \
         on {}, {} (the run took {:.0} s after the build, FCL and kdop one after the other). Every mesh of `{}` as the \
         environment (rows) against every one as the flying object (columns), as stored; \
         {} near poses per cell (`kdop::scene::near_poses`: the object's centre at a random \
         environment vertex, ± 10 % of the object's diagonal, uniformly random rotation), the \
         same poses for every back-end. Times are the mean time of one query, the poses run \
         in order and again until a mode has taken {} ms, in {} rounds of which the lowest \
         mean is kept (for kdop and FCL alike; each kdop round on a fresh state, prepared \
         before its first query).\n",
        a.poses,
        a.seed,
        a.min_ms,
        a.rounds,
        machine(),
        today(),
        elapsed,
        a.meshes.display(),
        a.poses,
        a.min_ms,
        a.rounds
    );
    if let Some(f) = fcl {
        let _ = writeln!(
            s,
            "FCL: python-fcl {} (OBBRSS, the only bounding volume python-fcl builds meshes \
             with), `num_max_contacts` 1 for detect and 2^30 for report, contacts off. Its \
             times include the Python call and the conversion of its contacts to Python \
             objects; one call that does no work costs {:.1} µs (median), which is part of \
             every FCL figure below.\n",
            f.version, f.overhead_us
        );
    }
    let ratio = |bi: usize, ci: usize, m: usize| -> f64 {
        fcl.map_or(f64::NAN, |f| runs[bi][ci][m].mean() / f.cells[ci][m].mean())
    };
    let vs_obb = |bi: usize, ci: usize, m: usize| -> f64 {
        runs[bi][ci][m].mean() / runs[OBB_AT][ci][m].mean()
    };
    // Summary per back-end.
    let _ = writeln!(
        s,
        "| back-end | detect: worst / median cell vs FCL | cells > 1 | report: worst / median vs FCL | cells > 1 | worst vs own OBB (detect / report) | Nv / Np / Nu per detect query |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|");
    for (bi, b) in BACKENDS.iter().enumerate() {
        let mut cols = Vec::new();
        for m in 0..2 {
            let mut r: Vec<f64> = (0..cells.len()).map(|ci| ratio(bi, ci, m)).collect();
            let over = r.iter().filter(|&&x| x > 1.0).count();
            let worst = r.iter().copied().fold(f64::NAN, f64::max);
            if fcl.is_some() {
                cols.push(format!("{worst:.2} / {:.2}", median(&mut r)));
                cols.push(format!("{over}"));
            } else {
                // Without FCL (`--no-fcl`) there is no ratio to show.
                cols.extend(["-".to_string(), "-".to_string()]);
            }
        }
        let wo = |m: usize| {
            (0..cells.len())
                .map(|ci| vs_obb(bi, ci, m))
                .fold(f64::NAN, f64::max)
        };
        let q = (cells.len() as u64 * a.poses).max(1);
        let (nv, np, nu) = runs[bi].iter().fold((0, 0, 0), |(v, p, u), c| {
            (v + c[0].nv, p + c[0].np, u + c[0].nu)
        });
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {:.2} / {:.2} | {} / {} / {} |",
            backend_name(*b),
            cols[0],
            cols[1],
            cols[2],
            cols[3],
            wo(0),
            wo(1),
            nv / q,
            np / q,
            nu / q
        );
    }
    if let Some(f) = fcl {
        let mean = |m: usize| {
            f.cells.iter().map(|c| c[m].mean()).sum::<f64>() / f.cells.len().max(1) as f64
        };
        let _ = writeln!(
            s,
            "| FCL OBBRSS | mean {:.1} µs | | mean {:.1} µs | | | |",
            mean(0),
            mean(1)
        );
    }
    let _ = writeln!(s);
    // Issue 19's mark: a pair of objects costs no more than the same meshes as an
    // environment and an object.
    let pair_ratio = |m: usize| {
        let mut r: Vec<f64> = (0..cells.len())
            .map(|ci| runs[OBJECTS_AT][ci][m].mean() / runs[0][ci][m].mean())
            .collect();
        let worst = r.iter().copied().fold(f64::NAN, f64::max);
        (worst, median(&mut r))
    };
    let ((dw, dm), (rw, rm)) = (pair_ratio(0), pair_ratio(1));
    let _ = writeln!(
        s,
        "Object against object (`FlyingObject::collide_with`, the environment's mesh as an \
         object at the identity pose) over the environment query, per cell: detect worst \
         {dw:.2}, median {dm:.2}; report worst {rw:.2}, median {rm:.2}.\n"
    );
    let short: Vec<String> = meshes.iter().map(|(m, _)| short_name(m)).collect();
    for (m, mode) in [(0, "detect"), (1, "report")] {
        let _ = writeln!(
            s,
            "**{mode}**: kdop default / FCL per cell (environment down, object across; bold above 1).\n"
        );
        let _ = write!(s, "| env \\ object |");
        for o in &short {
            let _ = write!(s, " {o} |");
        }
        let _ = writeln!(s);
        let _ = writeln!(s, "|---|{}", "---|".repeat(n));
        for (e, name) in short.iter().enumerate() {
            let _ = write!(s, "| {name} |");
            for o in 0..n {
                let r = ratio(0, e * n + o, m);
                if r > 1.0 {
                    let _ = write!(s, " **{r:.2}** |");
                } else {
                    let _ = write!(s, " {r:.2} |");
                }
            }
            let _ = writeln!(s);
        }
        let _ = writeln!(s);
        if fcl.is_some() {
            let file = format!("matrix_{mode}.svg");
            heat_map(&plot_dir(a).join(&file), &short, n, mode, |ci| {
                ratio(0, ci, m)
            })?;
            let _ = writeln!(s, "![kdop / FCL per cell, {mode}](img/{file})\n");
        }
        // The worst cells with their times.
        let mut order: Vec<usize> = (0..cells.len()).collect();
        order.sort_by(|&x, &y| ratio(0, y, m).total_cmp(&ratio(0, x, m)));
        let _ = writeln!(
            s,
            "Slowest cells against FCL ({mode}, mean µs per query): {}.\n",
            order
                .iter()
                .take(5)
                .map(|&ci| {
                    let c = &cells[ci];
                    format!(
                        "{} × {}: kdop {:.1}, OBB {:.1}, FCL {:.1}",
                        short[c.env],
                        short[c.object],
                        runs[0][ci][m].mean(),
                        runs[OBB_AT][ci][m].mean(),
                        fcl.map_or(f64::NAN, |f| f.cells[ci][m].mean())
                    )
                })
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    let _ = writeln!(
        s,
        "Checks: the default's reports equal brute force on all {oracle_cells} cells whose \
         triangle counts multiply to at most {} unless listed below; on the other {fcl_checked} \
         cells they were compared with FCL's, each differing pair decided by the exact \
         triangle test; every other back-end's reports equal the default's, and detect agrees \
         with report on which poses collide, unless listed.\n",
        a.oracle_limit
    );
    if problems.is_empty() && fcl_notes.is_empty() {
        let _ = writeln!(s, "Nothing to list: no mismatch.\n");
    } else {
        for p in problems.iter().chain(fcl_notes) {
            let _ = writeln!(s, "- {p}");
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(s, "Meshes (short name: file, triangles): {}.", {
        meshes
            .iter()
            .zip(&short)
            .map(|((f, m), sn)| format!("{sn}: {f}, {}", m.triangle_count()))
            .collect::<Vec<_>>()
            .join("; ")
    });
    Ok(s)
}

/// A name short enough for a table column.
fn short_name(file: &str) -> String {
    let stem = file.rsplit_once('.').map_or(file, |(s, _)| s);
    stem.chars().take(9).collect()
}

/// Where the heat maps go: `img/` beside the page, or in the work folder for `--doc -`.
fn plot_dir(a: &MatrixArgs) -> PathBuf {
    let base = if a.doc == Path::new("-") {
        a.work.as_path()
    } else {
        a.doc.parent().unwrap_or(Path::new("."))
    };
    base.join("img")
}

fn heat_map(
    path: &Path,
    names: &[String],
    n: usize,
    mode: &str,
    ratio: impl Fn(usize) -> f64,
) -> kdop::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let cells: Vec<f64> = (0..n * n).map(ratio).collect();
    crate::plots::heat_map(
        path,
        &format!("kdop / FCL mean time per cell, {mode} (green: kdop faster)"),
        names,
        &cells,
    )
}

fn write_section(doc: &Path, section: &str) -> kdop::Result<()> {
    if doc == Path::new("-") {
        print!("{section}");
        return Ok(());
    }
    let old = std::fs::read_to_string(doc).unwrap_or_default();
    let block = format!("{BEGIN}\n{section}{END}\n");
    let new = match (old.find(BEGIN), old.find(END)) {
        (Some(b), Some(e)) if b < e => format!("{}{block}{}", &old[..b], &old[e + END.len() + 1..]),
        _ => format!("{old}\n{block}"),
    };
    std::fs::write(doc, new)?;
    eprintln!("matrix: wrote {}", doc.display());
    Ok(())
}

fn save_raw(
    work: &Path,
    meshes: &[(String, Mesh)],
    cells: &[Cell],
    runs: &[Vec<[Run; 2]>],
    fcl: Option<&Fcl>,
) -> kdop::Result<()> {
    let rows: Vec<_> = cells
        .iter()
        .enumerate()
        .map(|(ci, c)| {
            let mut row = serde_json::json!({
                "env": meshes[c.env].0, "object": meshes[c.object].0,
            });
            for (bi, b) in BACKENDS.iter().enumerate() {
                for (m, mode) in [(0, "detect"), (1, "report")] {
                    let r = &runs[bi][ci][m];
                    row[format!("{} {mode}", backend_name(*b))] = serde_json::json!({
                        "mean_us": r.mean(), "nv": r.nv, "np": r.np, "nu": r.nu,
                    });
                }
            }
            if let Some(f) = fcl {
                row["fcl detect"] = serde_json::json!({ "mean_us": f.cells[ci][0].mean() });
                row["fcl report"] = serde_json::json!({ "mean_us": f.cells[ci][1].mean() });
            }
            row
        })
        .collect();
    std::fs::write(
        work.join("results.json"),
        serde_json::to_string_pretty(&rows).unwrap_or_default(),
    )?;
    Ok(())
}

/// The CPU model and core count, from `/proc/cpuinfo` where there is one.
fn machine() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = info
        .lines()
        .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split_once(':')))
        .map_or("unknown CPU".to_string(), |(_, m)| m.trim().to_string());
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    format!("{model}, {cores} cores")
}

/// Today's date (UTC) as YYYY-MM-DD.
fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // Days to civil date (H. Hinnant's algorithm).
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}
