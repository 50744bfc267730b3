//! Options and helpers shared by the subcommands.

use clap::{Args, ValueEnum};
use kdop::{AxisRule, BuildOptions, Environment, Mesh, SplitPoint};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

/// The k of the k-DOPs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum KArg {
    #[value(name = "6")]
    K6,
    #[value(name = "14")]
    K14,
    #[value(name = "18")]
    K18,
    #[value(name = "26")]
    K26,
}

impl KArg {
    /// The k it names.
    pub fn k(self) -> usize {
        match self {
            KArg::K6 => 6,
            KArg::K14 => 14,
            KArg::K18 => 18,
            KArg::K26 => 26,
        }
    }
}

/// Runs `$body` with `const $k: usize` set to the chosen k.
#[macro_export]
macro_rules! with_k {
    ($choice:expr, $k:ident => $body:expr) => {
        match $choice {
            $crate::common::KArg::K6 => {
                const $k: usize = 6;
                $body
            }
            $crate::common::KArg::K14 => {
                const $k: usize = 14;
                $body
            }
            $crate::common::KArg::K18 => {
                const $k: usize = 18;
                $body
            }
            $crate::common::KArg::K26 => {
                const $k: usize = 26;
                $body
            }
        }
    };
}

/// The bounding volume: a k-DOP or an oriented box (the OBBTree back-end, "RAPID").
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BvArg {
    Dop6,
    Dop14,
    Dop18,
    Dop26,
    Obb,
}

/// What `--bv` (or, without it, `--k`) chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bv {
    Dop(KArg),
    Obb,
}

/// OBB trees' leaf size: one triangle, as RAPID. With more, leaves of long thin triangles
/// running different ways get boxes far larger than any of them (k-DOP queries refine
/// leaves into single triangles; OBB queries do not).
pub const OBB_LEAF: u32 = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Rule {
    LongestSide,
    MinSum,
    MinMax,
    Splatter,
    SurfaceArea,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Split {
    Mean,
    Median,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    Detect,
    Report,
}

impl ModeArg {
    pub fn options(self) -> kdop::QueryOptions {
        match self {
            ModeArg::Detect => kdop::QueryOptions::DETECT,
            ModeArg::Report => kdop::QueryOptions::REPORT,
        }
    }
}

/// Hierarchy parameters (§3.3).
#[derive(Args, Debug, Clone)]
pub struct HierarchyArgs {
    /// k of the k-DOPs.
    #[arg(long, value_enum, default_value = "18")]
    pub k: KArg,
    /// The bounding volume; given, it replaces `--k` (`dop18` is `--k 18`; `obb` is the
    /// OBBTree back-end, which uses `--leaf` and ignores `--rule` and `--split`).
    #[arg(long, value_enum)]
    pub bv: Option<BvArg>,
    /// Axis rule for splitting: the paper's four (§3.3.4), or kdop's surface-area rule
    /// (the default), which chooses the split position itself and ignores `--split`.
    #[arg(long, value_enum)]
    pub rule: Option<Rule>,
    /// Split at the mean (the default) or the median of the centroids.
    #[arg(long, value_enum)]
    pub split: Option<Split>,
    /// Leaf threshold τ of the environment hierarchy, 1 to 4096: 4 by default for k-DOPs
    /// (whose queries refine leaves into single triangles), 1 for OBB trees, as RAPID. The
    /// flying object uses 4 (k-DOPs) or 1 (OBBs).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub leaf: Option<u32>,
}

impl HierarchyArgs {
    pub fn bv(&self) -> Bv {
        match self.bv {
            None => Bv::Dop(self.k),
            Some(BvArg::Dop6) => Bv::Dop(KArg::K6),
            Some(BvArg::Dop14) => Bv::Dop(KArg::K14),
            Some(BvArg::Dop18) => Bv::Dop(KArg::K18),
            Some(BvArg::Dop26) => Bv::Dop(KArg::K26),
            Some(BvArg::Obb) => Bv::Obb,
        }
    }

    pub fn env_options(&self) -> BuildOptions {
        BuildOptions {
            rule: match self.rule.unwrap_or(Rule::SurfaceArea) {
                Rule::LongestSide => AxisRule::LongestSide,
                Rule::MinSum => AxisRule::MinSum,
                Rule::MinMax => AxisRule::MinMax,
                Rule::Splatter => AxisRule::Splatter,
                Rule::SurfaceArea => AxisRule::SurfaceArea,
            },
            split: match self.split.unwrap_or(Split::Mean) {
                Split::Mean => SplitPoint::Mean,
                Split::Median => SplitPoint::Median,
            },
            leaf_size: self.leaf.unwrap_or(BuildOptions::ENVIRONMENT.leaf_size),
        }
    }

    /// Leaf sizes of the environment and the object OBB trees.
    pub fn obb_leaves(&self) -> (u32, u32) {
        (self.leaf.unwrap_or(OBB_LEAF), OBB_LEAF)
    }

    pub fn object_options(&self) -> BuildOptions {
        BuildOptions {
            leaf_size: BuildOptions::FLYING.leaf_size,
            ..self.env_options()
        }
    }
}

/// `kdop build` arguments.
#[derive(Args, Debug)]
pub struct BuildArgs {
    /// The environment mesh (OBJ, STL or PLY).
    pub mesh: PathBuf,
    /// Where to write the hierarchy (`.kdop` by convention). Never one of the inputs; a
    /// mesh extension (`.obj`, `.stl`, `.ply`) is refused unless `--force` is given.
    #[arg(long, short)]
    pub out: PathBuf,
    /// Write the hierarchy even where `--out` has a mesh file's extension.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub hierarchy: HierarchyArgs,
}

/// Whether reader warnings are errors (`--strict`), set once from the command line.
static STRICT: AtomicBool = AtomicBool::new(false);

/// Makes reader warnings errors from now on.
pub fn set_strict(strict: bool) {
    STRICT.store(strict, Ordering::Relaxed);
}

/// Whether warnings are errors (`--strict`).
pub fn strict() -> bool {
    STRICT.load(Ordering::Relaxed)
}

/// A mesh file in the role the command line gave it (`ENV`, `OBJECT`, `MESH`): errors name
/// the role and the file; what the reader ignored is printed on standard error (and, with
/// `--strict`, refused).
pub fn load_mesh(path: &Path, role: &str) -> kdop::Result<Mesh> {
    let loaded = kdop::io::formats::read_mesh_file(path).map_err(|e| e.context(role))?;
    for w in &loaded.warnings {
        eprintln!("warning: {role}: {w}");
    }
    if strict() && !loaded.warnings.is_empty() {
        return Err(kdop::Error::InvalidParameter {
            name: "input",
            reason: format!(
                "{role} {}: {} reader warning(s) above, and --strict makes them errors",
                path.display(),
                loaded.warnings.len()
            ),
        });
    }
    Ok(loaded.mesh)
}

/// Whether the file is a saved hierarchy: it starts like one, or it is named `.kdop` (so a
/// damaged one is reported as a damaged hierarchy, not as an unknown mesh format).
pub fn is_saved_hierarchy(path: &Path) -> bool {
    use std::io::Read;
    let named = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("kdop"));
    let mut head = [0u8; 8];
    named
        || (std::fs::File::open(path)
            .and_then(|mut f| f.read_exact(&mut head))
            .is_ok()
            && &head == b"KDOPENV\0")
}

