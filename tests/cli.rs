//! The `kdop` program: the README's main command, the clash check, saved hierarchies.

mod common;

use glam::DVec3;
use kdop::oracle::{brute_force_contacts, brute_force_object_contacts};
use kdop::{BuildOptions, Environment, FlyingObject, Pose};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn kdop(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kdop"))
        .args(args)
        .output()
        .expect("run kdop")
}

/// Runs `kdop` and asserts that it succeeded, showing its standard error if not.
fn kdop_ok(args: &[&str]) -> Output {
    let out = kdop(args);
    assert!(
        out.status.success(),
        "kdop {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Standard output as one JSON value per line.
fn json_lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kdop-cli-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

const KEYS: [&str; 12] = [
    "steps",
    "contact_steps",
    "contacts",
    "mean_us",
    "p50_us",
    "p99_us",
    "max_us",
    "nv_mean",
    "np_mean",
    "nu_mean",
    "build_ms",
    "bytes_per_triangle",
];

/// `kdop demo` is the world: many objects, each frame a step. Its counts are the same for one
/// thread and two, and detect mode lists one contact per colliding pair.
#[test]
fn demo_is_the_world_and_repeats_on_any_thread_count() {
    let run = |extra: &[&str]| -> Value {
        let mut args = vec![
            "demo",
            "--objects",
            "300",
            "--steps",
            "120",
            "--seed",
            "5",
            "--json",
        ];
        args.extend_from_slice(extra);
        serde_json::from_slice(&kdop_ok(&args).stdout).unwrap()
    };
    let one = run(&["--threads", "1"]);
    let two = run(&["--threads", "2"]);
    assert_eq!(one["threads"], 1);
    assert_eq!(two["threads"], 2);
    for k in [
        "objects",
        "steps",
        "contact_steps",
        "contacts",
        "broad_pairs_mean",
        "narrow_pairs_mean",
        "colliding_mean",
        "object_pairs",
        "begins",
        "ends",
        "refattened_mean",
        "env_triangles",
    ] {
        assert_eq!(one[k], two[k], "{k} differs between one thread and two");
    }
    assert_eq!(one["objects"], 300);
    assert_eq!(one["steps"], 120);
    let n = |k: &str| one[k].as_f64().unwrap();
    assert!(n("contact_steps") > 0.0 && n("object_pairs") > 0.0, "{one}");
    // Every pair that begins ends, or is still colliding at the last frame.
    assert!(n("begins") >= n("ends") && n("begins") - n("ends") <= 300.0);
    assert!(n("p50_us") <= n("p99_us") && n("p99_us") <= n("max_us"));
    // The memory split is reported, each share holding something after 120 steps.
    for k in ["record", "broad", "step"] {
        assert!(n(&format!("bytes_per_object_{k}")) > 0.0, "{k}: {one}");
    }
    // What a run found, which the runs below must share.
    let same = |a: &Value, b: &Value, what: &str| {
        for k in [
            "contacts",
            "broad_pairs_mean",
            "colliding_mean",
            "begins",
            "ends",
        ] {
            assert_eq!(a[k], b[k], "{k} differs {what}");
        }
    };
    // Unpinned workers and paced frames change the times, never the answers.
    let paced = run(&["--threads", "2", "--unpinned", "--pace", "1"]);
    assert_eq!(
        (&paced["pinned"], &two["pinned"]),
        (&false.into(), &true.into())
    );
    assert_eq!(paced["pace_ms"], 1.0);
    same(&paced, &two, "when paced and unpinned");
    let detect = run(&["--mode", "detect"]);
    // Detect and report find the same colliding pairs, so the objects fly the same paths.
    assert_eq!(detect["colliding_mean"], one["colliding_mean"]);
    let pair_frames = detect["colliding_mean"].as_f64().unwrap() * 120.0;
    assert_eq!(
        detect["contacts"].as_f64().unwrap(),
        pair_frames.round(),
        "one contact per colliding pair"
    );
    // Live edits (parts moved, removed, inserted, re-shaped; a deforming torus) repeat on
    // any thread count too.
    let edits = ["--edits", "15", "--parts", "400"];
    let one = run(&[&edits[..], &["--threads", "1"]].concat());
    let two = run(&[&edits[..], &["--threads", "2"]].concat());
    same(&one, &two, "between one thread and two, with edits");
    let e = &one["edits"];
    assert_eq!(e["per_frame"], 15);
    let count = |k: &str| e[k]["count"].as_u64().unwrap();
    assert_eq!(
        count("move") + count("remove") + count("insert") + count("replace"),
        15 * 120
    );
    assert_eq!(
        e["parts_end"].as_u64().unwrap(),
        count("insert") + e["parts_start"].as_u64().unwrap() - count("remove"),
        "every insertion and removal reached the world"
    );
    assert!(
        count("replace") > 0 && one["contacts"].as_u64().unwrap() > 0,
        "{one}"
    );
    assert!(e["parts_start"].as_u64().unwrap() >= 400, "{e}");
}

#[test]
fn flight_json_has_the_keys_and_repeats_with_the_seed() {
    let run = || {
        let out = kdop_ok(&["flight", "--steps", "300", "--seed", "7", "--json"]);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v
    };
    let a = run();
    let obj = a.as_object().unwrap();
    let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
    keys.sort_unstable();
    let mut want = KEYS.to_vec();
    want.sort_unstable();
    assert_eq!(keys, want);
    assert_eq!(a["steps"], 300);
    assert!(a["contact_steps"].as_u64().unwrap() <= 300);
    assert!(a["p50_us"].as_f64().unwrap() <= a["p99_us"].as_f64().unwrap());
    assert!(a["p99_us"].as_f64().unwrap() <= a["max_us"].as_f64().unwrap());
    let b = run();
    for k in [
        "steps",
        "contact_steps",
        "contacts",
        "nv_mean",
        "np_mean",
        "nu_mean",
        "bytes_per_triangle",
    ] {
        assert_eq!(a[k], b[k], "{k} differs between runs with the same seed");
    }
}

#[test]
fn flight_runs_for_every_k_and_mode() {
    for k in ["6", "14", "18", "26"] {
        for mode in ["detect", "report"] {
            let out = kdop_ok(&[
                "flight",
                "--steps",
                "40",
                "--k",
                k,
                "--mode",
                mode,
                "--rule",
                "longest-side",
                "--split",
                "median",
                "--leaf",
                "1",
                "--json",
            ]);
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(v["steps"], 40);
        }
    }
}

/// The OBB back-end flies the same flight: contacts reverse the motion, so the flights
/// stay identical only if every check answers as the k-DOPs' did.
#[test]
fn flight_with_obb_trees_flies_the_same_flight() {
    let summary = |extra: &[&str]| -> Value {
        let mut args = vec!["flight", "--steps", "400", "--json"];
        args.extend_from_slice(extra);
        serde_json::from_slice(&kdop_ok(&args).stdout).unwrap()
    };
    let dop = summary(&[]);
    for mode in ["report", "detect"] {
        let obb = summary(&["--bv", "obb", "--mode", mode]);
        assert_eq!(obb["contact_steps"], dop["contact_steps"], "{mode}");
        assert!(
            dop["contact_steps"].as_u64().unwrap() > 0,
            "the flight must touch"
        );
        if mode == "report" {
            assert_eq!(obb["contacts"], dop["contacts"]);
        }
    }
}

fn write_obj(path: &Path, tris: &[[DVec3; 3]]) {
    let mut s = String::from("# test mesh\n");
    for t in tris {
        for p in t {
            s += &format!("v {} {} {}\n", p.x, p.y, p.z);
        }
    }
    for i in 0..tris.len() {
        s += &format!("f {} {} {}\n", 3 * i + 1, 3 * i + 2, 3 * i + 3);
    }
    std::fs::write(path, s).unwrap();
}

fn rows(p: &Pose) -> String {
    p.to_rows()
        .iter()
        .map(|v| format!("{v:?}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The clash check against the library's brute force, through files.
fn check_against_oracle(env_path: &Path, obj_path: &Path, poses: &[Pose], extra: &[&str]) {
    let poses_path = tmp(&format!("poses-{}.txt", poses.len()));
    let mut text = String::from("# r00 r01 r02 tx r10 r11 r12 ty r20 r21 r22 tz\n\n");
    for p in poses {
        text += &rows(p);
        text += "\n";
    }
    std::fs::write(&poses_path, text).unwrap();
    let mut args = vec![
        "check",
        env_path.to_str().unwrap(),
        obj_path.to_str().unwrap(),
        "--poses",
        poses_path.to_str().unwrap(),
        "--json",
    ];
    args.extend_from_slice(extra);
    let lines = json_lines(&kdop_ok(&args));
    assert_eq!(lines.len(), poses.len());
    let env_mesh = kdop::io::formats::load_mesh(env_path).unwrap();
    let obj_mesh = kdop::io::formats::load_mesh(obj_path).unwrap();
    let env = Environment::<6>::from_mesh(env_mesh, &BuildOptions::ENVIRONMENT).unwrap();
    let obj = FlyingObject::<6>::new(obj_mesh, &BuildOptions::FLYING).unwrap();
    let mut hits = 0;
    for (i, (line, pose)) in lines.iter().zip(poses).enumerate() {
        let expect: Vec<Value> = brute_force_contacts(&env, &obj, pose, 0.0)
            .iter()
            .map(|c| serde_json::json!([c.env_triangle, c.object_triangle]))
            .collect();
        assert_eq!(line["pose"], i);
        assert_eq!(line["collides"], !expect.is_empty(), "pose {i}");
        assert_eq!(line["pairs"], Value::Array(expect.clone()), "pose {i}");
        assert!(line["us"].as_f64().unwrap() >= 0.0);
        hits += !expect.is_empty() as usize;
    }
    assert!(
        hits > 0 && hits < poses.len(),
        "poses must mix clashes and clear ones"
    );
}

fn random_poses(seed: u64, n: usize, lo: DVec3, hi: DVec3) -> Vec<Pose> {
    let mut rng = common::Rng::new(seed);
    (0..n)
        .map(|_| {
            let r = rng.rotation();
            let t = DVec3::new(
                rng.range(lo.x, hi.x),
                rng.range(lo.y, hi.y),
                rng.range(lo.z, hi.z),
            );
            Pose::new(r, t).unwrap()
        })
        .collect()
}

#[test]
fn check_matches_brute_force_on_generated_files() {
    let mut rng = common::Rng::new(9);
    let soup = |rng: &mut common::Rng, n: usize, r: f64| -> Vec<[DVec3; 3]> {
        (0..n)
            .map(|_| {
                let c = rng.vec(-r, r);
                [c, c + rng.vec(-0.6, 0.6), c + rng.vec(-0.6, 0.6)]
            })
            .collect()
    };
    let (env_p, obj_p) = (tmp("env.obj"), tmp("obj.obj"));
    write_obj(&env_p, &soup(&mut rng, 150, 6.0));
    write_obj(&obj_p, &soup(&mut rng, 20, 0.8));
    let poses = random_poses(3, 30, DVec3::splat(-6.0), DVec3::splat(6.0));
    check_against_oracle(&env_p, &obj_p, &poses, &[]);
    check_against_oracle(&env_p, &obj_p, &poses, &["--k", "26", "--rule", "min-sum"]);
    check_against_oracle(&env_p, &obj_p, &poses, &["--bv", "obb", "--leaf", "1"]);
    check_against_oracle(&env_p, &obj_p, &poses, &["--bv", "dop14"]);

    // The same through a saved hierarchy.
    let saved = tmp("env.kdop");
    kdop_ok(&[
        "build",
        env_p.to_str().unwrap(),
        "--out",
        saved.to_str().unwrap(),
        "--k",
        "14",
    ]);
    let poses_path = tmp("poses-saved.txt");
    std::fs::write(
        &poses_path,
        poses.iter().map(rows).collect::<Vec<_>>().join("\n"),
    )
    .unwrap();
    let check14 = |env: &Path| {
        kdop(&[
            "check",
            env.to_str().unwrap(),
            obj_p.to_str().unwrap(),
            "--poses",
            poses_path.to_str().unwrap(),
            "--json",
            "--k",
            "14",
        ])
    };
    let (a, b) = (check14(&env_p), check14(&saved));
    let strip = |o: &Output| -> Vec<Value> {
        let mut lines = json_lines(o);
        for v in &mut lines {
            v.as_object_mut().unwrap().remove("us");
        }
        lines
    };
    assert_eq!(strip(&a), strip(&b));
    // A saved hierarchy of another k is refused with a clear message.
    let c = kdop(&[
        "check",
        saved.to_str().unwrap(),
        obj_p.to_str().unwrap(),
        "--poses",
        poses_path.to_str().unwrap(),
        "--k",
        "18",
    ]);
    assert_eq!(c.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&c.stderr).contains("14-DOPs"));
    // OBB trees are not saved: neither built into a file nor loaded from a k-DOP one.
    let d = kdop(&[
        "check",
        saved.to_str().unwrap(),
        obj_p.to_str().unwrap(),
        "--poses",
        poses_path.to_str().unwrap(),
        "--bv",
        "obb",
    ]);
    assert_eq!(d.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&d.stderr).contains("give the mesh"));
    let e = kdop(&[
        "build",
        env_p.to_str().unwrap(),
        "--out",
        tmp("never.kdop").to_str().unwrap(),
        "--bv",
        "obb",
    ]);
    assert_eq!(e.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&e.stderr).contains("hold k-DOPs"));
}

#[test]
fn check_matches_brute_force_on_fcl_meshes() {
    let Some(dir) = common::meshes_dir() else {
        return;
    };
    let env = dir.join("fcl_env.obj");
    let rob = dir.join("fcl_rob.obj");
    let m = kdop::io::formats::load_mesh(&env).unwrap();
    let (lo, hi) = m.bounds();
    check_against_oracle(&env, &rob, &random_poses(11, 24, lo, hi), &[]);
    check_against_oracle(&env, &rob, &random_poses(11, 24, lo, hi), &["--bv", "obb"]);
}

#[test]
fn bad_inputs_give_messages_not_panics() {
    let missing = kdop(&[
        "check",
        "/nonexistent/env.obj",
        "/nonexistent/obj.obj",
        "--poses",
        "/nonexistent/p.txt",
    ]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).starts_with("error:"));

    let (env_p, obj_p) = (tmp("tri.obj"), tmp("tri2.obj"));
    write_obj(&env_p, &[[DVec3::ZERO, DVec3::X, DVec3::Y]]);
    write_obj(&obj_p, &[[DVec3::ZERO, DVec3::X, DVec3::Z]]);
    let poses = tmp("bad-poses.txt");
    std::fs::write(
        &poses,
        "1 0 0 0 0 1 0 0 0 0 1 0\n1 2 3\nnan 0 0 0 0 1 0 0 0 0 1 0\n1 0 0 5 0 1 0 0 0 0 1 0\n",
    )
    .unwrap();
    let out = kdop(&[
        "check",
        env_p.to_str().unwrap(),
        obj_p.to_str().unwrap(),
        "--poses",
        poses.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "invalid poses make the exit status 1"
    );
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0]["collides"], true); // the two triangles share an edge
    assert!(
        lines[1]["error"]
            .as_str()
            .unwrap()
            .contains("expected 12 numbers")
    );
    assert!(lines[2]["error"].is_string());
    assert_eq!(lines[3]["collides"], false);

    let garbage = tmp("garbage.obj");
    std::fs::write(&garbage, "v 0 0 0\nf 1 2 3\n").unwrap();
    let out = kdop(&["flight", "--env", garbage.to_str().unwrap(), "--steps", "5"]);
    assert_eq!(out.status.code(), Some(2));
}

