//! `kdop flight`: one object on a billiard flight (§5.2.2) through the built-in scene or
//! given meshes, every check timed and summarised (the single-object demo before the world).

use crate::common::{
    Bv, HierarchyArgs, ModeArg, load_environment, load_mesh, load_obb_environment, merge_parts,
};
use crate::flights::{self, Check};
use crate::with_k;
use clap::Args;
use glam::DVec3;
use kdop::scene::paper::Flight;
use kdop::scene::{demo_environment, demo_object};
use kdop::{Environment, FlyingObject, Mesh, ObbQueryState, ObbTree, QueryState};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct FlightArgs {
    #[command(flatten)]
    pub hierarchy: HierarchyArgs,
    /// Number of flight steps (one collision check each), 1 to 10^9. Statistics are kept
    /// in constant memory, so any count runs.
    #[arg(long, default_value_t = 5000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    pub steps: u64,
    /// Seed of the scene and the flight.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Detect (stop at the first contact) or report (all intersecting triangle pairs).
    #[arg(long, value_enum, default_value = "report")]
    pub mode: ModeArg,
    /// Environment mesh (OBJ, STL, PLY) or saved hierarchy instead of the built-in room.
    #[arg(long)]
    pub env: Option<PathBuf>,
    /// Flying object mesh instead of the built-in torus knot.
    #[arg(long)]
    pub object: Option<PathBuf>,
    /// Print the summary as one JSON object.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &FlightArgs) -> kdop::Result<ExitCode> {
    match a.hierarchy.bv() {
        Bv::Dop(k) => with_k!(k, KK => fly::<KK>(a)),
        Bv::Obb => fly_obb(a),
    }
}

/// What the flight needs to know of the scene, whatever the bounding volume.
struct Scene {
    /// What was built, for the header line.
    label: String,
    /// The environment's bounding box.
    lo: DVec3,
    hi: DVec3,
    /// The object's bounding-box extent in its own frame.
    object_extent: DVec3,
    build_ms: f64,
    bytes_per_triangle: f64,
}

fn fly<const K: usize>(a: &FlightArgs) -> kdop::Result<ExitCode> {
    let env_opts = a.hierarchy.env_options();
    let obj_opts = a.hierarchy.object_options();
    let obj_mesh: Mesh = match &a.object {
        Some(p) => load_mesh(p, "OBJECT")?,
        None => demo_object()?,
    };
    let env_parts = match &a.env {
        Some(_) => None,
        None => Some(demo_environment(a.seed)?),
    };
    let start = Instant::now();
    let env = match (&a.env, env_parts) {
        (Some(p), _) => load_environment::<K>(p, "ENV", &a.hierarchy)?,
        (None, Some(parts)) => Environment::<K>::build(parts, &env_opts)?,
        (None, None) => unreachable!("one of the two is set"),
    };
    let obj = FlyingObject::<K>::new(obj_mesh, &obj_opts).map_err(|e| e.context("OBJECT"))?;
    let build_ms = start.elapsed().as_secs_f64() * 1e3;

    let bounds = env.bounds();
    let lo = DVec3::new(
        bounds.lo(0).into(),
        bounds.lo(1).into(),
        bounds.lo(2).into(),
    );
    let hi = DVec3::new(
        bounds.hi(0).into(),
        bounds.hi(1).into(),
        bounds.hi(2).into(),
    );
    let scene = Scene {
        label: format!(
            "{}-DOP, {:?} at the {:?}, leaf size {}: environment {} triangles in {} parts, object {} triangles",
            K,
            env_opts.rule,
            env_opts.split,
            env_opts.leaf_size,
            env.triangle_count(),
            env.part_count(),
            obj.bvh().triangle_count(),
        ),
        lo,
        hi,
        object_extent: obj.bvh().root_dop().box_extent(),
        build_ms,
        bytes_per_triangle: env.memory_bytes() as f64 / env.triangle_count() as f64,
    };
    let mut state = QueryState::new();
    flight(a, &scene, &mut |pose, options| {
        let r = env.collide(&obj, pose, options, &mut state)?;
        Ok((r.collides, r.contacts.len(), r.stats))
    })
}