/// An environment from a mesh file (one part, where it stands) or a saved hierarchy, in the
/// role `role`. Build options given for a saved hierarchy are reported as ignored.
pub fn load_environment<const K: usize>(
    path: &Path,
    role: &str,
    args: &HierarchyArgs,
) -> kdop::Result<Environment<K>> {
    if !is_saved_hierarchy(path) {
        return Environment::<K>::from_mesh(load_mesh(path, role)?, &args.env_options())
            .map_err(|e| e.context(format!("{role} {}", path.display())));
    }
    if args.leaf.is_some() {
        eprintln!(
            "warning: {role} {} is a saved hierarchy, built when it was saved: --leaf is ignored",
            path.display()
        );
    }
    if args.rule.is_some() || args.split.is_some() {
        eprintln!(
            "warning: {role} {} is a saved hierarchy: --rule and --split apply to the object only",
            path.display()
        );
    }
    Environment::<K>::load_from_file(path).map_err(|e| {
        let hint = match e.root() {
            kdop::Error::Format(kdop::FormatError::WrongK { found, .. }) => {
                format!(" (saved with {found}-DOPs: run with --k {found})")
            }
            _ => String::new(),
        };
        e.context(format!("{role}{hint}"))
    })
}

/// One mesh of placed parts, triangles numbered part after part (the OBB back-end takes one
/// mesh, as RAPID takes one model).
pub fn merge_parts(parts: &[(Mesh, kdop::Pose)]) -> kdop::Result<Mesh> {
    let mut tris = Vec::new();
    for (mesh, pose) in parts {
        let placed = mesh.transformed(pose)?;
        tris.extend((0..placed.triangle_count()).filter_map(|i| placed.triangle(i)));
    }
    // Welded, so that node fits see shared corners once.
    Ok(Mesh::from_triangles(&tris)?.welded())
}

/// An OBB tree from a mesh file; saved hierarchies hold k-DOPs and are refused.
pub fn load_obb_environment(
    path: &Path,
    role: &str,
    leaf: u32,
) -> kdop::Result<(kdop::ObbTree, Mesh)> {
    if is_saved_hierarchy(path) {
        return Err(kdop::Error::InvalidParameter {
            name: "input",
            reason: format!(
                "{role} {} is a saved hierarchy, which holds k-DOPs; give the mesh for --bv obb",
                path.display()
            ),
        });
    }
    let mesh = load_mesh(path, role)?;
    Ok((kdop::ObbTree::from_mesh(&mesh, leaf)?, mesh))
}

