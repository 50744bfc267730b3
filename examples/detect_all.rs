//! Every cell of `kdop bench matrix`, 18-DOP queries of one mode (`MODE=detect`, the
//! default, or `report`), against the FCL means of a saved matrix run: an A/B of a change
//! to the descent in seconds, not minutes.
//! `cargo run --release --example detect_all -- RESULTS.json POSES SEED`, with the
//! `results.json` that `kdop bench matrix --poses POSES --seed SEED --work DIR` left in
//! `DIR` (its FCL means are read; the poses are made again from the same seed). Prints the
//! total and geometric mean of the cells' mean query times, how many cells are above FCL,
//! the summed Nv of one pass, the work of one pass (`QueryStats::work`: deterministic, so
//! two builds compare without timing noise), and the ten cells highest against FCL.
//! `COSTS=FILE` also writes one line per cell: environment, object, the pass's work, the
//! mean query time in µs. Run from the repository root, with `../shared/data/meshes`
//! beside it.
use kdop::{BuildOptions, Environment, FlyingObject, QueryOptions, QueryState};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: detect_all RESULTS.json POSES SEED");
        std::process::exit(2);
    }
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&args[1]).unwrap()).unwrap();
    let poses_n: usize = args[2].parse().unwrap();
    let seed: u64 = args[3].parse().unwrap();
    let dir = "../shared/data/meshes";
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| kdop::io::formats::MeshFormat::from_path(p).is_some())
        .collect();
    paths.sort();
    let meshes: Vec<(String, kdop::Mesh)> = paths
        .iter()
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                kdop::io::formats::load_mesh(p).unwrap(),
            )
        })
        .collect();
    let envs: Vec<Environment<18>> = meshes
        .iter()
        .map(|m| Environment::from_mesh(m.1.clone(), &BuildOptions::ENVIRONMENT).unwrap())
        .collect();
    let objs: Vec<FlyingObject<18>> = meshes
        .iter()
        .map(|m| FlyingObject::new(m.1.clone(), &BuildOptions::FLYING).unwrap())
        .collect();
    let cells = results.as_array().unwrap();
    let (mut csum, mut clog) = (0u64, 0.0f64);
    let mut cell_costs = Vec::new();
    let mode = std::env::var("MODE").unwrap_or_else(|_| "detect".into());
    let options = if mode == "report" {
        QueryOptions::REPORT
    } else {
        QueryOptions::DETECT
    };
    let (mut above, mut tot, mut logsum, mut nvsum, mut worst) = (0, 0.0, 0.0, 0u64, 0.0f64);
    let mut list = Vec::new();
    for (ci, cell) in cells.iter().enumerate() {
        let (e, o) = (ci / meshes.len(), ci % meshes.len());
        assert_eq!(cell["env"].as_str().unwrap(), meshes[e].0);
        let fcl = cell[format!("fcl {mode}")]["mean_us"].as_f64().unwrap();
        let s = kdop::scene::cell_seed(&meshes[e].0, &meshes[o].0, seed);
        let poses = kdop::scene::near_poses(&meshes[e].1, &meshes[o].1, poses_n, s).unwrap();
        let mut state = QueryState::new();
        state.prepare(&envs[e], &objs[o]);
        let (mut us, mut n, mut nv) = (0.0, 0, 0u64);
        let mut ccell = 0u64;
        for pass in 0.. {
            for p in &poses {
                let t0 = Instant::now();
                let r = envs[e].collide(&objs[o], p, &options, &mut state).unwrap();
                us += t0.elapsed().as_secs_f64() * 1e6;
                n += 1;
                if pass == 0 {
                    nv += r.stats.nv;
                    let c = r.stats.work();
                    csum += c;
                    ccell += c;
                    clog += ((c + 1) as f64).ln();
                }
            }
            if us >= 2000.0 {
                break;
            }
        }
        let mean = us / n as f64;
        cell_costs.push(format!(
            "{} {} {} {:.2}",
            meshes[e].0, meshes[o].0, ccell, mean
        ));
        let ratio = mean / fcl;
        worst = worst.max(ratio);
        tot += mean;
        logsum += mean.ln();
        nvsum += nv;
        if ratio > 1.0 {
            above += 1;
        }
        list.push((
            ratio,
            format!(
                "{} x {}: {:.1} vs {:.1} ({:.2})",
                meshes[e].0, meshes[o].0, mean, fcl, ratio
            ),
        ));
    }
    println!(
        "work {csum} (QueryStats::work), geometric mean per query {:.1}",
        (clog / (cells.len() * poses_n) as f64).exp()
    );
    if let Ok(f) = std::env::var("COSTS") {
        std::fs::write(f, cell_costs.join("\n")).unwrap();
    }
    list.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap());
    println!(
        "total {:.0} us, geo {:.2}, above {}, worst {:.2}, nv {}",
        tot,
        (logsum / cells.len() as f64).exp(),
        above,
        worst,
        nvsum
    );
    let all = if std::env::var("ALL").is_ok() {
        list.len()
    } else {
        10
    };
    for l in list.iter().take(all) {
        println!("  {}", l.1);
    }
}
