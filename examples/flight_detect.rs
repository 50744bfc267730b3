//! Flies one of the paper's Table 2 scenes (billiard flights as `kdop paper` flies them) in
//! detect or report mode and prints the mean work per query, for profiling:
//! `cargo run --release --example flight_detect -- [interior|aircraft|swept|torus|pipes] [k]`
//!
//! Environment variables: `MODE` (`detect`, default, or `report`), `REPEAT` (passes over the
//! path, default 1), `DESCENT=env` (Algorithm 1's environment-first descent), `WITNESS=0`,
//! `REBOUND=corners` (the paper's re-bounding from k-DOP corners), `FLY_LEAF=N` (the flying
//! object's leaf size, default `BuildOptions::FLYING`'s),
//! `ENV_RULE=longest|minsum|minmax|splatter|sah` and `ENV_SPLIT=mean|median` (the
//! environment's build), `OBJ_RULE` (the object's rule, the same names), `OBJECT=FILE` (a
//! mesh file as the flying object, fitted into the built-in one's box).
use kdop::scene::paper::{Flight, PaperSize};
use kdop::{BuildOptions, Environment, FlyingObject, QueryOptions, QueryState, QueryStats};

fn run<const K: usize>(scene: &kdop::scene::paper::PaperScene, options: &QueryOptions) {
    let env =
        Environment::<K>::build(scene.environment.clone(), &env_options()).expect("environment");
    let leaf = std::env::var("FLY_LEAF")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(BuildOptions::FLYING.leaf_size);
    let obj = FlyingObject::<K>::new(
        scene.object.clone(),
        &BuildOptions {
            leaf_size: leaf,
            rule: rule_var("OBJ_RULE").unwrap_or(BuildOptions::FLYING.rule),
            ..BuildOptions::FLYING
        },
    )
    .expect("object");
    let billiard_path;
    let path = match &scene.flight {
        Flight::Path(path) => path,
        Flight::Billiard {
            bounds,
            speed,
            max_spin,
        } => {
            billiard_path = billiard(
                &env,
                &obj,
                &scene.object,
                *bounds,
                *speed,
                *max_spin,
                scene.steps,
            );
            &billiard_path
        }
    };
    let repeat: usize = std::env::var("REPEAT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    fly(&env, &obj, path, repeat, options, scene.name);
}

/// The axis rule named by environment variable `var` (`AxisRule`'s names), if set.
fn rule_var(var: &str) -> Option<kdop::AxisRule> {
    let name = std::env::var(var).ok()?;
    Some(name.parse().unwrap_or_else(|e| panic!("{var}: {e}")))
}

/// The environment's build options: `BuildOptions::ENVIRONMENT` with `ENV_RULE`
/// (an axis rule's name) and `ENV_SPLIT` (`mean`, `median`) applied.
fn env_options() -> BuildOptions {
    let mut o = BuildOptions::ENVIRONMENT;
    if let Some(rule) = rule_var("ENV_RULE") {
        o.rule = rule;
    }
    if std::env::var("ENV_SPLIT").as_deref() == Ok("median") {
        o.split = kdop::SplitPoint::Median;
    }
    o
}

/// The poses of a billiard flight as `kdop paper` flies it (seed 1): a free start, then
/// reversing on contact.
fn billiard<const K: usize>(
    env: &Environment<K>,
    obj: &FlyingObject<K>,
    object: &kdop::Mesh,
    (lo, hi): (glam::DVec3, glam::DVec3),
    speed: f64,
    max_spin: f64,
    steps: usize,
) -> Vec<kdop::Pose> {
    let (olo, ohi) = object.bounds();
    let margin = glam::DVec3::splat((ohi - olo).length() * 0.5).min((hi - lo) * 0.49);
    let inner = (lo + margin, hi - margin);
    let mut rng = kdop::scene::Rng::new(1 ^ 0x5eed);
    let mut state = QueryState::new();
    let mut start = None;
    for _ in 0..2000 {
        let q = rng.rotation();
        let p = rng.in_box(inner.0, inner.1);
        let pose = kdop::Pose::new(glam::DMat3::from_quat(q), p).expect("pose");
        if !env
            .collide(obj, &pose, &QueryOptions::DETECT, &mut state)
            .expect("query")
            .collides
        {
            start = Some((p, q));
            break;
        }
    }
    let (p0, q0) = start.expect("a free start");
    let mut b = kdop::scene::Billiard::new(1, p0, q0, speed, max_spin, inner);
    (0..steps)
        .map(|_| {
            let pose = b.step();
            if env
                .collide(obj, &pose, &QueryOptions::DETECT, &mut state)
                .expect("query")
                .collides
            {
                b.bounce();
            }
            pose
        })
        .collect()
}

/// The timed flight, apart from the builds (for `valgrind --toggle-collect='*fly*'`).
#[inline(never)]
fn fly<const K: usize>(
    env: &Environment<K>,
    obj: &FlyingObject<K>,
    path: &[kdop::Pose],
    repeat: usize,
    options: &QueryOptions,
    name: &str,
) {
    let mut state = QueryState::new();
    state.prepare(env, obj);
    if options.rebound == kdop::Rebound::Corners {
        obj.prepare_corners();
    }
    let mut sum = QueryStats::default();
    let mut hits = 0usize;
    let t = std::time::Instant::now();
    for _ in 0..repeat {
        for pose in path {
            let r = env.collide(obj, pose, options, &mut state).expect("query");
            hits += usize::from(r.collides);
            sum.nv += r.stats.nv;
            sum.np += r.stats.np;
            sum.nu += r.stats.nu;
            sum.climb_steps += r.stats.climb_steps;
            sum.contacts += r.stats.contacts;
        }
    }
    let n = (path.len() * repeat) as f64;
    println!(
        "{} k={K} (hull {}): {} queries, {hits} colliding, {:.3} us/query, Nv {:.1} Np {:.1} Nu {:.1} climb {:.1} contacts {:.1}",
        name,
        obj.hull_vertex_count(),
        n,
        t.elapsed().as_secs_f64() * 1e6 / n,
        sum.nv as f64 / n,
        sum.np as f64 / n,
        sum.nu as f64 / n,
        sum.climb_steps as f64 / n,
        sum.contacts as f64 / n
    );
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let name = a.get(1).map_or("interior", String::as_str);
    let k: usize = a.get(2).and_then(|s| s.parse().ok()).unwrap_or(6);
    let scene = match name {
        "aircraft" => kdop::scene::paper::aircraft(1, PaperSize::Full),
        "swept" => kdop::scene::paper::swept(1, PaperSize::Full),
        "torus" => kdop::scene::paper::torus_scene(1, PaperSize::Full),
        "pipes" => kdop::scene::paper::pipes(1, PaperSize::Full),
        _ => kdop::scene::paper::interior(1, PaperSize::Full),
    }
    .expect("scene");
    // OBJECT=FILE: a mesh file in the object's role, fitted as `kdop paper --mesh` does.
    let scene = match std::env::var("OBJECT") {
        Ok(path) => scene
            .with_object(&kdop::io::formats::load_mesh(path).expect("object file"))
            .expect("fitted object"),
        Err(_) => scene,
    };
    let mut options = if std::env::var("MODE").as_deref() == Ok("report") {
        QueryOptions::REPORT
    } else {
        QueryOptions::DETECT
    };
    if std::env::var("DESCENT").as_deref() == Ok("env") {
        options.descent = kdop::Descent::EnvironmentFirst;
    }
    if std::env::var("REBOUND").as_deref() == Ok("corners") {
        options.rebound = kdop::Rebound::Corners;
    }
    if std::env::var("WITNESS").as_deref() == Ok("0") {
        options.witness = false;
    }
    match k {
        14 => run::<14>(&scene, &options),
        18 => run::<18>(&scene, &options),
        26 => run::<26>(&scene, &options),
        _ => run::<6>(&scene, &options),
    }
}