/// Whether two paths name the same existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(ma), Ok(mb)) => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::MetadataExt;
                ma.dev() == mb.dev() && ma.ino() == mb.ino()
            }
            #[cfg(not(unix))]
            {
                let _ = (ma, mb);
                std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok()
            }
        }
        _ => false,
    }
}

/// Refuses an output path that is one of the inputs, or (without `force`) that has a mesh
/// file's extension: a hierarchy written there would destroy or pass for a mesh.
pub fn check_output(out: &Path, inputs: &[&Path], force: bool) -> kdop::Result<()> {
    for input in inputs {
        if same_file(out, input) {
            return Err(kdop::Error::InvalidParameter {
                name: "--out",
                reason: format!(
                    "{} is the input {}; refusing to overwrite an input (--force does not change this)",
                    out.display(),
                    input.display()
                ),
            });
        }
    }
    if !force && kdop::io::formats::MeshFormat::from_path(out).is_some() {
        return Err(kdop::Error::InvalidParameter {
            name: "--out",
            reason: format!(
                "{} has a mesh file's extension, but a saved hierarchy is not a mesh; name it \
                 .kdop, or give --force to write it there anyway",
                out.display()
            ),
        });
    }
    Ok(())
}

pub fn run_build(a: &BuildArgs) -> kdop::Result<ExitCode> {
    check_output(&a.out, &[&a.mesh], a.force)?;
    let start = std::time::Instant::now();
    let mesh = load_mesh(&a.mesh, "MESH")?;
    let n = mesh.triangle_count();
    let opts = a.hierarchy.env_options();
    let Bv::Dop(k) = a.hierarchy.bv() else {
        return Err(kdop::Error::InvalidParameter {
            name: "bv",
            reason: "saved hierarchies hold k-DOPs; OBB trees are built when loaded".into(),
        });
    };
    with_k!(k, KK => {
        let env = Environment::<KK>::from_mesh(mesh, &opts)?;
        env.save_to_file(&a.out)?;
        eprintln!(
            "built {}-DOP hierarchy over {n} triangles in {:.1} ms, wrote {} ({} bytes)",
            KK,
            start.elapsed().as_secs_f64() * 1e3,
            a.out.display(),
            std::fs::metadata(&a.out).map(|m| m.len()).unwrap_or(0)
        );
    });
    Ok(ExitCode::SUCCESS)
}

/// Mean and the given percentiles of a list of durations (sorted in place).
pub fn summary(times: &mut [f64]) -> (f64, f64, f64, f64) {
    if times.is_empty() {
        return (0.0, 0.0, 0.0, 0.0);
    }
    times.sort_by(f64::total_cmp);
    let n = times.len();
    let pct = |p: f64| times[((n as f64 * p) as usize).min(n - 1)];
    let mean = times.iter().sum::<f64>() / n as f64;
    (mean, pct(0.5), pct(0.99), times[n - 1])
}

/// A number in `range` for an option (`what` names its unit in the error), for clap's
/// `value_parser`; NaN and anything else outside the range is refused.
pub fn number_in(s: &str, range: std::ops::RangeInclusive<f64>, what: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if range.contains(&v) => Ok(v),
        _ => Err(format!(
            "{s} is not {what} from {} to {}",
            range.start(),
            range.end()
        )),
    }
}

/// A share from 0 to 1, for clap's `value_parser`.
pub fn share(s: &str) -> Result<f64, String> {
    number_in(s, 0.0..=1.0, "a share")
}

/// A rayon pool of `threads` workers (0: one per core), for `--threads`, each worker
/// pinned to a core of its own when there are enough (the cores this process may run on).
///
/// Pinned, because a pool whose workers slept through a single-threaded stretch (a peer's
/// frame, an oracle's check) otherwise wakes with its workers queued on one core: Linux
/// places a woken thread near its waker, and the idle core pulls one over only at its next
/// balancing, a millisecond or more later, which a parallel pass of a few milliseconds
/// then spends on one core (`docs/benchmarks.md`, "Machine and method"). Engines pin
/// their workers for the same reason.
pub fn thread_pool(threads: usize) -> kdop::Result<rayon::ThreadPool> {
    thread_pool_pinned(threads, true)
}

/// [`thread_pool`], its workers pinned only if `pin` (and there are enough cores).
pub fn thread_pool_pinned(threads: usize, pin: bool) -> kdop::Result<rayon::ThreadPool> {
    let cores = core_affinity::get_core_ids().unwrap_or_default();
    // 0 is rayon's default: `RAYON_NUM_THREADS` when set, else one per core.
    let workers = match threads {
        0 => std::env::var("RAYON_NUM_THREADS")
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|&n: &usize| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from)),
        n => n,
    };
    let pin = pin && workers <= cores.len();
    rayon::ThreadPoolBuilder::new()
        .num_threads(workers)
        .start_handler(move |i| {
            if pin {
                // A hint: a worker left unpinned still runs, only less promptly.
                let _ = core_affinity::set_for_current(cores[i]);
            }
        })
        .build()
        .map_err(|e| kdop::Error::InvalidParameter {
            name: "threads",
            reason: e.to_string(),
        })
}