/// `kdop paper table67 --small`: Table 6's rows (four k-DOPs, the OBBs and Algorithm 1) with
/// one count per α, and its plot.
#[test]
fn paper_table67_small_prints_the_table_and_plots_it() {
    let out = tmp("paper");
    let o = kdop_ok(&[
        "paper",
        "table67",
        "--small",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v[0]["data"].as_array().unwrap();
    assert_eq!(rows.len(), 6);
    for r in rows {
        assert_eq!(r["nv"].as_array().unwrap().len(), 8, "{r}");
    }
    let svg = std::fs::read_to_string(out.join("paper-spheres-2000.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("OBB (RAPID)"));
    // The timed companion: one time per α for each bounding volume (and parry3d's rows
    // with the `peers` feature). The inner sphere is the outer one scaled by 1 - α about
    // its centre, so it lies strictly inside: no contact at any α.
    let timed = &v[1]["data"];
    let kdop_rows = timed["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["engine"] == "kdop")
        .count();
    assert_eq!(kdop_rows, 5);
    for r in timed["rows"].as_array().unwrap() {
        let ms = r["ms"].as_array().unwrap();
        assert_eq!(ms.len(), 8, "{r}");
        assert!(ms.iter().all(|t| t.as_f64().unwrap() > 0.0), "{r}");
    }
    assert!(
        timed["exact_contact"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c == false)
    );
}

/// `kdop paper --mesh`: a real model in a scene's role (here the Torus flight's object, for
/// Table 1's timings), and a typed error for a malformed role.
#[test]
fn paper_takes_real_meshes_in_scene_roles() {
    let bad = kdop(&["paper", "table1", "--small", "--mesh", "torus.wing=x.obj"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no role 'wing'"));
    let bad = kdop(&["paper", "table1", "--small", "--mesh", "moon.object=x.obj"]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no scene 'moon'"));
    let Some(dir) = common::meshes_dir() else {
        eprintln!("skipped: ../shared/data/meshes is absent");
        return;
    };
    let knot = dir.join("trefoil_knot.obj");
    let o = kdop_ok(&[
        "paper",
        "table1",
        "--small",
        "--json",
        "--mesh",
        &format!("torus.object={}", knot.display()),
    ]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["rows"].as_array().unwrap().len(), 4, "one row per k");
}

/// Runs `kdop` and asserts that it refused the arguments (exit status 2) with `says` in
/// its standard error; returns its output.
fn refused(args: &[&str], says: &str) -> Output {
    let out = kdop(args);
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    out
}

/// Standard error as text.
fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A floor of two triangles at z = 0 (OBJ text) and a tetrahedron through it.
const FLOOR: &str = "v -5 -5 0\nv 5 -5 0\nv 5 5 0\nv -5 5 0\nf 1 2 3\nf 1 3 4\n";
const TETRA: &str =
    "v 0 0 -0.5\nv 1 0 0.5\nv 0 1 0.5\nv 0 0 1\nf 1 2 3\nf 1 2 4\nf 1 3 4\nf 2 3 4\n";
const TWO_POSES: &str = "1 0 0 0  0 1 0 0  0 0 1 0 # through the floor\n\
                         # lifted clear:\n\
                         1 0 0 0  0 1 0 0  0 0 1 10\n";

fn write(name: &str, content: &[u8]) -> PathBuf {
    let p = tmp(name);
    std::fs::write(&p, content).unwrap();
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The JSON answers to `check ENV OBJECT` at TWO_POSES, timings removed.
fn answers(env: &Path, obj: &Path, extra: &[&str]) -> Vec<Value> {
    let stem = env.file_stem().unwrap().to_string_lossy();
    let poses = write(&format!("{stem}-two-poses.txt"), TWO_POSES.as_bytes());
    let mut args = vec!["check", s(env), s(obj), "--poses", s(&poses), "--json"];
    args.extend_from_slice(extra);
    let mut lines = json_lines(&kdop_ok(&args));
    for v in &mut lines {
        v.as_object_mut().unwrap().remove("us");
    }
    lines
}

#[test]
fn an_obj_with_a_byte_order_mark_clashes_as_without_it() {
    let plain = write("floor.obj", FLOOR.as_bytes());
    let marked = write(
        "floor-bom.obj",
        &[b"\xEF\xBB\xBF", FLOOR.as_bytes()].concat(),
    );
    let obj = write("bom-tetra.obj", TETRA.as_bytes());
    let a = answers(&plain, &obj, &[]);
    assert_eq!(
        a[0]["collides"], true,
        "the tetrahedron goes through the floor"
    );
    assert_eq!(a[1]["collides"], false);
    assert_eq!(answers(&marked, &obj, &[]), a);
}

#[test]
fn an_assembly_of_several_stl_solids_clashes_with_its_second_solid() {
    // The first solid is far away; the second is the floor the tetrahedron goes through.
    let solid = |name: &str, tris: &[[[f64; 3]; 3]]| {
        let mut t = format!("solid {name}\n");
        for tri in tris {
            t += "facet normal 0 0 1\nouter loop\n";
            for p in tri {
                t += &format!("vertex {} {} {}\n", p[0], p[1], p[2]);
            }
            t += "endloop\nendfacet\n";
        }
        t + &format!("endsolid {name}\n")
    };
    let far = solid(
        "far",
        &[[[50.0, 50.0, 0.0], [51.0, 50.0, 0.0], [50.0, 51.0, 0.0]]],
    );
    let floor = solid(
        "floor",
        &[[[-5.0, -5.0, 0.0], [5.0, -5.0, 0.0], [5.0, 5.0, 0.0]]],
    );
    let env = write("assembly.stl", (far + &floor).as_bytes());
    let obj = write("assembly-tetra.obj", TETRA.as_bytes());
    let a = answers(&env, &obj, &[]);
    assert_eq!(a[0]["collides"], true);
    // Triangles are numbered in file order: the floor's is number 1.
    for pair in a[0]["pairs"].as_array().unwrap() {
        assert_eq!(pair[0], 1);
    }
}

#[test]
fn option_values_out_of_range_are_refused_with_the_range() {
    for steps in ["18446744073709551615", "1000000001", "0"] {
        let out = kdop(&["flight", "--steps", steps]);
        assert_eq!(out.status.code(), Some(2), "--steps {steps}");
        assert!(stderr(&out).contains("1..=1000000000"), "{}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"));
    }
    for leaf in ["0", "4097", "-1"] {
        let out = kdop(&["flight", "--leaf", leaf, "--steps", "1"]);
        assert_eq!(out.status.code(), Some(2), "--leaf {leaf}");
        assert!(!stderr(&out).contains("panicked"));
    }
    assert!(stderr(&kdop(&["flight", "--leaf", "0"])).contains("1..=4096"));
    for pace in ["-1", "1001", "NaN", "soon"] {
        refused(
            &["demo", &format!("--pace={pace}"), "--steps", "1"],
            "from 0 to 1000",
        );
    }
    for args in [
        &["demo", "--resting=2", "--steps", "1"][..],
        &["bench", "broad", "--asleep=-0.5", "--objects", "10"],
    ] {
        refused(args, "not a share from 0 to 1");
    }
}

#[test]
fn build_never_overwrites_an_input_and_asks_before_a_mesh_extension() {
    let mesh = write("build-input.obj", FLOOR.as_bytes());
    let out = kdop(&["build", s(&mesh), "--out", s(&mesh), "--force"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("refusing to overwrite an input"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read_to_string(&mesh).unwrap(),
        FLOOR,
        "the input is untouched"
    );
    // The same file by another name.
    let other_name = mesh.parent().unwrap().join(".").join("build-input.obj");
    let out = kdop(&["build", s(&mesh), "--out", s(&other_name)]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&mesh).unwrap(), FLOOR);

    let stl = tmp("build-output.stl");
    let _ = std::fs::remove_file(&stl);
    let out = kdop(&["build", s(&mesh), "--out", s(&stl)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--force"), "{}", stderr(&out));
    assert!(!stl.exists());
    kdop_ok(&["build", s(&mesh), "--out", s(&stl), "--force"]);
    assert!(std::fs::read(&stl).unwrap().starts_with(b"KDOPENV\0"));
}

#[test]
fn errors_name_the_file_its_role_and_where() {
    let floor = write("named-floor.obj", FLOOR.as_bytes());
    let tetra = write("named-tetra.obj", TETRA.as_bytes());
    let poses = write("named-poses.txt", TWO_POSES.as_bytes());
    let nan = write("named-nan.obj", b"v 0 0 0\nv 1 0 0\nv 0 inf 0\n\nf 1 2 3\n");
    // After parsing: the role, the file, the triangle and its line.
    let e = stderr(&kdop(&["check", s(&floor), s(&nan), "--poses", s(&poses)]));
    assert!(
        e.contains("OBJECT") && e.contains("named-nan.obj") && e.contains("triangle 0 (line 5)"),
        "{e}"
    );
    let e = stderr(&kdop(&["check", s(&nan), s(&tetra), "--poses", s(&poses)]));
    assert!(e.contains("ENV") && e.contains("named-nan.obj"), "{e}");
    // A missing poses file is named.
    let e = stderr(&kdop(&[
        "check",
        s(&floor),
        s(&tetra),
        "--poses",
        "no-such-poses.txt",
    ]));
    assert!(e.contains("poses file no-such-poses.txt"), "{e}");
    // A damaged saved hierarchy is reported as one, not as an unknown mesh extension.
    let saved = tmp("named-damaged.kdop");
    kdop_ok(&["build", s(&floor), "--out", s(&saved)]);
    let mut bytes = std::fs::read(&saved).unwrap();
    bytes[0] ^= 0xff;
    std::fs::write(&saved, &bytes).unwrap();
    let e = stderr(&kdop(&[
        "check",
        s(&saved),
        s(&tetra),
        "--poses",
        s(&poses),
    ]));
    assert!(
        e.contains("named-damaged.kdop") && e.contains("not a kdop hierarchy file"),
        "{e}"
    );
    assert!(!e.contains("unknown extension"), "{e}");
}

#[test]
fn pose_limits_are_stated_in_numbers_and_comments_follow_poses() {
    let floor = write("limits-floor.obj", FLOOR.as_bytes());
    let tetra = write("limits-tetra.obj", TETRA.as_bytes());
    let poses = write(
        "limits-poses.txt",
        b"1 0 0 0 0 1 0 0 0 0 1 1e13 # too far\n2e6 0 0 0 0 1 0 0 0 0 1 0\n1 0 0 0 0 1 0 0 0 0 1 10 # fine\n",
    );
    let out = kdop(&[
        "check",
        s(&floor),
        s(&tetra),
        "--poses",
        s(&poses),
        "--json",
    ]);
    let lines = json_lines(&out);
    let e0 = lines[0]["error"].as_str().unwrap();
    let e1 = lines[1]["error"].as_str().unwrap();
    assert!(
        e0.contains("4398046511104") && !e0.contains("MAX_POSE"),
        "{e0}"
    );
    assert!(e1.contains("1048576") && !e1.contains("MAX_POSE"), "{e1}");
    assert_eq!(
        lines[2]["collides"], false,
        "a trailing comment is a comment"
    );
}

#[test]
fn detect_mode_says_it_found_the_first_contact_not_how_many() {
    let floor = write("detect-floor.obj", FLOOR.as_bytes());
    let tetra = write("detect-tetra.obj", TETRA.as_bytes());
    let poses = write("detect-poses.txt", TWO_POSES.as_bytes());
    let out = kdop_ok(&[
        "check",
        s(&floor),
        s(&tetra),
        "--poses",
        s(&poses),
        "--mode",
        "detect",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.lines().next().unwrap();
    assert!(first.contains("first contact found"), "{first}");
    assert!(!first.contains("triangle pairs"), "{first}");
}

#[test]
fn build_options_given_for_a_saved_hierarchy_are_reported_as_ignored() {
    let floor = write("ignored-floor.obj", FLOOR.as_bytes());
    let tetra = write("ignored-tetra.obj", TETRA.as_bytes());
    let poses = write("ignored-poses.txt", TWO_POSES.as_bytes());
    let saved = tmp("ignored.kdop");
    kdop_ok(&["build", s(&floor), "--out", s(&saved)]);
    let quiet = kdop_ok(&["check", s(&saved), s(&tetra), "--poses", s(&poses)]);
    assert!(!stderr(&quiet).contains("warning"), "{}", stderr(&quiet));
    let out = kdop_ok(&[
        "check",
        s(&saved),
        s(&tetra),
        "--poses",
        s(&poses),
        "--leaf",
        "2",
        "--rule",
        "splatter",
    ]);
    let e = stderr(&out);
    assert!(
        e.contains("--leaf is ignored")
            && e.contains("--rule and --split apply to the object only"),
        "{e}"
    );
}

#[test]
fn reader_warnings_reach_standard_error_and_strict_makes_them_errors() {
    let odd = write(
        "warned.obj",
        format!("{FLOOR}frobnicate 1\nl 1 2\n").as_bytes(),
    );
    let tetra = write("warned-tetra.obj", TETRA.as_bytes());
    let poses = write("warned-poses.txt", TWO_POSES.as_bytes());
    let out = kdop_ok(&["check", s(&odd), s(&tetra), "--poses", s(&poses)]);
    let e = stderr(&out);
    assert!(
        e.contains("warning: ENV: ")
            && e.contains("warned.obj, line 7: unknown statement 'frobnicate'"),
        "{e}"
    );
    let out = kdop(&[
        "--strict",
        "check",
        s(&odd),
        s(&tetra),
        "--poses",
        s(&poses),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--strict"));
}

/// A triangle soup of `n` triangles of size about `size` within `radius` of the origin.
fn soup(rng: &mut common::Rng, n: usize, radius: f64, size: f64) -> Vec<[DVec3; 3]> {
    (0..n)
        .map(|_| {
            let c = rng.vec(-radius, radius);
            [c, c + rng.vec(-size, size), c + rng.vec(-size, size)]
        })
        .collect()
}

/// A JSON list of name pairs (`"begin"`, `"end"` of `kdop world --json`).
fn name_pairs(v: &Value) -> Vec<(String, String)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_str().unwrap().into(), p[1].as_str().unwrap().into()))
        .collect()
}

/// A pose as the JSON array of a scene file.
fn pose_json(p: &Pose) -> Value {
    serde_json::json!(p.to_rows().to_vec())
}

/// `kdop world` on a generated scene against brute force, frame by frame: shapes of very
/// different sizes, a scaled part, report and detect objects, filters, an object that joins
/// late and objects that keep their pose when a frame leaves them out.
#[test]
fn world_replays_a_scene_file_as_brute_force_says() {
    use std::collections::{BTreeMap, BTreeSet};
    let mut rng = common::Rng::new(19);
    // name, triangles, radius, triangle size: 100x between the largest and the smallest.
    let shape_specs = [
        ("big", 120, 5.0, 1.5),
        ("small", 30, 0.8, 0.5),
        ("tiny", 6, 0.05, 0.05),
    ];
    let dir = tmp("scene");
    std::fs::create_dir_all(&dir).unwrap();
    let mut shapes = BTreeMap::new();
    for (name, n, r, size) in shape_specs {
        let tris = soup(&mut rng, n, r, size);
        write_obj(&dir.join(format!("{name}.obj")), &tris);
        let mesh = kdop::Mesh::from_triangles(&tris).unwrap();
        shapes.insert(
            name,
            FlyingObject::<18>::new(mesh, &BuildOptions::FLYING).unwrap(),
        );
    }
    // name, shape, placement, group, mask.
    let scaled = Pose::new(
        glam::DMat3::from_diagonal(DVec3::new(0.6, 1.0, 1.4)) * rng.rotation(),
        DVec3::new(1.0, -1.0, 0.5),
    )
    .unwrap();
    let parts = [
        ("wall", "big", scaled, 1u32, u32::MAX),
        (
            "post",
            "small",
            Pose::from_translation(DVec3::new(4.0, 0.0, 0.0)).unwrap(),
            1,
            1,
        ),
    ];
    // name, shape, detect, group, mask, has an initial pose.
    let objects = [
        ("A", "small", false, 1u32, u32::MAX, true),
        ("B", "tiny", false, 1, u32::MAX, true),
        ("C", "big", false, 1, u32::MAX, true),
        ("D", "small", true, 1, u32::MAX, true),
        ("E", "small", false, 2, 2, true),
        ("F", "tiny", false, 2, 3, true),
        ("G", "small", false, 1, u32::MAX, false),
    ];
    let accepts = |g1: u32, m1: u32, g2: u32, m2: u32| g1 & m2 != 0 && g2 & m1 != 0;
    let mut poses: BTreeMap<&str, Pose> = BTreeMap::new();
    let mut frames_json = Vec::new();
    let mut truth = Vec::new(); // per frame: (a, b) -> contacts (full set)
    let mut frame_poses = Vec::new();
    let place = |rng: &mut common::Rng| Pose::new(rng.rotation(), rng.vec(-3.5, 3.5)).unwrap();
    let mut initial = serde_json::Map::new();
    for &(name, _, _, _, _, has_pose) in &objects {
        if has_pose {
            let p = place(&mut rng);
            poses.insert(name, p);
            initial.insert(name.to_string(), pose_json(&p));
        }
    }
    for f in 0..24 {
        let mut moved = serde_json::Map::new();
        for &(name, ..) in &objects {
            // G joins at frame 5; others move in about two frames of three.
            let due = if name == "G" {
                f >= 5
            } else {
                rng.below(3) != 0
            };
            if due {
                let p = place(&mut rng);
                poses.insert(name, p);
                moved.insert(name.to_string(), pose_json(&p));
            }
        }
        frames_json.push(Value::Object(moved));
        let mut pairs: BTreeMap<(String, String), BTreeSet<[u32; 2]>> = BTreeMap::new();
        for (i, &(a, sa, _, ga, ma, _)) in objects.iter().enumerate() {
            let Some(pa) = poses.get(a) else { continue };
            for &(b, sb, _, gb, mb, _) in &objects[i + 1..] {
                let Some(pb) = poses.get(b) else { continue };
                if !accepts(ga, ma, gb, mb) {
                    continue;
                }
                let c: BTreeSet<[u32; 2]> =
                    brute_force_object_contacts(&shapes[sa], pa, &shapes[sb], pb, 0.0)
                        .iter()
                        .map(|c| [c.a_triangle, c.b_triangle])
                        .collect();
                if !c.is_empty() {
                    pairs.insert((a.into(), b.into()), c);
                }
            }
            for &(p, sp, placement, gp, mp) in &parts {
                if !accepts(ga, ma, gp, mp) {
                    continue;
                }
                let c: BTreeSet<[u32; 2]> =
                    brute_force_object_contacts(&shapes[sa], pa, &shapes[sp], &placement, 0.0)
                        .iter()
                        .map(|c| [c.a_triangle, c.b_triangle])
                        .collect();
                if !c.is_empty() {
                    pairs.insert((a.into(), p.into()), c);
                }
            }
        }
        truth.push(pairs);
        frame_poses.push(poses.clone());
    }
    // The file lists objects out of name order: the answer must not depend on it.
    let mut objects_json: Vec<Value> = objects
        .iter()
        .map(|&(name, shape, detect, group, mask, _)| {
            let mut o = serde_json::json!({"name": name, "shape": shape,
                "mode": if detect { "detect" } else { "report" }, "group": group, "mask": mask});
            if let Some(p) = initial.get(name) {
                o["pose"] = p.clone();
            }
            o
        })
        .collect();
    objects_json.reverse();
    let scene = serde_json::json!({
        "k": 18,
        "shapes": shape_specs.iter().map(|s| (s.0.to_string(), Value::from(format!("{}.obj", s.0))))
            .collect::<serde_json::Map<_, _>>(),
        "parts": parts.iter().map(|&(name, shape, p, group, mask)| serde_json::json!({
            "name": name, "shape": shape, "pose": pose_json(&p), "group": group, "mask": mask}))
            .collect::<Vec<_>>(),
        "objects": objects_json,
        "frames": frames_json,
    });
    let path = dir.join("scene.json");
    std::fs::write(&path, scene.to_string()).unwrap();
    let lines = json_lines(&kdop_ok(&["world", s(&path), "--json"]));
    assert_eq!(lines.len(), truth.len());

    let detect: BTreeSet<&str> = objects.iter().filter(|o| o.2).map(|o| o.0).collect();
    let mut before: BTreeSet<(String, String)> = BTreeSet::new();
    let (mut object_pairs, mut part_pairs, mut detect_pairs, mut begins, mut ends) =
        (0, 0, 0, 0, 0);
    for (f, (line, expect)) in lines.iter().zip(&truth).enumerate() {
        assert_eq!(line["frame"], f);
        let got = line["pairs"].as_array().unwrap();
        let keys: Vec<(String, String)> = got
            .iter()
            .map(|p| {
                (
                    p["a"].as_str().unwrap().into(),
                    p["b"].as_str().unwrap().into(),
                )
            })
            .collect();
        let want: Vec<(String, String)> = expect.keys().cloned().collect();
        assert_eq!(
            keys, want,
            "frame {f}: the colliding pairs, in (a, b) order"
        );
        for (p, key) in got.iter().zip(&keys) {
            let contacts: Vec<[u32; 2]> = serde_json::from_value(p["contacts"].clone()).unwrap();
            let full = &expect[key];
            let both_detect = detect.contains(key.0.as_str())
                && (detect.contains(key.1.as_str()) || parts.iter().any(|q| q.0 == key.1));
            if both_detect {
                detect_pairs += 1;
                assert_eq!(
                    contacts.len(),
                    1,
                    "frame {f} {key:?}: detect lists one contact"
                );
                assert!(
                    full.contains(&contacts[0]),
                    "frame {f} {key:?}: {contacts:?}"
                );
            } else {
                let want: Vec<[u32; 2]> = full.iter().copied().collect();
                assert_eq!(contacts, want, "frame {f} {key:?}");
            }
            if parts.iter().any(|q| q.0 == key.1) {
                part_pairs += 1;
            } else {
                object_pairs += 1;
            }
        }
        let now: BTreeSet<(String, String)> = expect.keys().cloned().collect();
        let began: Vec<_> = now.difference(&before).cloned().collect();
        let ended: Vec<_> = before.difference(&now).cloned().collect();
        assert_eq!(name_pairs(&line["begin"]), began, "frame {f}: begins");
        assert_eq!(name_pairs(&line["end"]), ended, "frame {f}: ends");
        begins += began.len();
        ends += ended.len();
        before = now;
    }
    // The scene must exercise what it claims to.
    assert!(
        object_pairs >= 5 && part_pairs >= 5,
        "{object_pairs} {part_pairs}"
    );
    assert!(
        detect_pairs >= 1 && begins >= 5 && ends >= 5,
        "{detect_pairs} {begins} {ends}"
    );

    // The same scene replays to the same lines, but for the times.
    let strip = |mut v: Vec<Value>| {
        v.iter_mut().for_each(|l| {
            l.as_object_mut().unwrap().remove("us");
            l.as_object_mut().unwrap().remove("edit_us");
        });
        v
    };
    let again = json_lines(&kdop_ok(&["world", s(&path), "--json"]));
    assert_eq!(strip(again), strip(lines.clone()));

    // With --geometry, each contact's shape lies on both placed triangles.
    let with_shapes = json_lines(&kdop_ok(&["world", s(&path), "--json", "--geometry"]));
    let placed = |f: usize, body: &str, tri: u64| -> kdop::Triangle {
        let (shape, pose) = match objects.iter().find(|o| o.0 == body) {
            Some(o) => (o.1, frame_poses[f][body]),
            None => {
                let p = parts.iter().find(|p| p.0 == body).unwrap();
                (p.1, p.2)
            }
        };
        let t = shapes[shape].bvh().triangle(tri as u32).unwrap();
        t.map(|v| pose.transform_point(v))
    };
    let mut shapes_seen = 0;
    for (f, (line, plain)) in with_shapes.iter().zip(&lines).enumerate() {
        for (pair, plain_pair) in line["pairs"]
            .as_array()
            .unwrap()
            .iter()
            .zip(plain["pairs"].as_array().unwrap())
        {
            assert_eq!(pair["contacts"], plain_pair["contacts"]);
            let (a, b) = (pair["a"].as_str().unwrap(), pair["b"].as_str().unwrap());
            let contacts = pair["contacts"].as_array().unwrap();
            let shapes_json = pair["shapes"].as_array().unwrap();
            assert_eq!(shapes_json.len(), contacts.len());
            for (c, shape) in contacts.iter().zip(shapes_json) {
                let (ta, tb) = (
                    placed(f, a, c[0].as_u64().unwrap()),
                    placed(f, b, c[1].as_u64().unwrap()),
                );
                let corners: Vec<DVec3> = match shape.as_object().unwrap().iter().next().unwrap() {
                    (k, v) if k == "point" => vec![
                        serde_json::from_value::<[f64; 3]>(v.clone())
                            .unwrap()
                            .into(),
                    ],
                    (_, v) => serde_json::from_value::<Vec<[f64; 3]>>(v.clone())
                        .unwrap()
                        .into_iter()
                        .map(DVec3::from)
                        .collect(),
                };
                let want = kdop::contact_shape(&ta, &tb).expect("a reported contact meets");
                let want: Vec<DVec3> = match want {
                    kdop::ContactShape::Point(p) => vec![p],
                    kdop::ContactShape::Segment(p, q) => vec![p, q],
                    kdop::ContactShape::Polygon(v) => v,
                };
                assert_eq!(corners, want, "frame {f} {a}-{b} {c}");
                shapes_seen += 1;
            }
        }
    }
    assert!(shapes_seen > 20, "{shapes_seen}");
}

/// `kdop world` with a frame's edits — parts inserted, removed (and a name used again),
/// moved, and a shape deformed from mesh files — against brute force on fresh builds of the
/// test's own meshes, frame by frame: pairs, contacts, begins and ends.
#[test]
fn world_replays_scene_edits_as_brute_force_says() {
    use std::collections::{BTreeMap, BTreeSet};
    let mut rng = common::Rng::new(23);
    let dir = tmp("scene-edits");
    std::fs::create_dir_all(&dir).unwrap();
    let mut meshes: BTreeMap<&str, Vec<[DVec3; 3]>> = BTreeMap::new();
    for (name, n, r, size) in [
        ("big", 100, 4.0, 1.5),
        ("small", 30, 0.8, 0.5),
        ("blob", 40, 1.0, 0.7),
    ] {
        let tris = soup(&mut rng, n, r, size);
        write_obj(&dir.join(format!("{name}.obj")), &tris);
        meshes.insert(name, tris);
    }
    let build = |tris: &[[DVec3; 3]]| {
        FlyingObject::<18>::new(
            kdop::Mesh::from_triangles(tris).unwrap(),
            &BuildOptions::FLYING,
        )
        .unwrap()
    };
    let place = |rng: &mut common::Rng| Pose::new(rng.rotation(), rng.vec(-3.0, 3.0)).unwrap();
    // Objects: name and shape; all report, all placed every frame.
    let objects = [("A", "small"), ("B", "blob"), ("C", "blob"), ("D", "small")];
    let mut parts: BTreeMap<String, (&str, Pose)> = BTreeMap::new();
    let mut initial = Vec::new();
    for (name, shape) in [("wall", "big"), ("post", "small"), ("lump", "blob")] {
        let p = place(&mut rng);
        parts.insert(name.into(), (shape, p));
        initial.push(serde_json::json!({"name": name, "shape": shape, "pose": pose_json(&p)}));
    }
    let mut frames_json = Vec::new();
    type Named = BTreeMap<(String, String), Vec<[u32; 2]>>;
    let mut truth: Vec<Named> = Vec::new();
    let mut edits_seen = [0usize; 4];
    for f in 0..24 {
        let mut frame = serde_json::Map::new();
        let names: Vec<String> = parts.keys().cloned().collect();
        if f % 4 == 3 && !names.is_empty() {
            let gone = names[rng.below(names.len() as u64) as usize].clone();
            parts.remove(&gone);
            frame.insert("remove".into(), serde_json::json!([gone]));
            edits_seen[0] += 1;
        }
        if f % 4 == 1 || f == 7 {
            // Frame 7 inserts again the name frame 3 removed, if it was "wall".
            let name = if f == 7 {
                "wall".to_string()
            } else {
                format!("n{f}")
            };
            if !parts.contains_key(&name) {
                let shape = ["big", "small", "blob"][rng.below(3) as usize];
                let p = place(&mut rng);
                parts.insert(name.clone(), (shape, p));
                frame.insert(
                    "insert".into(),
                    serde_json::json!([{"name": name, "shape": shape, "pose": pose_json(&p)}]),
                );
                edits_seen[1] += 1;
            }
        }
        let names: Vec<String> = parts.keys().cloned().collect();
        if f % 3 == 2 && !names.is_empty() {
            let moved = names[rng.below(names.len() as u64) as usize].clone();
            let p = place(&mut rng);
            parts.get_mut(&moved).unwrap().1 = p;
            frame.insert("move".into(), serde_json::json!({ moved: pose_json(&p) }));
            edits_seen[2] += 1;
        }
        if f % 5 == 4 {
            // B's shape (also C's and the lump's) deforms: a wobble, or a jump and stretch.
            let far = f % 10 == 9;
            let jump = if far { rng.vec(-1.5, 1.5) } else { DVec3::ZERO };
            let blob: Vec<[DVec3; 3]> = meshes["blob"]
                .iter()
                .map(|t| t.map(|v| v * if far { 1.6 } else { 1.0 } + jump + rng.vec(-0.05, 0.05)))
                .collect();
            let file = format!("blob-{f}.obj");
            write_obj(&dir.join(&file), &blob);
            meshes.insert("blob", blob);
            frame.insert("deform".into(), serde_json::json!({"B": file}));
            edits_seen[3] += 1;
        }
        let mut poses = BTreeMap::new();
        for (name, _) in objects {
            let p = place(&mut rng);
            poses.insert(name, p);
            frame.insert(name.into(), pose_json(&p));
        }
        frames_json.push(Value::Object(frame));
        let built: BTreeMap<&str, FlyingObject<18>> =
            meshes.iter().map(|(k, v)| (*k, build(v))).collect();
        let mut pairs = BTreeMap::new();
        let mut meet = |a: &str, sa: &str, pa: &Pose, b: &str, sb: &str, pb: &Pose| {
            let c: Vec<[u32; 2]> = brute_force_object_contacts(&built[sa], pa, &built[sb], pb, 0.0)
                .iter()
                .map(|c| [c.a_triangle, c.b_triangle])
                .collect();
            if !c.is_empty() {
                pairs.insert((a.to_string(), b.to_string()), c);
            }
        };
        for (i, &(a, sa)) in objects.iter().enumerate() {
            for &(b, sb) in &objects[i + 1..] {
                meet(a, sa, &poses[a], b, sb, &poses[b]);
            }
            for (p, (sp, pp)) in &parts {
                meet(a, sa, &poses[a], p, sp, pp);
            }
        }
        truth.push(pairs);
    }
    assert!(edits_seen.iter().all(|&n| n >= 3), "{edits_seen:?}");
    let scene = serde_json::json!({
        "shapes": {"big": "big.obj", "small": "small.obj", "blob": "blob.obj"},
        "parts": initial,
        "objects": objects.iter().map(|(n, sh)| serde_json::json!({"name": n, "shape": sh}))
            .collect::<Vec<_>>(),
        "frames": frames_json,
    });
    let path = dir.join("scene.json");
    std::fs::write(&path, scene.to_string()).unwrap();
    let lines = json_lines(&kdop_ok(&["world", s(&path), "--json"]));
    assert_eq!(lines.len(), truth.len());
    let mut before: BTreeSet<(String, String)> = BTreeSet::new();
    let (mut part_pairs, mut ends) = (0, 0);
    for (f, (line, expect)) in lines.iter().zip(&truth).enumerate() {
        let edited = frames_json[f]
            .as_object()
            .unwrap()
            .keys()
            .any(|k| ["insert", "remove", "move", "deform"].contains(&k.as_str()));
        let edit_us = line["edit_us"].as_f64().unwrap();
        assert_eq!(edit_us > 0.0, edited, "frame {f}: edit time {edit_us}");
        let got: Named = line["pairs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let key = (
                    p["a"].as_str().unwrap().into(),
                    p["b"].as_str().unwrap().into(),
                );
                (key, serde_json::from_value(p["contacts"].clone()).unwrap())
            })
            .collect();
        assert_eq!(&got, expect, "frame {f}");
        part_pairs += got
            .keys()
            .filter(|k| !objects.iter().any(|o| o.0 == k.1))
            .count();
        let now: BTreeSet<(String, String)> = expect.keys().cloned().collect();
        let began: Vec<_> = now.difference(&before).cloned().collect();
        let ended: Vec<_> = before.difference(&now).cloned().collect();
        assert_eq!(name_pairs(&line["begin"]), began, "frame {f}: begins");
        assert_eq!(name_pairs(&line["end"]), ended, "frame {f}: ends");
        ends += ended.len();
        before = now;
    }
    assert!(part_pairs >= 10 && ends >= 5, "{part_pairs} {ends}");

    // The world as the last frame left it, saved and read back, answers as that frame did.
    let saved = dir.join("edited.kdopw");
    kdop_ok(&["world", s(&path), "--save", s(&saved)]);
    let mut names: Vec<String> = initial
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect();
    for f in &frames_json {
        for p in f
            .get("insert")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            names.push(p["name"].as_str().unwrap().to_string());
        }
    }
    names.extend(objects.iter().map(|o| o.0.to_string()));
    let mut back = kdop::World::<18>::load_from_file(&saved).unwrap().world;
    back.step().unwrap();
    let got: Named = back
        .pairs()
        .iter()
        .map(|p| {
            let key = (
                names[p.a_user as usize].clone(),
                names[p.b_user as usize].clone(),
            );
            (key, back.contacts(p).unwrap().to_vec())
        })
        .collect();
    assert_eq!(&got, truth.last().unwrap(), "the saved world's first step");
}

/// A fresh folder for scene files, holding the tetrahedron as `tet.obj`.
fn scene_dir(name: &str) -> PathBuf {
    let dir = tmp(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("tet.obj"), TETRA).unwrap();
    dir
}

/// Every fault of a scene file is named by the file and the JSON path of the value.
#[test]
fn bad_scene_files_name_the_file_and_the_place() {
    let dir = scene_dir("bad-scenes");
    let p12 = "[1,0,0,0, 0,1,0,0, 0,0,1,0]";
    let base = |objects: &str, frames: &str| {
        format!(
            r#"{{"shapes": {{"tet": "tet.obj", "gone": "missing.obj"}},
                "parts": [{{"name": "P", "shape": "tet", "pose": {p12}}}],
                "objects": {objects}, "frames": {frames}}}"#
        )
    };
    let ok_objects = r#"[{"name": "A", "shape": "tet"}]"#;
    let cases: Vec<(String, &[&str])> = vec![
        ("{\"k\": 7}".into(), &["at k", "6, 14, 18 or 26"]),
        ("[1, 2".into(), &["not JSON", "line 1"]),
        (
            base(ok_objects, r#"[{"A": [1,0,0,0, 0,1,0,0, 0,0,1]}]"#),
            &["frames[0].A", "12 numbers", "found 11"],
        ),
        (
            base(ok_objects, r#"[{}, {"A": [1,0,0,0, 0,1,0,0, 0,0,"x",0]}]"#),
            &["frames[1].A[10]", "expected a number"],
        ),
        (
            base(ok_objects, r#"[{"A": [1,0,0,0, 0,1,0,0, 0,0,0,0]}]"#),
            &["frames[0].A", "no inverse"],
        ),
        (
            base(ok_objects, r#"[{"P": [1,0,0,0, 0,1,0,0, 0,0,1,0]}]"#),
            &["frames[0].P", "a part"],
        ),
        (
            base(ok_objects, r#"[{"Z": [1,0,0,0, 0,1,0,0, 0,0,1,0]}]"#),
            &["frames[0].Z", "no object"],
        ),
        (
            base(r#"[{"name": "A", "shape": "cube"}]"#, "[]"),
            &["objects[0].shape", "no shape named \"cube\""],
        ),
        (
            base(
                r#"[{"name": "A", "shape": "tet"}, {"name": "P", "shape": "tet"}]"#,
                "[]",
            ),
            &["objects[1].name", "taken by parts[0].name"],
        ),
        (
            base(r#"[{"name": "A", "shape": "tet", "maks": 3}]"#, "[]"),
            &["objects[0].maks", "unknown key"],
        ),
        (
            base(r#"[{"name": "A", "shape": "tet", "mask": -1}]"#, "[]"),
            &["objects[0].mask", "integer"],
        ),
        (
            base(r#"[{"name": "A", "shape": "tet", "mode": "all"}]"#, "[]"),
            &["objects[0].mode", "\"report\" or \"detect\""],
        ),
        (
            base(r#"{"A": 1}"#, "[]"),
            &["at objects", "expected an array"],
        ),
        (
            base(ok_objects, r#"[{"remove": ["Q"]}]"#),
            &["frames[0].remove[0]", "no part named \"Q\" at this frame"],
        ),
        (
            base(
                ok_objects,
                r#"[{"remove": ["P"]}, {"move": {"P": [1,0,0,0, 0,1,0,0, 0,0,1,0]}}]"#,
            ),
            &["frames[1].move.P", "no part named \"P\" at this frame"],
        ),
        (
            base(
                ok_objects,
                r#"[{"move": {"A": [1,0,0,0, 0,1,0,0, 0,0,1,0]}}]"#,
            ),
            &["frames[0].move.A", "is an object"],
        ),
        (
            base(
                ok_objects,
                r#"[{"insert": [{"name": "P", "shape": "tet"}]}]"#,
            ),
            &["frames[0].insert[0].name", "taken at this frame"],
        ),
        (
            base(
                ok_objects,
                r#"[{"insert": [{"name": "Q", "shape": "cube"}]}]"#,
            ),
            &["frames[0].insert[0].shape", "no shape named"],
        ),
        (
            base(ok_objects, r#"[{"deform": {"Z": "tet.obj"}}]"#),
            &["frames[0].deform.Z", "no part named"],
        ),
        (
            base(r#"[{"name": "move", "shape": "tet"}]"#, "[]"),
            &["objects[0].name", "edit key"],
        ),
    ];
    for (i, (text, needles)) in cases.iter().enumerate() {
        let path = dir.join(format!("bad-{i}.json"));
        std::fs::write(&path, text).unwrap();
        let out = kdop(&["world", s(&path)]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "case {i}: {err}");
        assert!(
            err.contains(&format!("bad-{i}.json")),
            "case {i} names the file: {err}"
        );
        for n in *needles {
            assert!(err.contains(n), "case {i} should say {n:?}: {err}");
        }
    }
    // A deformation's mesh must keep the shape's triangles, and be there; both are named
    // with the file and the JSON path.
    std::fs::write(dir.join("tri.obj"), "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n").unwrap();
    for (file, needle) in [
        ("tri.obj", "triangles differ"),
        ("absent.obj", "absent.obj"),
    ] {
        let path = dir.join("bad-deform.json");
        let text = r#"{"shapes": {"tet": "tet.obj"}, "objects": [{"name": "A", "shape": "tet"}],
                      "frames": [{}, {"deform": {"A": "FILE"}}]}"#;
        std::fs::write(&path, text.replace("FILE", file)).unwrap();
        let err = stderr(&kdop(&["world", s(&path)]));
        assert!(
            err.contains("bad-deform.json")
                && err.contains("frames[1].deform.A")
                && err.contains(needle),
            "{err}"
        );
    }
    // A mesh that cannot be read is named with its shape (after the file parsed).
    let path = dir.join("missing-mesh.json");
    std::fs::write(&path, base(ok_objects, "[]")).unwrap();
    let err = stderr(&kdop(&["world", s(&path)]));
    assert!(
        err.contains("shape gone") && err.contains("missing.obj"),
        "{err}"
    );
}

/// Scene poses are rigid by the format: a scaled, sheared or mirroring one is applied as
/// the affine map it is, with a warning that names the file and the JSON path of the
/// first such pose (and how many more); `--strict` refuses the scene. A rotation written
/// to seven digits is rigid enough to pass without a word.
#[test]
fn scene_poses_that_are_not_rigid_are_named() {
    let dir = scene_dir("nonrigid-scenes");
    // A quarter turn about z to seven digits, then the same with x scaled by 1.5.
    let turn = "[0.7071068,-0.7071068,0,0, 0.7071068,0.7071068,0,0, 0,0,1,0]";
    let scaled = "[1.5,0,0,0, 0,1,0,0, 0,0,1,0]";
    let sheared = "[1,0.2,0,3, 0,1,0,0, 0,0,1,0]";
    let scene = |part: &str, a: &str| {
        format!(
            r#"{{"shapes": {{"tet": "tet.obj"}},
                "parts": [{{"name": "P", "shape": "tet", "pose": {part}}}],
                "objects": [{{"name": "A", "shape": "tet"}}],
                "frames": [{{"A": {turn}}}, {{"A": {a}}}]}}"#
        )
    };
    let rigid = dir.join("rigid.json");
    std::fs::write(&rigid, scene(turn, turn)).unwrap();
    let out = kdop(&["world", s(&rigid)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));

    let bent = dir.join("bent.json");
    std::fs::write(&bent, scene(sheared, scaled)).unwrap();
    let out = kdop(&["world", s(&bent)]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("warning")
            && err.contains("bent.json")
            && err.contains("parts[0].pose and 1 more")
            && err.contains("not a rotation and a translation"),
        "{err}"
    );
    let out = kdop(&["--strict", "world", s(&bent)]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("bent.json") && err.contains("parts[0].pose") && err.contains("--strict"),
        "{err}"
    );
}

/// `bench broad --mesh`: a mesh's triangle boxes as the bodies, one line with the triangle
/// count and pairs checked; a missing mesh is an error naming it, before any output.
#[test]
fn bench_broad_takes_a_mesh_of_boxes() {
    // The floor's two triangles share an edge, and the tetrahedron's four meet the floor's.
    let mesh = write(
        "broad-mesh.obj",
        format!(
            "{FLOOR}v 0 0 -0.5\nv 1 0 0.5\nv 0 1 0.5\nv 0 0 1\nf 5 6 7\nf 5 6 8\nf 5 7 8\nf 6 7 8\n"
        )
        .as_bytes(),
    );
    let out = kdop_ok(&[
        "bench",
        "broad",
        "--mesh",
        s(&mesh),
        "--frames",
        "3",
        "--json",
    ]);
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["objects"], 6);
    assert_eq!(lines[0]["checked"], true);
    let missing = tmp("no-such-mesh.obj");
    let out = refused(
        &["bench", "broad", "--mesh", s(&missing)],
        "no-such-mesh.obj",
    );
    assert!(out.stdout.is_empty(), "nothing printed before the error");
}

/// `bench deform --mesh`: a real mesh waved and poked in place of the sheet, one line per
/// motion with its triangle count; beside `--worn`, which deforms the sheet, it is refused.
#[test]
fn bench_deform_takes_a_mesh() {
    let mesh = write("deform-mesh.obj", FLOOR.as_bytes());
    let out = kdop_ok(&[
        "bench",
        "deform",
        "--mesh",
        s(&mesh),
        "--frames",
        "2",
        "--json",
    ]);
    let lines = json_lines(&out);
    let motions: Vec<&str> = lines
        .iter()
        .map(|l| l["motion"].as_str().unwrap())
        .collect();
    assert_eq!(motions, ["wave", "poke"]);
    assert!(lines.iter().all(|l| l["triangles"] == 2), "{lines:?}");
    refused(
        &["bench", "deform", "--mesh", s(&mesh), "--worn"],
        "not with --mesh",
    );
}
