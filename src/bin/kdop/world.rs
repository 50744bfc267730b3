//! `kdop world SCENE.json`: replays a scene file (see `scene_file`) through a [`World`],
//! one step per frame, and prints each frame's colliding pairs, contacts and events.
//!
//! Names make the output independent of insertion order: a pair reads object before part,
//! two objects in name order; pairs, events and contacts are sorted.

use crate::common::load_mesh;
use crate::scene_file::{self, Edit, SceneFile};
use crate::stats::TimeStats;
use crate::with_k;
use clap::Args;
use indicatif::ProgressBar;
use kdop::{Body, BuildOptions, ObjectDesc, ObjectId, PartDesc, PartHandle, World};
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct WorldArgs {
    /// The scene file (JSON): k, shapes, parts, objects and frames of poses.
    pub scene: PathBuf,
    /// One JSON object per frame and line: {"frame", "us", "edit_us", "pairs": [{"a",
    /// "b", "contacts"}], "begin": [[a, b]], "end": [[a, b]]} ("edit_us": the frame's edits
    /// in the world, mesh files read apart).
    #[arg(long)]
    pub json: bool,
    /// With --json, each pair also lists "shapes": per contact, where the two triangles
    /// meet in world coordinates: {"point": p}, {"segment": [p, q]} or {"polygon": [p, ...]}.
    #[arg(long, requires = "json")]
    pub geometry: bool,
    /// After the last frame, save the world as it then stands (shapes as deformed, parts
    /// as edited, objects where they are) to this file (`World::save`; user values are
    /// indices into the scene's names, parts first, then objects).
    #[arg(long)]
    pub save: Option<PathBuf>,
}

pub fn run(a: &WorldArgs) -> kdop::Result<ExitCode> {
    let scene = scene_file::read(&a.scene)?;
    if let [first, ..] = &scene.not_rigid[..] {
        let more = match scene.not_rigid.len() {
            1 => String::new(),
            n => format!(" and {} more", n - 1),
        };
        let why = format!(
            "the pose at {first}{more} is not a rotation and a translation (it scales, \
             shears or mirrors); it is applied as the affine map it is"
        );
        if crate::common::strict() {
            return Err(kdop::Error::InvalidParameter {
                name: "scene file",
                reason: format!("{why}, and --strict makes that an error"),
            }
            .context(format!("scene {}", a.scene.display())));
        }
        eprintln!("warning: scene {}: {why}", a.scene.display());
    }
    with_k!(scene.k, KK => replay::<KK>(a, &scene))
}

/// One frame's answer in names: `(a, b, contacts, shapes)` with `contacts` as `[a's, b's]`
/// and `shapes` (with `--geometry`) in the same order.
type NamedPair = (usize, usize, Vec<[u32; 2]>, Vec<serde_json::Value>);