/// The same flight with the OBBTree back-end: the environment's parts merged into one
/// mesh where they stand.
fn fly_obb(a: &FlightArgs) -> kdop::Result<ExitCode> {
    let obj_mesh: Mesh = match &a.object {
        Some(p) => load_mesh(p, "OBJECT")?,
        None => demo_object()?,
    };
    let start = Instant::now();
    let (env_leaf, obj_leaf) = a.hierarchy.obb_leaves();
    let (env, env_mesh) = match &a.env {
        Some(p) => load_obb_environment(p, "ENV", env_leaf)?,
        None => {
            let mesh = merge_parts(&demo_environment(a.seed)?)?;
            (ObbTree::from_mesh(&mesh, env_leaf)?, mesh)
        }
    };
    let obj = ObbTree::from_mesh(&obj_mesh, obj_leaf)?;
    let build_ms = start.elapsed().as_secs_f64() * 1e3;
    let (lo, hi) = env_mesh.bounds();
    let (olo, ohi) = obj_mesh.bounds();
    let scene = Scene {
        label: format!(
            "OBB tree, leaf size {}: environment {} triangles, object {} triangles",
            env_leaf,
            env.triangle_count(),
            obj.triangle_count()
        ),
        lo,
        hi,
        object_extent: ohi - olo,
        build_ms,
        bytes_per_triangle: env.memory_bytes() as f64 / env.triangle_count() as f64,
    };
    let mut state = ObbQueryState::new();
    flight(a, &scene, &mut |pose, options| {
        let r = env.collide(&obj, pose, options, &mut state)?;
        Ok((r.collides, r.contacts.len(), r.stats))
    })
}

/// The billiard flight and its summary, for any bounding volume.
fn flight(a: &FlightArgs, scene: &Scene, check: &mut Check) -> kdop::Result<ExitCode> {
    let (lo, hi) = (scene.lo, scene.hi);
    let o = scene.object_extent;
    let margin = (o * 0.5).min((hi - lo) * 0.49);
    let path = Flight::Billiard {
        bounds: (lo + margin, hi - margin),
        speed: o.length() * 0.02,
        max_spin: 0.03,
    };
    let options = a.mode.options();
    if !a.json {
        eprintln!("{}; built in {:.1} ms", scene.label, scene.build_ms);
    }
    let bar = flights::bar(a.steps, "flying");
    let t = flights::fly(&path, a.steps, false, a.seed, 0.0, &options, check, &bar)?;
    bar.finish_and_clear();
    let s = &t.stats;
    let (mean, p50, p99, max) = (s.mean(), s.percentile(0.5), s.percentile(0.99), s.max());
    let n = s.count().max(1) as f64;
    let (build_ms, bytes_per_triangle) = (scene.build_ms, scene.bytes_per_triangle);
    if a.json {
        let v = serde_json::json!({
            "steps": s.count(),
            "contact_steps": t.contact_steps,
            "contacts": t.contacts,
            "mean_us": mean,
            "p50_us": p50,
            "p99_us": p99,
            "max_us": max,
            "nv_mean": t.nv as f64 / n,
            "np_mean": t.np as f64 / n,
            "nu_mean": t.nu as f64 / n,
            "build_ms": build_ms,
            "bytes_per_triangle": bytes_per_triangle,
        });
        println!("{v}");
    } else {
        println!("steps               {}", s.count());
        println!("steps in contact    {}", t.contact_steps);
        println!(
            "contacts            {} ({})",
            t.contacts,
            if options.mode == kdop::Mode::Detect {
                "one per contact step in detect mode"
            } else {
                "intersecting triangle pairs"
            }
        );
        println!("check time (us)     mean {mean:.1}  p50 {p50:.1}  p99 {p99:.1}  max {max:.1}");
        println!(
            "per check           Nv {:.1}  Np {:.1}  Nu {:.1}",
            t.nv as f64 / n,
            t.np as f64 / n,
            t.nu as f64 / n
        );
        println!("build time          {build_ms:.1} ms");
        println!("memory              {bytes_per_triangle:.1} bytes per environment triangle");
    }
    Ok(ExitCode::SUCCESS)
}
