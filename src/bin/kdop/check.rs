//! `kdop check`: an object at every pose of a file against an environment that stays where
//! it is. One answer per pose, in pose order.

use crate::common::{
    Bv, HierarchyArgs, ModeArg, load_environment, load_mesh, load_obb_environment,
};
use crate::with_k;
use clap::Args;
use indicatif::ProgressBar;
use kdop::{FlyingObject, ObbQueryState, ObbTree, Pose, QueryOptions, QueryState, QueryStats};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// The environment: a mesh (OBJ, STL, PLY) or a hierarchy saved by `kdop build`.
    pub env: PathBuf,
    /// The object to place (OBJ, STL, PLY).
    pub object: PathBuf,
    /// Poses, one per line: 12 numbers, the row-major 3x4 matrix
    /// `r00 r01 r02 tx r10 r11 r12 ty r20 r21 r22 tz`, separated by spaces or commas. `#`
    /// starts a comment, on a line of its own or after the numbers.
    #[arg(long)]
    pub poses: PathBuf,
    /// Detect (stop at the first contact found; "pairs" holds that one) or report (all
    /// intersecting triangle pairs).
    #[arg(long, value_enum, default_value = "report")]
    pub mode: ModeArg,
    /// One JSON object per pose and line: {"pose", "collides", "pairs", "us", "nv", "np",
    /// "nu", "climb"} (bounding-volume tests, triangle tests, volumes re-bounded, hill-climbing
    /// moves for the root k-DOP).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub hierarchy: HierarchyArgs,
}

/// A pose line, or why it is not one. Poses are numbered from 0 in file order, comments and
/// blank lines skipped.
pub fn read_poses(path: &Path) -> kdop::Result<Vec<(usize, Result<Pose, String>)>> {
    let text = std::fs::read(path)
        .map_err(|e| kdop::Error::from(e).context(format!("poses file {}", path.display())))?;
    let text = String::from_utf8_lossy(&text);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut out = Vec::new();
    for (line_no, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let nums: Result<Vec<f64>, _> = line
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|s| !s.is_empty())
            .map(str::parse::<f64>)
            .collect();
        let parsed = match nums {
            Err(e) => Err(format!("line {}: {e}", line_no + 1)),
            Ok(v) if v.len() != 12 => Err(format!(
                "line {}: expected 12 numbers, found {}",
                line_no + 1,
                v.len()
            )),
            Ok(v) => {
                let mut m = [0.0; 12];
                m.copy_from_slice(&v);
                Pose::from_rows(m).map_err(|e| format!("line {}: {e}", line_no + 1))
            }
        };
        out.push((line_no + 1, parsed));
    }
    Ok(out)
}

pub fn run(a: &CheckArgs) -> kdop::Result<ExitCode> {
    match a.hierarchy.bv() {
        Bv::Dop(k) => with_k!(k, KK => check::<KK>(a)),
        Bv::Obb => check_obb(a),
    }
}

/// One check: whether it collides, the query's own time in microseconds (collecting the
/// pairs excluded), the sorted `[env, object]` triangle pairs and the query's counts.
type Check<'a> =
    dyn FnMut(&Pose, &QueryOptions) -> kdop::Result<(bool, f64, Vec<[u32; 2]>, QueryStats)> + 'a;

fn check<const K: usize>(a: &CheckArgs) -> kdop::Result<ExitCode> {
    let start = Instant::now();
    let env = load_environment::<K>(&a.env, "ENV", &a.hierarchy)?;
    let obj = FlyingObject::<K>::new(
        load_mesh(&a.object, "OBJECT")?,
        &a.hierarchy.object_options(),
    )
    .map_err(|e| e.context(format!("OBJECT {}", a.object.display())))?;
    let poses = read_poses(&a.poses)?;
    eprintln!(
        "loaded and built in {:.1} ms: environment {} triangles, object {} triangles, {} poses ({}-DOP)",
        start.elapsed().as_secs_f64() * 1e3,
        env.triangle_count(),
        obj.bvh().triangle_count(),
        poses.len(),
        K
    );
    let mut state = QueryState::new();
    state.prepare(&env, &obj);
    run_poses(a, &poses, &mut |pose, options| {
        let t0 = Instant::now();
        let r = env.collide(&obj, pose, options, &mut state)?;
        let us = t0.elapsed().as_secs_f64() * 1e6;
        let pairs = r
            .contacts
            .iter()
            .map(|c| [c.env_triangle, c.object_triangle])
            .collect();
        Ok((r.collides, us, pairs, r.stats))
    })
}

fn check_obb(a: &CheckArgs) -> kdop::Result<ExitCode> {
    let start = Instant::now();
    let (env_leaf, obj_leaf) = a.hierarchy.obb_leaves();
    let (env, _) = load_obb_environment(&a.env, "ENV", env_leaf)?;
    let obj = ObbTree::from_mesh(&load_mesh(&a.object, "OBJECT")?, obj_leaf)
        .map_err(|e| e.context(format!("OBJECT {}", a.object.display())))?;
    let poses = read_poses(&a.poses)?;
    eprintln!(
        "loaded and built in {:.1} ms: environment {} triangles, object {} triangles, {} poses (OBB tree)",
        start.elapsed().as_secs_f64() * 1e3,
        env.triangle_count(),
        obj.triangle_count(),
        poses.len(),
    );
    let mut state = ObbQueryState::new();
    state.prepare(&obj);
    run_poses(a, &poses, &mut |pose, options| {
        let t0 = Instant::now();
        let r = env.collide(&obj, pose, options, &mut state)?;
        let us = t0.elapsed().as_secs_f64() * 1e6;
        Ok((r.collides, us, r.contacts.to_vec(), r.stats))
    })
}

/// Answers every pose in order and prints them, for any bounding volume.
fn run_poses(
    a: &CheckArgs,
    poses: &[(usize, Result<Pose, String>)],
    check: &mut Check,
) -> kdop::Result<ExitCode> {
    let options = a.mode.options();
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let bar = ProgressBar::new(poses.len() as u64);
    let mut failed = 0;
    let mut colliding = 0;
    for (i, (_line, pose)) in poses.iter().enumerate() {
        bar.inc(1);
        let pose = match pose {
            Ok(p) => p,
            Err(why) => {
                failed += 1;
                if a.json {
                    writeln!(out, "{}", serde_json::json!({ "pose": i, "error": why }))?;
                } else {
                    writeln!(out, "pose {i}: error: {why}")?;
                }
                continue;
            }
        };
        let (collides, us, pairs, stats) = check(pose, &options)?;
        colliding += collides as usize;
        if a.json {
            let v = serde_json::json!({ "pose": i, "collides": collides, "pairs": pairs, "us": us,
                    "nv": stats.nv, "np": stats.np, "nu": stats.nu,
                    "climb": stats.climb_steps });
            writeln!(out, "{v}")?;
        } else if collides && options.mode == kdop::Mode::Detect {
            let first = pairs.first().map_or(String::new(), |[e, o]| {
                format!(": ENV triangle {e} meets OBJECT triangle {o}")
            });
            writeln!(
                out,
                "pose {i}: CLASH (first contact found{first}) ({us:.1} us)"
            )?;
        } else if collides {
            writeln!(
                out,
                "pose {i}: CLASH, {} intersecting triangle pairs ({us:.1} us)",
                pairs.len()
            )?;
        } else {
            writeln!(out, "pose {i}: clear ({us:.1} us)")?;
        }
    }
    out.flush()?;
    bar.finish_and_clear();
    eprintln!(
        "{colliding} of {} poses collide; {failed} invalid",
        poses.len()
    );
    Ok(if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
