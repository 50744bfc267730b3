//! Options and helpers shared by the subcommands.

use clap::{Args, ValueEnum};
use kdop::{AxisRule, BuildOptions, Environment, Mesh, SplitPoint};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

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
    #[arg(long, value_enum, default_value = "surface-area")]
    pub rule: Rule,
    /// Split at the mean or the median of the centroids.
    #[arg(long, value_enum, default_value = "mean")]
    pub split: Split,
    /// Leaf threshold τ of the environment hierarchy: 4 by default for k-DOPs (whose queries
    /// refine leaves into single triangles), 1 for OBB trees, as RAPID. The flying object
    /// uses 4 (k-DOPs) or 1 (OBBs).
    #[arg(long)]
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
            rule: match self.rule {
                Rule::LongestSide => AxisRule::LongestSide,
                Rule::MinSum => AxisRule::MinSum,
                Rule::MinMax => AxisRule::MinMax,
                Rule::Splatter => AxisRule::Splatter,
                Rule::SurfaceArea => AxisRule::SurfaceArea,
            },
            split: match self.split {
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
    /// Where to write the hierarchy.
    #[arg(long, short)]
    pub out: PathBuf,
    #[command(flatten)]
    pub hierarchy: HierarchyArgs,
}

pub fn load_mesh(path: &Path) -> kdop::Result<Mesh> {
    kdop::io::formats::load_mesh(path)
}

/// Whether the file starts like a saved hierarchy.
pub fn is_saved_hierarchy(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && &head == b"KDOPENV\0"
}

/// An environment from a mesh file (one part, where it stands) or a saved hierarchy.
pub fn load_environment<const K: usize>(
    path: &Path,
    options: &BuildOptions,
) -> kdop::Result<Environment<K>> {
    if is_saved_hierarchy(path) {
        Environment::<K>::load_from_file(path)
    } else {
        Environment::<K>::from_mesh(load_mesh(path)?, options)
    }
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
pub fn load_obb_environment(path: &Path, leaf: u32) -> kdop::Result<(kdop::ObbTree, Mesh)> {
    if is_saved_hierarchy(path) {
        return Err(kdop::Error::InvalidParameter {
            name: "env",
            reason: "a saved hierarchy holds k-DOPs; give the mesh for --bv obb".into(),
        });
    }
    let mesh = load_mesh(path)?;
    Ok((kdop::ObbTree::from_mesh(&mesh, leaf)?, mesh))
}

pub fn run_build(a: &BuildArgs) -> kdop::Result<ExitCode> {
    let start = std::time::Instant::now();
    let mesh = load_mesh(&a.mesh)?;
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