fn replay<const K: usize>(a: &WorldArgs, scene: &SceneFile) -> kdop::Result<ExitCode> {
    let start = Instant::now();
    let mut world = World::<K>::new();
    let mut shapes = Vec::with_capacity(scene.shapes.len());
    // Per shape, its triangles: a deformation's mesh file must have the same.
    let mut triangles = Vec::with_capacity(scene.shapes.len());
    // A shape that some frame deforms is built for deforming (fewer, fuller leaves).
    let mut deformed = vec![false; scene.shapes.len()];
    for edit in scene.frames.iter().flat_map(|f| &f.edits) {
        if let Edit::Deform { shape, .. } = edit {
            deformed[*shape] = true;
        }
    }
    for (i, (name, path)) in scene.shapes.iter().enumerate() {
        let role = format!("scene {}, shape {name}", a.scene.display());
        let mesh = load_mesh(path, &role)?;
        triangles.push(mesh.triangles().to_vec());
        let build = if deformed[i] {
            BuildOptions::DEFORMING
        } else {
            world.options().shape_build
        };
        shapes.push(
            world
                .add_shape_with(mesh, &build)
                .map_err(|e| e.context(role))?,
        );
    }
    // Names, parts then objects: a body's user value is its index here.
    let mut names: Vec<&str> = scene.parts.iter().map(|p| p.name.as_str()).collect();
    let first_object = names.len();
    names.extend(scene.objects.iter().map(|o| o.name.as_str()));
    // Inserted in name order, so that which side of a pair a query sees first (and so the
    // contact a detect-mode pair finds) does not depend on the file's order.
    let mut part_order: Vec<usize> = (0..scene.initial).collect();
    part_order.sort_by_key(|&i| &scene.parts[i].name);
    let mut part_handles: Vec<Option<PartHandle>> = vec![None; scene.parts.len()];
    let add_part = |world: &mut World<K>, i: usize| {
        let p = &scene.parts[i];
        let desc = PartDesc {
            group: p.group,
            mask: p.mask,
            user: i as u64,
        };
        world
            .add_part(shapes[p.shape], p.pose, desc)
            .map_err(|e| e.context(format!("scene {}, part {}", a.scene.display(), p.name)))
    };
    for i in part_order {
        part_handles[i] = Some(add_part(&mut world, i)?);
    }
    let mut order: Vec<usize> = (0..scene.objects.len()).collect();
    order.sort_by_key(|&i| &scene.objects[i].name);
    let mut handles: Vec<Option<ObjectId>> = vec![None; scene.objects.len()];
    let mut pending: Vec<Option<kdop::Pose>> = scene.objects.iter().map(|o| o.pose).collect();
    eprintln!(
        "loaded {} shapes, {} parts, {} objects, {} frames in {:.1} ms ({K}-DOP)",
        scene.shapes.len(),
        scene.parts.len(),
        scene.objects.len(),
        scene.frames.len(),
        start.elapsed().as_secs_f64() * 1e3
    );

    // The threads' pose caches sized for the shapes before the first timed step.
    world.prepare();
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let bar = ProgressBar::new(scene.frames.len() as u64);
    let mut times = TimeStats::default();
    let mut touching_frames = 0u64;
    let mut pairs: Vec<NamedPair> = Vec::new();
    let mut begins: Vec<(usize, usize)> = Vec::new();
    let mut ends: Vec<(usize, usize)> = Vec::new();
    let mut edit_times = TimeStats::default();
    for (frame, spec) in scene.frames.iter().enumerate() {
        bar.inc(1);
        let mut edit_us = 0.0;
        if !spec.edits.is_empty() {
            edit_us = apply_edits::<K>(
                a,
                scene,
                &spec.edits,
                &mut world,
                &shapes,
                &triangles,
                &mut part_handles,
                &add_part,
            )?;
            edit_times.record(edit_us);
        }
        for &(o, pose) in &spec.placed {
            pending[o] = Some(pose);
        }
        for &o in &order {
            let Some(pose) = pending[o].take() else {
                continue;
            };
            match handles[o] {
                Some(h) => world.set_pose(h, pose)?,
                None => {
                    let spec = &scene.objects[o];
                    let desc = ObjectDesc {
                        mode: spec.mode,
                        group: spec.group,
                        mask: spec.mask,
                        user: (first_object + o) as u64,
                    };
                    handles[o] = Some(world.add_object(shapes[spec.shape], pose, desc)?);
                }
            }
        }
        let t0 = Instant::now();
        world.step()?;
        let us = t0.elapsed().as_secs_f64() * 1e6;
        times.record(us);

        pairs.clear();
        begins.clear();
        ends.clear();
        for p in world.pairs() {
            let (x, y, swap) = named(p.a, p.b, p.a_user, p.b_user, &names);
            let mut contacts: Vec<([u32; 2], serde_json::Value)> = world
                .contacts(p)?
                .iter()
                .map(|&c| (c, serde_json::Value::Null))
                .collect();
            if a.geometry {
                for (c, shape) in contacts.iter_mut().zip(world.contact_shapes(p)?) {
                    c.1 = shape_json(&shape);
                }
            }
            if swap {
                contacts.iter_mut().for_each(|c| c.0.swap(0, 1));
                contacts.sort_unstable_by_key(|c| c.0);
            }
            if p.event == kdop::PairEvent::Begin {
                begins.push((x, y));
            }
            let (tris, shapes) = contacts.into_iter().unzip();
            pairs.push((x, y, tris, shapes));
        }
        for e in world.ended() {
            let (x, y, _) = named(e.a, e.b, e.a_user, e.b_user, &names);
            ends.push((x, y));
        }
        let by_name = |&(x, y): &(usize, usize)| (names[x], names[y]);
        pairs.sort_by(|p, q| by_name(&(p.0, p.1)).cmp(&by_name(&(q.0, q.1))));
        begins.sort_by_key(by_name);
        ends.sort_by_key(by_name);
        touching_frames += u64::from(!pairs.is_empty());

        if a.json {
            let name_pair = |&(x, y): &(usize, usize)| serde_json::json!([names[x], names[y]]);
            let v = serde_json::json!({
                "frame": frame,
                "us": us,
                "edit_us": edit_us,
                "pairs": pairs.iter().map(|(x, y, c, shapes)| {
                    let mut v = serde_json::json!({ "a": names[*x], "b": names[*y], "contacts": c });
                    if a.geometry {
                        v["shapes"] = serde_json::json!(shapes);
                    }
                    v
                }).collect::<Vec<_>>(),
                "begin": begins.iter().map(name_pair).collect::<Vec<_>>(),
                "end": ends.iter().map(name_pair).collect::<Vec<_>>(),
            });
            writeln!(out, "{v}")?;
        } else {
            let list = |v: &[(usize, usize)]| {
                v.iter()
                    .map(|&(x, y)| format!("{}-{}", names[x], names[y]))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let contacts: usize = pairs.iter().map(|p| p.2.len()).sum();
            let mut line = format!(
                "frame {frame}: {} pairs touching, {contacts} triangle pairs ({us:.0} us)",
                pairs.len()
            );
            if !begins.is_empty() {
                line += &format!("; begin {}", list(&begins));
            }
            if !ends.is_empty() {
                line += &format!("; end {}", list(&ends));
            }
            writeln!(out, "{line}")?;
        }
    }
    out.flush()?;
    bar.finish_and_clear();
    if let Some(path) = &a.save {
        world.save_to_file(path)?;
        eprintln!(
            "saved the world ({} parts, {} objects) to {}",
            world.part_count(),
            world.object_count(),
            path.display()
        );
    }
    if let Some(never) = scene
        .objects
        .iter()
        .zip(&handles)
        .find(|(_, h)| h.is_none())
    {
        eprintln!(
            "warning: object {} is never placed (no pose, and no frame names it)",
            never.0.name
        );
    }
    eprintln!(
        "{} frames, {touching_frames} with contact; step p50 {:.0} us, p99 {:.0} us, max {:.0} us",
        times.count(),
        times.percentile(0.5),
        times.percentile(0.99),
        times.max()
    );
    if edit_times.count() > 0 {
        eprintln!(
            "{} frames with edits; edits per frame p50 {:.0} us, max {:.0} us (mesh files read \
             outside the timer)",
            edit_times.count(),
            edit_times.percentile(0.5),
            edit_times.max()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Applies a frame's edits in order; returns the microseconds spent in the world's calls.
#[allow(clippy::too_many_arguments)]
fn apply_edits<const K: usize>(
    a: &WorldArgs,
    scene: &SceneFile,
    edits: &[Edit],
    world: &mut World<K>,
    shapes: &[kdop::ShapeId],
    triangles: &[Vec<[u32; 3]>],
    parts: &mut [Option<PartHandle>],
    add_part: &impl Fn(&mut World<K>, usize) -> kdop::Result<PartHandle>,
) -> kdop::Result<f64> {
    let mut us = 0.0;
    let context = |what: &str| format!("scene {}, {what}", a.scene.display());
    for edit in edits {
        // The parser checked that every part named is alive at its frame.
        let handle = |p: usize| parts[p].expect("a live part");
        let t0 = Instant::now();
        match edit {
            Edit::Remove(p) => {
                world.remove_part(handle(*p))?;
                parts[*p] = None;
            }
            Edit::Insert(p) => parts[*p] = Some(add_part(world, *p)?),
            Edit::Move(p, pose) => world
                .set_part_placement(handle(*p), *pose)
                .map_err(|e| e.context(context(&format!("part {}", scene.parts[*p].name))))?,
            Edit::Deform { shape, file, at } => {
                let role = context(&format!("{at}: {}", file.display()));
                let mesh = load_mesh(file, &role)?;
                if mesh.triangles() != triangles[*shape].as_slice() {
                    return Err(kdop::Error::InvalidParameter {
                        name: "deform",
                        reason: format!(
                            "the triangles differ from shape {}'s (a deformation moves vertices \
                             only)",
                            scene.shapes[*shape].0
                        ),
                    }
                    .context(role));
                }
                let t1 = Instant::now();
                world
                    .deform_shape(shapes[*shape], mesh.vertices())
                    .map_err(|e| e.context(role))?;
                us += t1.elapsed().as_secs_f64() * 1e6;
                continue;
            }
        }
        us += t0.elapsed().as_secs_f64() * 1e6;
    }
    Ok(us)
}

/// A pair's bodies as name indices, object before part and two objects in name order, and
/// whether that swapped them.
fn named(a: Body, b: Body, a_user: u64, b_user: u64, names: &[&str]) -> (usize, usize, bool) {
    let (x, y) = (a_user as usize, b_user as usize);
    let swap = match (a, b) {
        (Body::Part(_), Body::Object(_)) => true,
        (Body::Object(_), Body::Object(_)) => names[x] > names[y],
        _ => false,
    };
    if swap { (y, x, true) } else { (x, y, false) }
}

/// A contact's shape as JSON: `{"point": p}`, `{"segment": [p, q]}` or `{"polygon": [...]}`.
fn shape_json(shape: &kdop::ContactShape) -> serde_json::Value {
    let p = |v: &glam::DVec3| serde_json::json!([v.x, v.y, v.z]);
    match shape {
        kdop::ContactShape::Point(a) => serde_json::json!({ "point": p(a) }),
        kdop::ContactShape::Segment(a, b) => serde_json::json!({ "segment": [p(a), p(b)] }),
        kdop::ContactShape::Polygon(v) => {
            serde_json::json!({ "polygon": v.iter().map(p).collect::<Vec<_>>() })
        }
    }
}
