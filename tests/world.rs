//! The world against brute force: every step's colliding pairs, their contacts and their
//! events equal those of all object pairs and object-part pairs tested triangle by triangle,
//! on seeded scenes with objects far larger and far smaller than each other, filters,
//! detect and report modes switched, objects resting or set to the same pose again (their
//! pairs' answers kept from the step before), teleports, removals and additions, parts
//! moved, re-shaped, removed and added, objects given other shapes, and shapes deformed (a
//! wobble, or far and fast, with degenerate triangles), each answer checked against the
//! oracle on a fresh build of the test's own meshes; a world of the real meshes in
//! `../shared/data/meshes`, flying through each other and across surfaces; a crowd with
//! more colliding pairs than a step has batches of jobs; the same answers on one thread and
//! four; handle misuse refused with typed errors; probes of objects moved since the last
//! step; a world loaded in one step that gives its scratch back and answers as a fresh one.

mod common;

use common::{Rng, cluster, random_pose};
use glam::DVec3;
use kdop::oracle::brute_force_object_contacts;
use kdop::{
    Body, BuildOptions, Error, FlyingObject, Mesh, Mode, ObjectDesc, ObjectId, PairEvent, PartDesc,
    PartHandle, Pose, ShapeId, World,
};
use std::collections::{BTreeMap, BTreeSet};

/// What the world knows about an object or part, kept by the test independently.
#[derive(Clone, Copy)]
struct Item {
    shape: usize,
    pose: Pose,
    group: u32,
    mask: u32,
    mode: Mode,
}

/// A frame's answer as a map from pair to contacts (sorted), and the events.
type Answer = BTreeMap<(Body, Body), Vec<[u32; 2]>>;

impl Item {
    /// An item of `shape` at `pose` in group 1, accepting every group.
    fn open(shape: usize, pose: Pose, mode: Mode) -> Item {
        Item {
            shape,
            pose,
            group: 1,
            mask: u32::MAX,
            mode,
        }
    }
}

/// The vertices of `now` that differ from `was` (in order): their indices and positions, as
/// a sparse deformation gives them.
fn moved_vertices(now: &[DVec3], was: &[DVec3]) -> (Vec<u32>, Vec<DVec3>) {
    now.iter()
        .zip(was)
        .enumerate()
        .filter(|(_, (now, was))| now != was)
        .map(|(i, (now, _))| (i as u32, *now))
        .unzip()
}

fn accepts(a: &Item, b: &Item) -> bool {
    a.group & b.mask != 0 && b.group & a.mask != 0
}

/// The oracle's colliding pairs with every contact, over the test's own meshes (each
/// shape built afresh from them, so a deformation is checked against a new build).
fn brute(
    meshes: &[Mesh],
    objects: &BTreeMap<ObjectId, Item>,
    parts: &BTreeMap<PartHandle, Item>,
) -> Answer {
    let mut out = Answer::new();
    let fresh: Vec<FlyingObject<18>> = meshes
        .iter()
        .map(|m| FlyingObject::new(m.clone(), &BuildOptions::FLYING).unwrap())
        .collect();
    let obj = |s: usize| &fresh[s];
    let pairs = |a: &Item, b: &Item| -> Vec<[u32; 2]> {
        brute_force_object_contacts(obj(a.shape), &a.pose, obj(b.shape), &b.pose, 0.0)
            .into_iter()
            .map(|c| [c.a_triangle, c.b_triangle])
            .collect()
    };
    for (i, (ka, a)) in objects.iter().enumerate() {
        for (kb, b) in objects.iter().skip(i + 1) {
            if accepts(a, b) {
                let c = pairs(a, b);
                if !c.is_empty() {
                    out.insert((Body::Object(*ka), Body::Object(*kb)), c);
                }
            }
        }
        for (kp, p) in parts {
            if accepts(a, p) {
                let c = pairs(a, p);
                if !c.is_empty() {
                    out.insert((Body::Object(*ka), Body::Part(*kp)), c);
                }
            }
        }
    }
    out
}

/// A random object: one of `shapes`, a rigid pose within `spread`, one of two groups, a
/// mask of group 1 alone one time in `narrow`, detect one time in three.
fn random_object(rng: &mut Rng, shapes: usize, spread: f64, narrow: u64) -> Item {
    Item {
        shape: rng.below(shapes as u64) as usize,
        pose: random_pose(rng, spread, false),
        group: 1 << rng.below(2),
        mask: if rng.below(narrow) == 0 { 1 } else { u32::MAX },
        mode: if rng.below(3) == 0 {
            Mode::Detect
        } else {
            Mode::Report
        },
    }
}

/// Probes of random shapes at random poses, each against brute force over every object
/// and part that its filter accepts.
fn check_probes(
    world: &World<18>,
    meshes: &[Mesh],
    shapes: &[ShapeId],
    objects: &BTreeMap<ObjectId, Item>,
    parts: &BTreeMap<PartHandle, Item>,
    rng: &mut Rng,
    frame: usize,
) {
    let fresh: Vec<FlyingObject<18>> = meshes
        .iter()
        .map(|m| FlyingObject::new(m.clone(), &BuildOptions::FLYING).unwrap())
        .collect();
    let mut scratch = kdop::ProbeScratch::new();
    let mut hits = Vec::new();
    for _ in 0..3 {
        let probe = random_object(rng, meshes.len(), 3.0, 3);
        let desc = ObjectDesc {
            mode: probe.mode,
            group: probe.group,
            mask: probe.mask,
            user: 0,
        };
        world
            .probe(
                shapes[probe.shape],
                &probe.pose,
                &desc,
                &mut scratch,
                &mut hits,
            )
            .unwrap();
        let truth = |b: &Item| -> Vec<[u32; 2]> {
            brute_force_object_contacts(
                &fresh[probe.shape],
                &probe.pose,
                &fresh[b.shape],
                &b.pose,
                0.0,
            )
            .into_iter()
            .map(|c| [c.a_triangle, c.b_triangle])
            .collect()
        };
        let mut want: Vec<(Body, Vec<[u32; 2]>, bool)> = Vec::new();
        for (k, o) in objects {
            if accepts(&probe, o) {
                let detect = probe.mode == Mode::Detect && o.mode == Mode::Detect;
                want.push((Body::Object(*k), truth(o), detect));
            }
        }
        for (k, p) in parts {
            if accepts(&probe, p) {
                want.push((Body::Part(*k), truth(p), probe.mode == Mode::Detect));
            }
        }
        want.retain(|w| !w.1.is_empty());
        want.sort_by_key(|w| w.0);
        let got: Vec<Body> = hits.iter().map(|h| h.body).collect();
        let expect: Vec<Body> = want.iter().map(|w| w.0).collect();
        assert_eq!(got, expect, "frame {frame}: bodies a probe touched");
        for (h, (_, all, detect)) in hits.iter().zip(&want) {
            if *detect {
                assert!(
                    h.contacts.len() == 1 && all.contains(&h.contacts[0]),
                    "frame {frame}"
                );
            } else {
                assert_eq!(&h.contacts, all, "frame {frame}: a probe's contacts");
            }
        }
    }
}

/// Checks a step against the oracle; returns the world's answer in its own order.
fn check_step(
    world: &World<18>,
    truth: &Answer,
    previous: &BTreeSet<(Body, Body)>,
    objects: &BTreeMap<ObjectId, Item>,
    context: &str,
) -> Vec<(Body, Body, PairEvent, Vec<[u32; 2]>)> {
    let mut seen = Vec::new();
    let keys: Vec<(Body, Body)> = world.pairs().iter().map(|p| (p.a, p.b)).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted, "{context}: pairs not sorted");
    assert_eq!(
        keys.iter().copied().collect::<BTreeSet<_>>(),
        truth.keys().copied().collect::<BTreeSet<_>>(),
        "{context}: colliding pairs differ"
    );
    for p in world.pairs() {
        let got = world.contacts(p).unwrap().to_vec();
        let want = &truth[&(p.a, p.b)];
        let detect = |b: &Body| match b {
            Body::Object(o) => objects[o].mode == Mode::Detect,
            Body::Part(_) => true,
        };
        if detect(&p.a) && detect(&p.b) {
            assert_eq!(got.len(), 1, "{context}: detect lists one contact");
            assert!(
                want.contains(&got[0]),
                "{context}: detect contact is not real"
            );
        } else {
            assert_eq!(&got, want, "{context}: contacts differ");
        }
        let event = if previous.contains(&(p.a, p.b)) {
            PairEvent::Persist
        } else {
            PairEvent::Begin
        };
        assert_eq!(p.event, event, "{context}: wrong event");
        seen.push((p.a, p.b, p.event, got));
    }
    let ended: BTreeSet<(Body, Body)> = world.ended().iter().map(|e| (e.a, e.b)).collect();
    let expect: BTreeSet<(Body, Body)> = previous
        .iter()
        .filter(|k| !truth.contains_key(k))
        .copied()
        .collect();
    assert_eq!(ended, expect, "{context}: ended pairs differ");
    assert_eq!(ended.len(), world.ended().len(), "{context}: an end twice");
    seen
}

type Trace = Vec<Vec<(Body, Body, PairEvent, Vec<[u32; 2]>)>>;
type UserFrame = Vec<(u64, u64, PairEvent, Vec<[u32; 2]>)>;

/// Adds each mesh as a shape.
fn add_shapes(world: &mut World<18>, meshes: &[Mesh]) -> Vec<ShapeId> {
    meshes
        .iter()
        .map(|m| world.add_shape(m.clone()).unwrap())
        .collect()
}

/// Steps the world and checks the step against brute force and the previous step's pairs
/// (which it then replaces).
fn step_and_check(
    world: &mut World<18>,
    meshes: &[Mesh],
    objects: &BTreeMap<ObjectId, Item>,
    parts: &BTreeMap<PartHandle, Item>,
    previous: &mut BTreeSet<(Body, Body)>,
    frame: usize,
) {
    world.step().unwrap();
    let truth = brute(meshes, objects, parts);
    check_step(world, &truth, previous, objects, &format!("frame {frame}"));
    *previous = truth.keys().copied().collect();
}

/// A trace without the world's own handles (which name their world): the pairs by the
/// users' values, which both runs of a seed give alike.
fn by_user(world: &World<18>) -> UserFrame {
    world
        .pairs()
        .iter()
        .map(|p| {
            (
                p.a_user,
                p.b_user,
                p.event,
                world.contacts(p).unwrap().to_vec(),
            )
        })
        .collect()
}

/// What a seeded scene saw: with handles, by users' values, how many deformations rebuilt
/// their shape, and how many pairs' answers were kept from the step before.
type Scene = (Trace, Vec<UserFrame>, u32, u64);

/// A seeded scene run for `frames` steps, checked at every step.
fn run_scene(seed: u64, frames: usize) -> Scene {
    let mut rng = Rng::new(seed);
    // Worn shapes renewed in slices (even seeds), or rebuilt within the call (odd seeds; a
    // rebuild on a thread of its own has its test).
    let mut world = World::<18>::with_options(kdop::WorldOptions {
        rebuild_frames: 0,
        renew_budget: if seed % 2 == 0 {
            kdop::WorldOptions::default().renew_budget
        } else {
            0
        },
        ..kdop::WorldOptions::default()
    })
    .unwrap();
    // Shapes from a few centimetres to tens of metres: size ratios up to 1000.
    let mut meshes: Vec<Mesh> = [
        (40, 0.05, 0.02),
        (60, 1.0, 0.4),
        (30, 20.0, 6.0),
        (80, 2.0, 0.3),
    ]
    .iter()
    .map(|&(n, r, s)| cluster(&mut rng, n, r, s))
    .collect();
    let shapes: Vec<ShapeId> = meshes
        .iter()
        .map(|m| world.add_shape(m.clone()).unwrap())
        .collect();
    let mut parts = BTreeMap::new();
    let add_part = |world: &mut World<18>, rng: &mut Rng, parts: &mut BTreeMap<_, _>, i: usize| {
        let item = Item {
            shape: [2, 1, 3, 0][i % 4],
            pose: random_pose(rng, 3.0, i % 4 == 3),
            group: if i % 4 == 1 { 2 } else { 1 },
            mask: u32::MAX,
            mode: Mode::Report,
        };
        let desc = PartDesc {
            group: item.group,
            mask: item.mask,
            user: 100 + i as u64,
        };
        let h = world.add_part(shapes[item.shape], item.pose, desc).unwrap();
        parts.insert(h, item);
    };
    for i in 0..4 {
        add_part(&mut world, &mut rng, &mut parts, i);
    }
    let mut objects = BTreeMap::new();
    let add = |world: &mut World<18>, rng: &mut Rng, objects: &mut BTreeMap<ObjectId, Item>| {
        let item = random_object(rng, 4, 4.0, 4);
        let desc = ObjectDesc {
            mode: item.mode,
            group: item.group,
            mask: item.mask,
            user: objects.len() as u64 + 1000 * rng.below(1000),
        };
        let id = world
            .add_object(shapes[item.shape], item.pose, desc)
            .unwrap();
        objects.insert(id, item);
    };
    for _ in 0..14 {
        add(&mut world, &mut rng, &mut objects);
    }
    let mut previous = BTreeSet::new();
    let mut trace = Vec::new();
    let mut users = Vec::new();
    let mut rebuilds = 0;
    let mut resting = 0;
    for frame in 0..frames {
        let ids: Vec<ObjectId> = objects.keys().copied().collect();
        for id in ids {
            let item = objects.get_mut(&id).unwrap();
            match rng.below(12) {
                0 => item.pose = random_pose(&mut rng, 4.0, false), // teleport
                1 => {
                    world.remove_object(id).unwrap();
                    objects.remove(&id);
                    continue;
                }
                2 => {
                    item.mask ^= 1;
                    let mut d = world.object_desc(id).unwrap();
                    d.mask = item.mask;
                    world.set_object_desc(id, d).unwrap();
                    continue;
                }
                3 => {
                    item.shape = rng.below(4) as usize;
                    world.set_object_shape(id, shapes[item.shape]).unwrap();
                    continue;
                }
                4 => {
                    // Another mode asks for other contacts: a kept answer would be wrong.
                    item.mode = match item.mode {
                        Mode::Detect => Mode::Report,
                        Mode::Report => Mode::Detect,
                    };
                    let mut d = world.object_desc(id).unwrap();
                    d.mode = item.mode;
                    world.set_object_desc(id, d).unwrap();
                    continue;
                }
                5 | 6 => {
                    // Resting, or set again where it is, as engines set every body.
                    if rng.below(2) == 0 {
                        world.set_pose(id, item.pose).unwrap();
                    }
                    continue;
                }
                _ => {
                    // A small motion: a few percent of the scene per frame.
                    let step = Pose::from_translation(rng.vec(-0.15, 0.15)).unwrap();
                    item.pose = step.after(&item.pose).unwrap();
                }
            }
            world.set_pose(id, item.pose).unwrap();
        }
        if frame % 3 == 0 {
            add(&mut world, &mut rng, &mut objects);
        }
        edit_parts(&mut world, &mut rng, &shapes, &mut parts);
        if frame % 2 == 1 {
            add_part(&mut world, &mut rng, &mut parts, frame);
        }
        let s = rng.below(5) as usize;
        if let Some(m) = meshes.get_mut(s) {
            let next = deformed(m, &mut rng);
            let stats = if frame % 2 == 0 {
                world.deform_shape(shapes[s], next.vertices())
            } else {
                // Only the vertices that moved, by the sparse call.
                let (indices, positions) = moved_vertices(next.vertices(), m.vertices());
                world.deform_shape_some(shapes[s], &indices, &positions)
            };
            *m = next;
            rebuilds += u32::from(stats.unwrap().rebuilt);
        }
        // Probes see the world as it stands, objects moved since the last step included.
        check_probes(&world, &meshes, &shapes, &objects, &parts, &mut rng, frame);
        resting += world.step().unwrap().resting_pairs;
        world.part_tree().validate().unwrap();
        assert_eq!(world.part_tree().len(), parts.len());
        let truth = brute(&meshes, &objects, &parts);
        let context = format!("seed {seed}, frame {frame}");
        trace.push(check_step(&world, &truth, &previous, &objects, &context));
        users.push(by_user(&world));
        previous = truth.keys().copied().collect();
    }
    (trace, users, rebuilds, resting)
}

/// Moves, re-shapes or removes one part at random.
fn edit_parts(
    world: &mut World<18>,
    rng: &mut Rng,
    shapes: &[ShapeId],
    parts: &mut BTreeMap<PartHandle, Item>,
) {
    let keys: Vec<PartHandle> = parts.keys().copied().collect();
    let Some(&h) = keys.get(rng.below(keys.len() as u64 + 1) as usize) else {
        return;
    };
    match rng.below(3) {
        0 => {
            let affine = rng.below(4) == 0;
            let pose = random_pose(rng, 3.0, affine);
            world.set_part_placement(h, pose).unwrap();
            parts.get_mut(&h).unwrap().pose = pose;
        }
        1 => {
            let shape = rng.below(4) as usize;
            world.set_part_shape(h, shapes[shape]).unwrap();
            parts.get_mut(&h).unwrap().shape = shape;
        }
        _ => {
            world.remove_part(h).unwrap();
            parts.remove(&h);
        }
    }
}

/// `m` with its vertices moved and the same triangles: mostly a small wobble, sometimes
/// far and fast (a jump of its own size, a stretch, a collapse of a few vertices).
fn deformed(m: &Mesh, rng: &mut Rng) -> Mesh {
    let (lo, hi) = m.bounds();
    let size = (hi - lo).max_element();
    let far = rng.below(3) == 0;
    let jump = if far {
        rng.vec(-1.0, 1.0) * size
    } else {
        DVec3::ZERO
    };
    if rng.below(6) == 0 {
        // The same positions shuffled among the vertices: a tree worn past any refit, which
        // the world rebuilds (`WorldOptions::rebuild_at`).
        let mut v = m.vertices().to_vec();
        for i in (1..v.len()).rev() {
            v.swap(i, rng.below(i as u64 + 1) as usize);
        }
        return Mesh::new(v, m.triangles().to_vec()).unwrap();
    }
    let stretch = if far { rng.range(0.3, 3.0) } else { 1.0 };
    let centre = (lo + hi) / 2.0;
    let first = m.vertices()[0];
    let verts = m
        .vertices()
        .iter()
        .map(|&v| {
            if far && rng.below(8) == 0 {
                return first; // degenerate triangles on purpose
            }
            centre + (v - centre) * stretch + jump + rng.vec(-0.03, 0.03) * size
        })
        .collect();
    Mesh::new(verts, m.triangles().to_vec()).unwrap()
}

#[test]
fn every_step_equals_brute_force() {
    let mut kinds = [0; 2];
    let (mut rebuilds, mut resting) = (0, 0);
    for seed in 0..4 {
        let (trace, _, r, kept) = run_scene(seed, 12);
        rebuilds += r;
        resting += kept;
        for frame in trace {
            for p in frame {
                kinds[usize::from(matches!(p.1, Body::Part(_)))] += 1;
            }
        }
    }
    assert!(rebuilds > 0, "no shape was worn enough to be rebuilt");
    assert!(resting > 20, "too few resting pairs: {resting}");
    assert!(
        kinds[0] > 10 && kinds[1] > 10,
        "too few pairs of a kind: {kinds:?}"
    );
}

/// Probes right after every object was sent elsewhere (scaled and sheared poses among
/// them): their fat bounds from the last step no longer hold them, so a probe must find
/// them from their new poses. Each probe is checked against brute force, so a bound of a
/// moved object that misses a triangle shows as a body the probe missed.
#[test]
fn probes_find_objects_moved_since_the_last_step() {
    let mut rng = Rng::new(41);
    let mut world = World::<18>::new();
    let meshes: Vec<Mesh> = [(40, 0.3, 0.1), (60, 1.0, 0.4), (30, 2.0, 0.6)]
        .iter()
        .map(|&(n, r, s)| cluster(&mut rng, n, r, s))
        .collect();
    let shapes = add_shapes(&mut world, &meshes);
    let mut objects = BTreeMap::new();
    for _ in 0..40 {
        let item = random_object(&mut rng, meshes.len(), 3.0, 1_000_000);
        let desc = ObjectDesc {
            mode: item.mode,
            group: item.group,
            mask: item.mask,
            user: 0,
        };
        let id = world
            .add_object(shapes[item.shape], item.pose, desc)
            .unwrap();
        objects.insert(id, item);
    }
    let parts = BTreeMap::new();
    let fresh: Vec<FlyingObject<18>> = meshes
        .iter()
        .map(|m| FlyingObject::new(m.clone(), &BuildOptions::FLYING).unwrap())
        .collect();
    let (mut touched, mut grazing) = (0, 0);
    for round in 0..12 {
        world.step().unwrap();
        for (id, item) in &mut objects {
            // Far from where the step saw it: only its new pose can place it.
            item.pose = random_pose(&mut rng, 3.0, round % 2 == 1);
            world.set_pose(*id, item.pose).unwrap();
        }
        check_probes(&world, &meshes, &shapes, &objects, &parts, &mut rng, round);
        let mut scratch = kdop::ProbeScratch::new();
        let mut hits = Vec::new();
        for (id, item) in &objects {
            world
                .probe(
                    shapes[item.shape],
                    &item.pose,
                    &ObjectDesc::default(),
                    &mut scratch,
                    &mut hits,
                )
                .unwrap();
            // A shape probed where an object of it stands touches that object.
            assert!(
                hits.iter().any(|h| h.body == Body::Object(*id)),
                "round {round}: a probe at a moved object's pose missed it"
            );
            touched += hits.len();
        }
        // A tiny triangle at the corner of each object's farthest vertex along x, inside
        // the triangle that has it: it touches the object at the rim of its bound alone.
        for (id, item) in &objects {
            let mesh = &meshes[item.shape];
            let placed: Vec<DVec3> = mesh
                .vertices()
                .iter()
                .map(|&v| item.pose.transform_point(v))
                .collect();
            let (t, corner) = (0..mesh.triangle_count())
                .flat_map(|t| (0..3).map(move |c| (t, c)))
                .max_by(|a, b| {
                    let x = |(t, c): (usize, usize)| placed[mesh.triangles()[t][c] as usize].x;
                    x(*a).total_cmp(&x(*b))
                })
                .unwrap();
            let tri = mesh.triangles()[t].map(|v| placed[v as usize]);
            let v = tri[corner];
            let tiny = [
                v,
                v + (tri[(corner + 1) % 3] - v) * 0.01,
                v + (tri[(corner + 2) % 3] - v) * 0.01,
            ];
            let Ok(tiny_mesh) = Mesh::from_triangles(&[tiny]) else {
                continue;
            };
            let shape = world.add_shape(tiny_mesh.clone()).unwrap();
            world
                .probe(
                    shape,
                    &Pose::IDENTITY,
                    &ObjectDesc::default(),
                    &mut scratch,
                    &mut hits,
                )
                .unwrap();
            let tiny_object = FlyingObject::<18>::new(tiny_mesh, &BuildOptions::FLYING).unwrap();
            let exact = &fresh[item.shape];
            let truth =
                brute_force_object_contacts(&tiny_object, &Pose::IDENTITY, exact, &item.pose, 0.0);
            if !truth.is_empty() {
                grazing += 1;
                assert!(
                    hits.iter().any(|h| h.body == Body::Object(*id)),
                    "round {round}: a probe at the rim of a moved object's bound missed it"
                );
            }
            world.remove_shape(shape).unwrap();
        }
    }
    assert!(touched > 40 * 12, "the probes touched other objects too");
    assert!(grazing > 40 * 12 / 2, "most rim probes touch ({grazing})");
}

/// More colliding pairs in one step than the step has batches of jobs (256), so that a
/// batch holds several pairs and their contacts lie at offsets in its list: every pair's
/// contacts against brute force, on one thread and on four.
#[test]
fn a_crowd_fills_every_batch() {
    for threads in [1, 4] {
        common::on_threads(threads, || {
            let mut rng = Rng::new(31);
            let meshes: Vec<Mesh> = (0..3).map(|_| cluster(&mut rng, 6, 0.6, 0.5)).collect();
            let mut world = World::<18>::new();
            let shapes = add_shapes(&mut world, &meshes);
            let mut objects = BTreeMap::new();
            for i in 0..400 {
                let item = Item {
                    mode: Mode::Report,
                    ..random_object(&mut rng, meshes.len(), 1.5, u64::MAX)
                };
                let desc = ObjectDesc {
                    group: item.group,
                    mask: item.mask,
                    mode: item.mode,
                    user: i,
                };
                let id = world
                    .add_object(shapes[item.shape], item.pose, desc)
                    .unwrap();
                objects.insert(id, item);
            }
            let mut previous = BTreeSet::new();
            step_and_check(
                &mut world,
                &meshes,
                &objects,
                &BTreeMap::new(),
                &mut previous,
                0,
            );
            assert!(
                world.pairs().len() > 2 * 256,
                "{} colliding pairs: too few to fill the batches",
                world.pairs().len()
            );
        });
    }
}

#[test]
fn one_thread_and_four_give_the_same_steps() {
    let a = common::on_threads(1, || run_scene(7, 8)).1;
    let b = common::on_threads(4, || run_scene(7, 8)).1;
    assert!(
        a.iter().map(Vec::len).sum::<usize>() > 5,
        "too few pairs to compare"
    );
    assert_eq!(a, b);
}

fn triangle() -> kdop::Mesh {
    triangle_of(1.0)
}

/// The triangle of [`triangle`] with its corners `r` times as far out.
fn triangle_of(r: f64) -> kdop::Mesh {
    use glam::DVec3;
    kdop::Mesh::new(
        vec![
            DVec3::new(-r, -r, 0.0),
            DVec3::new(r, -r, 0.0),
            DVec3::new(0.0, r, 0.0),
        ],
        vec![[0, 1, 2]],
    )
    .unwrap()
}

#[test]
fn removal_ends_a_pair_and_handles_are_checked() {
    let mut w = World::<18>::new();
    let s = w.add_shape(triangle()).unwrap();
    let part = w.add_part(s, Pose::IDENTITY, PartDesc::default()).unwrap();
    let desc = ObjectDesc {
        user: 42,
        ..ObjectDesc::default()
    };
    let turned =
        Pose::from_rows([1.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 1.0, 0.0, 0.0]).unwrap();
    let a = w.add_object(s, turned, desc).unwrap();
    w.step().unwrap();
    assert_eq!(w.pairs().len(), 1);
    assert_eq!(
        (w.pairs()[0].a, w.pairs()[0].b),
        (Body::Object(a), Body::Part(part))
    );
    assert_eq!((w.pairs()[0].a_user, w.pairs()[0].b_user), (42, 0));
    let kept = w.pairs()[0];
    assert_eq!(w.contacts(&kept).unwrap(), &[[0, 0]]);
    w.remove_object(a).unwrap();
    w.step().unwrap();
    assert!(w.pairs().is_empty());
    assert_eq!(w.ended().len(), 1);
    assert_eq!(w.ended()[0].a_user, 42);
    w.step().unwrap();
    assert!(w.ended().is_empty(), "an end is reported once");
    // A pair kept from an earlier step names contacts that are gone.
    assert!(matches!(
        w.contacts(&kept),
        Err(Error::StaleHandle {
            what: "contact pair"
        })
    ));

    // Stale and foreign handles are errors, never another item.
    let b = w.add_object(s, turned, desc).unwrap();
    assert!(matches!(
        w.pose(a),
        Err(Error::StaleHandle { what: "object" })
    ));
    assert!(matches!(w.remove_object(a), Err(Error::StaleHandle { .. })));
    assert!(w.pose(b).is_ok());
    let mut other = World::<18>::new();
    let s2 = other.add_shape(triangle()).unwrap();
    let c = other.add_object(s2, Pose::IDENTITY, desc).unwrap();
    assert!(matches!(
        w.pose(c),
        Err(Error::ForeignHandle { what: "object" })
    ));
    assert!(matches!(
        w.add_object(s2, Pose::IDENTITY, desc),
        Err(Error::ForeignHandle { what: "shape" })
    ));
    other
        .add_part(s2, Pose::IDENTITY, PartDesc::default())
        .unwrap();
    other.set_pose(c, turned).unwrap();
    other.step().unwrap();
    let theirs = other.pairs()[0];
    assert!(matches!(
        w.contacts(&theirs),
        Err(Error::ForeignHandle {
            what: "contact pair"
        })
    ));
    assert!(matches!(
        w.remove_shape(s),
        Err(Error::ShapeInUse { users: 2 })
    ));
    w.remove_part(part).unwrap();
    assert!(matches!(
        w.remove_part(part),
        Err(Error::StaleHandle { what: "part" })
    ));
    // A flattening pose is refused and the object keeps its pose.
    let flat =
        Pose::from_rows([1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]).unwrap();
    assert!(w.set_pose(b, flat).is_err());
    assert_eq!(w.pose(b).unwrap(), turned);
}

#[test]
fn deformed_shapes_are_seen_by_objects_and_parts_that_stand_still() {
    let mut w = World::<18>::new();
    let plate = w.add_shape(triangle()).unwrap();
    let pin_rest = vec![DVec3::ZERO, DVec3::Z, DVec3::new(0.0, 0.1, 1.0)];
    let pin_mesh = Mesh::new(pin_rest.clone(), vec![[0, 1, 2]]).unwrap();
    let pin = w.add_shape(pin_mesh).unwrap();
    let part = w
        .add_part(plate, Pose::IDENTITY, PartDesc::default())
        .unwrap();
    let above = Pose::from_translation(DVec3::new(0.2, 0.0, 2.0)).unwrap();
    let a = w.add_object(pin, above, ObjectDesc::default()).unwrap();
    w.step().unwrap();
    assert!(w.pairs().is_empty());
    // The pin grows down through the plate; the object does not move.
    let long: Vec<DVec3> = pin_rest.iter().map(|&v| v - DVec3::Z * 2.5).collect();
    w.deform_shape(pin, &long).unwrap();
    w.step().unwrap();
    assert_eq!(w.pairs().len(), 1);
    assert_eq!(
        (w.pairs()[0].a, w.pairs()[0].b),
        (Body::Object(a), Body::Part(part))
    );
    assert_eq!(w.contacts(&w.pairs()[0]).unwrap(), &[[0, 0]]);
    w.deform_shape(pin, &pin_rest).unwrap();
    w.step().unwrap();
    assert!(w.pairs().is_empty());
    assert_eq!(w.ended().len(), 1);
    // The plate (a part's shape) rises to the pin instead.
    let raised: Vec<DVec3> = triangle()
        .vertices()
        .iter()
        .map(|&v| v + DVec3::Z * 2.5)
        .collect();
    w.deform_shape(plate, &raised).unwrap();
    w.step().unwrap();
    assert_eq!(w.pairs().len(), 1);
    // Bad vertices are refused and nothing changes.
    assert!(matches!(
        w.deform_shape(plate, &raised[..2]),
        Err(Error::InvalidParameter { .. })
    ));
    w.step().unwrap();
    assert_eq!(w.pairs().len(), 1);
    assert_eq!(w.pairs()[0].event, PairEvent::Persist);
}

/// A shape worn past `rebuild_at` is rebuilt whole: without a renewal budget on a thread of
/// its own, taking over exactly `rebuild_frames` deformations later, refit to that call's
/// vertices; with one, laid out and staged in slices (this small shape's in the call that
/// finds it worn) and taken over by the next deformation, either way with the shape's own
/// build options. Every step before, at and after the change equals brute force, on one
/// thread and on four alike.
#[test]
fn a_worn_shape_is_rebuilt_beside_the_frames() {
    let run = |renew_budget: u32| {
        let mut rng = Rng::new(41);
        let mut world = World::<18>::with_options(kdop::WorldOptions {
            rebuild_frames: 3,
            renew_budget,
            ..kdop::WorldOptions::default()
        })
        .unwrap();
        let mut meshes = vec![
            cluster(&mut rng, 300, 1.0, 0.3),
            cluster(&mut rng, 80, 2.0, 0.6),
        ];
        // The worn shape built for deforming: its rebuilds keep its options.
        let shapes = [
            world
                .add_shape_with(meshes[0].clone(), &BuildOptions::DEFORMING)
                .unwrap(),
            world.add_shape(meshes[1].clone()).unwrap(),
        ];
        let mut objects = BTreeMap::new();
        let mut parts = BTreeMap::new();
        for i in 0..6 {
            let item = Item::open(i % 2, random_pose(&mut rng, 1.5, false), Mode::Report);
            let id = world
                .add_object(
                    shapes[item.shape],
                    item.pose,
                    ObjectDesc {
                        user: i as u64,
                        ..ObjectDesc::default()
                    },
                )
                .unwrap();
            objects.insert(id, item);
        }
        let item = Item::open(0, random_pose(&mut rng, 1.0, false), Mode::Report);
        parts.insert(
            world
                .add_part(shapes[0], item.pose, PartDesc::default())
                .unwrap(),
            item,
        );
        let mut rebuilt_at = Vec::new();
        let mut previous = BTreeSet::new();
        let mut trace = Vec::new();
        for frame in 0..9 {
            // Shuffled positions wear the tree at once; later frames wobble.
            let m = &mut meshes[0];
            let mut v = m.vertices().to_vec();
            if frame == 1 {
                for i in (1..v.len()).rev() {
                    v.swap(i, rng.below(i as u64 + 1) as usize);
                }
            } else {
                v.iter_mut().for_each(|p| *p += rng.vec(-0.02, 0.02));
            }
            *m = Mesh::new(v, m.triangles().to_vec()).unwrap();
            let stats = world.deform_shape(shapes[0], m.vertices()).unwrap();
            if stats.rebuilt {
                rebuilt_at.push(frame);
            }
            step_and_check(&mut world, &meshes, &objects, &parts, &mut previous, frame);
            trace.push(by_user(&world));
        }
        // Leaves of up to 16 triangles: under half the nodes of a build with leaves of 4.
        let nodes = world.shape_object(shapes[0]).unwrap().bvh().node_count();
        let rigid = FlyingObject::<18>::new(meshes[0].clone(), &BuildOptions::FLYING).unwrap();
        assert!(
            nodes * 2 < rigid.bvh().node_count(),
            "rebuilt with the shape's own options: {nodes} nodes"
        );
        (rebuilt_at, trace)
    };
    let (rebuilt_at, one) = common::on_threads(1, || run(0));
    // Worn at frame 1, taken over three deformations later.
    assert_eq!(rebuilt_at, [4]);
    let (_, four) = common::on_threads(4, || run(0));
    assert_eq!(one, four, "the same steps on one thread and four");
    // 300 triangles are laid out and staged within one budget at frame 1; frame 2 takes
    // the tree over.
    let budget = kdop::WorldOptions::default().renew_budget;
    let (rebuilt_at, one) = common::on_threads(1, || run(budget));
    assert_eq!(rebuilt_at, [2]);
    let (_, four) = common::on_threads(4, || run(budget));
    assert_eq!(
        one, four,
        "the same steps on one thread and four, in slices"
    );
}

/// A sheet of 100 × 100 cells (20,000 triangles: large enough to be refit, and renewed,
/// in subtrees) spanning `[-2, 2]²` in the plane z = 0.
fn sheet() -> Mesh {
    let m = 100;
    let at = |i: usize, j: usize| (i * (m + 1) + j) as u32;
    let mut v = Vec::new();
    for i in 0..=m {
        for j in 0..=m {
            v.push(
                DVec3::new(i as f64, j as f64, 0.0) * (4.0 / m as f64) - DVec3::new(2.0, 2.0, 0.0),
            );
        }
    }
    let mut t = Vec::new();
    for i in 0..m {
        for j in 0..m {
            t.push([at(i, j), at(i + 1, j), at(i + 1, j + 1)]);
            t.push([at(i, j), at(i + 1, j + 1), at(i, j + 1)]);
        }
    }
    Mesh::new(v, t).unwrap()
}

/// A sheet wound into a tighter swirl each frame wears its subtrees, which the world
/// renews in slices within `renew_budget` per deformation; every step equals brute
/// force on a fresh build of the swirled sheet (as an object and as a part), on one thread
/// and on four alike, and the renewed tree costs less than one only refit.
#[test]
fn worn_subtrees_are_renewed_in_slices() {
    let run = |renew: u32| {
        let mut rng = Rng::new(43);
        let mut world = World::<18>::with_options(kdop::WorldOptions {
            renew_budget: renew,
            rebuild_frames: 1000,
            ..kdop::WorldOptions::default()
        })
        .unwrap();
        let rest = sheet();
        let mut meshes = vec![rest.clone(), cluster(&mut rng, 40, 0.3, 0.3)];
        let shapes = add_shapes(&mut world, &meshes);
        let mut objects = BTreeMap::new();
        let mut parts = BTreeMap::new();
        let flat = |z: f64| {
            Item::open(
                0,
                Pose::from_translation(DVec3::Z * z).unwrap(),
                Mode::Report,
            )
        };
        let id = world
            .add_object(shapes[0], flat(0.0).pose, ObjectDesc::default())
            .unwrap();
        objects.insert(id, flat(0.0));
        let part = world.add_part(shapes[0], flat(0.05).pose, PartDesc::default());
        parts.insert(part.unwrap(), flat(0.05));
        for i in 0..4 {
            // Small clusters across the swirl, crossing the sheet.
            let item = Item::open(
                1,
                random_pose(&mut rng, 1.2, false),
                if i % 2 == 0 {
                    Mode::Report
                } else {
                    Mode::Detect
                },
            );
            let item = Item {
                pose: Pose::new(
                    item.pose.linear(),
                    item.pose.translation() * DVec3::new(1.0, 1.0, 0.0),
                )
                .unwrap(),
                ..item
            };
            let desc = ObjectDesc {
                user: i + 1,
                mode: item.mode,
                ..ObjectDesc::default()
            };
            objects.insert(world.add_object(shapes[1], item.pose, desc).unwrap(), item);
        }
        let (mut renewed, mut cost) = (0u64, 0.0);
        let mut previous = BTreeSet::new();
        let mut trace = Vec::new();
        for frame in 1..=6 {
            let v: Vec<DVec3> = rest
                .vertices()
                .iter()
                .map(|&p| {
                    // About (1, 1), within 0.9: mostly one quarter of the sheet.
                    let q = p - DVec3::new(1.0, 1.0, 0.0);
                    let d = q.truncate().length();
                    let a = frame as f64 * 2.0 * (1.0 - d / 0.9).max(0.0).powi(2);
                    let (s, c) = a.sin_cos();
                    let z = 0.02 * (d * 9.0).sin();
                    DVec3::new(1.0 + q.x * c - q.y * s, 1.0 + q.x * s + q.y * c, z)
                })
                .collect();
            meshes[0] = Mesh::new(v, rest.triangles().to_vec()).unwrap();
            let stats = world.deform_shape(shapes[0], meshes[0].vertices()).unwrap();
            assert!(!stats.rebuilt, "frame {frame}: rebuilt whole");
            // One subtree of at most 4,096 nodes (2,048 leaves of 4) may pass the budget.
            assert!(
                stats.renewed <= u64::from(renew) + 8192 * 20,
                "frame {frame}: {} renewed",
                stats.renewed
            );
            renewed += stats.renewed;
            cost = stats.cost_ratio;
            step_and_check(&mut world, &meshes, &objects, &parts, &mut previous, frame);
            trace.push(by_user(&world));
        }
        (renewed, cost, trace)
    };
    let (renewed, cost, one) = common::on_threads(1, || run(50_000));
    assert!(renewed > 0, "the swirl wore no subtree");
    let (_, _, four) = common::on_threads(4, || run(50_000));
    assert_eq!(one, four, "the same steps on one thread and four");
    let (none, refit_cost, _) = common::on_threads(1, || run(0));
    assert_eq!(none, 0);
    assert!(
        cost < refit_cost,
        "renewed {cost} against refit {refit_cost}"
    );
}

/// Each share of the per-object memory holds something once objects have stepped, and
/// the record covers at least an object's pose (96 bytes) and fat k-DOP (72 bytes at
/// k = 18), the two fields it cannot do without.
#[test]
fn memory_per_object_is_split_by_holder() {
    let mut w = World::<18>::new();
    let s = w.add_shape(triangle()).unwrap();
    w.add_part(s, Pose::IDENTITY, PartDesc::default()).unwrap();
    for i in 0..50 {
        let at = Pose::from_translation(DVec3::new(f64::from(i) * 0.5, 0.0, 0.0)).unwrap();
        w.add_object(s, at, ObjectDesc::default()).unwrap();
    }
    w.step().unwrap();
    let m = w.memory_per_object();
    assert!(m.record >= 96 + 72, "{m:?}");
    assert!(m.broad_phase > 0 && m.step > 0, "{m:?}");
}

/// An object and a part whose poses are affine (not rigid) and neither of whose inverses
/// can be trusted to compare the pair in (the linear parts of a case `world_edits` found):
/// the step compares them in the world frame and reports what the oracle does. These poses
/// put `FlyingObject::collide_with` of the pair in the world frame (checked first), and
/// both take the triangle's point (0, -0.5, 0) to (1.6875, -2.03125, 2.375), exactly (the
/// products and sums are exact in `f64`), so the two placed triangles meet there.
#[test]
fn pairs_without_a_usable_inverse_step_in_the_world_frame() {
    let object = Pose::from_rows([
        3.375, 3.375, 3.375, 3.375, 3.375, 0.0625, -2.0, -2.0, -2.0, 2.0, 3.375, 3.375,
    ])
    .unwrap();
    let placement = Pose::from_rows([
        3.375,
        -1.75,
        3.375,
        0.8125,
        3.375,
        3.375,
        3.375,
        -0.34375,
        -0.0625,
        728_576.0,
        -2.0,
        364_290.375,
    ])
    .unwrap();
    let mut w = World::<18>::new();
    let s = w.add_shape(triangle()).unwrap();
    let obj = w.shape_object(s).unwrap().clone();
    let mut state = kdop::QueryState::new();
    let alone = obj
        .collide_with(
            &object,
            &obj,
            &placement,
            &kdop::QueryOptions::REPORT,
            &mut state,
        )
        .unwrap();
    assert_eq!(alone.reference, kdop::Reference::World);
    let want: Vec<[u32; 2]> =
        kdop::oracle::brute_force_object_contacts(&obj, &object, &obj, &placement, 0.0)
            .into_iter()
            .map(|c| [c.a_triangle, c.b_triangle])
            .collect();
    let part = w.add_part(s, placement, PartDesc::default()).unwrap();
    let a = w.add_object(s, object, ObjectDesc::default()).unwrap();
    w.step().unwrap();
    assert_eq!(want, [[0, 0]], "the oracle: the triangles share a point");
    let p = w.pairs().first().expect("the pair collides");
    assert_eq!((p.a, p.b), (Body::Object(a), Body::Part(part)));
    assert_eq!(w.contacts(p).unwrap(), &want[..]);
}

/// A pair compared in the world frame (the part's placement flattens it, and the object's
/// inverse composed with it leaves the pose limits) whose placed part lies beyond the
/// coordinate limit: the step is refused with an error naming both handles' user values,
/// the last step's pairs stay, and the world steps again once the object has moved away.
#[test]
fn an_out_of_range_world_frame_pair_is_refused_by_name() {
    let mut w = World::<18>::new();
    let s = w.add_shape(triangle_of(1e9)).unwrap();
    // Placed corners at ±2e12: beyond MAX_COORDINATE (2^40), which meshes must keep to.
    let flat = glam::DMat3::from_diagonal(DVec3::new(2000.0, 2000.0, 0.0));
    let part = PartDesc {
        user: 9,
        ..PartDesc::default()
    };
    let part_key = w
        .add_part(s, Pose::new(flat, DVec3::ZERO).unwrap(), part)
        .unwrap();
    // Shrunk a thousandfold: seen from it, the part is scaled by 2e6, past MAX_POSE_LINEAR.
    let shrunk = glam::DMat3::from_diagonal(DVec3::splat(1e-3));
    let above = Pose::new(shrunk, DVec3::new(0.0, 0.0, 1e7)).unwrap();
    let desc = ObjectDesc {
        user: 7,
        ..ObjectDesc::default()
    };
    let a = w.add_object(s, above, desc).unwrap();
    // A second object lying in the part's plane, compared in its own frame (its pose is
    // the identity): its pair is what a refused step must keep.
    let small = w.add_shape(triangle()).unwrap();
    let b = w
        .add_object(small, Pose::IDENTITY, ObjectDesc::default())
        .unwrap();
    w.step().unwrap();
    let kept = vec![(Body::Object(b), Body::Part(part_key))];
    let listed = |w: &World<18>| w.pairs().iter().map(|p| (p.a, p.b)).collect::<Vec<_>>();
    assert_eq!(listed(&w), kept);
    let contacts = |w: &World<18>| w.contacts(&w.pairs()[0]).unwrap().to_vec();
    let before = contacts(&w);
    assert!(!before.is_empty());
    w.set_pose(a, Pose::new(shrunk, DVec3::ZERO).unwrap())
        .unwrap();
    let e = w
        .step()
        .expect_err("the world-frame placement leaves the range");
    assert!(
        matches!(e.root(), Error::CoordinateOutOfRange { .. }),
        "{e:?}"
    );
    let text = e.to_string();
    assert!(
        text.contains("user value 7") && text.contains("user value 9"),
        "the error names the pair: {text}"
    );
    assert_eq!(listed(&w), kept, "a refused step keeps the last pairs");
    assert_eq!(contacts(&w), before, "and their contacts");
    w.set_pose(a, above).unwrap();
    w.step().unwrap();
    assert_eq!(listed(&w), kept);
    assert!(w.ended().is_empty());
}

/// Objects resting on a plate and on each other: a step where nothing changed copies every
/// pair's answer from the step before (none is computed); a moved object, a switched mode,
/// an object set to the same pose again and a deformed plate each have exactly their own
/// pairs computed again, every step equal to brute force.
#[test]
fn resting_pairs_keep_their_answers_and_changed_ones_are_computed() {
    let mut rng = Rng::new(41);
    let mut meshes = vec![
        cluster(&mut rng, 60, 3.0, 0.2),
        cluster(&mut rng, 30, 0.5, 0.2),
    ];
    let mut w = World::<18>::new();
    let shapes = add_shapes(&mut w, &meshes);
    let plate = Item::open(0, Pose::IDENTITY, Mode::Report);
    let mut parts = BTreeMap::new();
    parts.insert(
        w.add_part(shapes[0], plate.pose, PartDesc::default())
            .unwrap(),
        plate,
    );
    let mut objects = BTreeMap::new();
    for i in 0..12 {
        let item = Item {
            shape: 1,
            pose: random_pose(&mut rng, 1.0, false),
            mode: if i % 4 == 0 {
                Mode::Detect
            } else {
                Mode::Report
            },
            ..plate
        };
        let desc = ObjectDesc {
            mode: item.mode,
            ..ObjectDesc::default()
        };
        objects.insert(w.add_object(shapes[1], item.pose, desc).unwrap(), item);
    }
    let mut previous = BTreeSet::new();
    let mut frame = 0;
    let mut step = |w: &mut World<18>,
                    meshes: &[Mesh],
                    objects: &BTreeMap<ObjectId, Item>,
                    previous: &mut BTreeSet<(Body, Body)>| {
        let stats = w.step().unwrap();
        let truth = brute(meshes, objects, &parts);
        check_step(w, &truth, previous, objects, &format!("step {frame}"));
        *previous = truth.keys().copied().collect();
        frame += 1;
        stats
    };
    let first = step(&mut w, &meshes, &objects, &mut previous);
    assert_eq!(first.resting_pairs, 0, "nothing was answered before");
    assert!(
        first.narrow_pairs > 12 && w.pairs().len() > 6,
        "a crowd: {first:?}"
    );
    let still = step(&mut w, &meshes, &objects, &mut previous);
    assert_eq!(
        (still.resting_pairs, still.narrow_pairs),
        (first.narrow_pairs, first.narrow_pairs),
        "nothing changed: every answer kept"
    );
    let ids: Vec<ObjectId> = objects.keys().copied().collect();
    // Moved: its pairs are computed, the others kept.
    let moved = ids[1];
    let item = objects.get_mut(&moved).unwrap();
    item.pose = Pose::from_translation(DVec3::new(0.05, 0.0, 0.0))
        .unwrap()
        .after(&item.pose)
        .unwrap();
    w.set_pose(moved, item.pose).unwrap();
    let one = step(&mut w, &meshes, &objects, &mut previous);
    assert!(
        one.resting_pairs < one.narrow_pairs && one.resting_pairs > 0,
        "one object moved: {one:?}"
    );
    // The same pose again is no change.
    for (&id, item) in &objects {
        w.set_pose(id, item.pose).unwrap();
    }
    let again = step(&mut w, &meshes, &objects, &mut previous);
    assert_eq!(again.resting_pairs, again.narrow_pairs, "{again:?}");
    // A switched mode: a detect object's pairs now report all their contacts.
    let detect = ids[0];
    objects.get_mut(&detect).unwrap().mode = Mode::Report;
    let desc = ObjectDesc {
        mode: Mode::Report,
        ..w.object_desc(detect).unwrap()
    };
    w.set_object_desc(detect, desc).unwrap();
    let switched = step(&mut w, &meshes, &objects, &mut previous);
    assert!(
        switched.resting_pairs < switched.narrow_pairs,
        "{switched:?}"
    );
    // The plate deformed: every pair with it computed again.
    let next = deformed(&meshes[0], &mut rng);
    w.deform_shape(shapes[0], next.vertices()).unwrap();
    meshes[0] = next;
    let bent = step(&mut w, &meshes, &objects, &mut previous);
    assert!(bent.resting_pairs < switched.resting_pairs, "{bent:?}");
}

/// A pair's contacts stay where its step put them while the pair rests: a pair taken at an
/// earlier step reads them while neither side changed, and is stale once its job is
/// computed again or it ends; a new user value reaches the kept pair without a query.
#[test]
fn kept_pairs_read_their_contacts_until_computed_again() {
    let mut w = World::<18>::new();
    let s = w.add_shape(triangle()).unwrap();
    let part = w.add_part(s, Pose::IDENTITY, PartDesc::default()).unwrap();
    let turned =
        Pose::from_rows([1.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 1.0, 0.0, 0.0]).unwrap();
    let desc = |user| ObjectDesc {
        user,
        ..ObjectDesc::default()
    };
    let a = w.add_object(s, turned, desc(1)).unwrap();
    // Far from the part, moved every step: its pairs are computed while `a`'s rest.
    let far = |x: f64| Pose::from_translation(DVec3::new(x, 50.0, 0.0)).unwrap();
    let b = w.add_object(s, far(0.0), desc(2)).unwrap();
    w.step().unwrap();
    let first = w.pairs()[0];
    assert_eq!((first.a, first.b), (Body::Object(a), Body::Part(part)));
    assert_eq!(first.event, PairEvent::Begin);
    for i in 1..40 {
        w.set_pose(b, far(f64::from(i))).unwrap();
        let stats = w.step().unwrap();
        assert_eq!(stats.resting_pairs, 1, "step {i}: {stats:?}");
        assert_eq!(w.pairs().len(), 1);
        assert_eq!(w.pairs()[0].event, PairEvent::Persist);
        assert_eq!(w.contacts(&first).unwrap(), &[[0, 0]], "step {i}");
    }
    w.set_object_desc(a, desc(7)).unwrap();
    let stats = w.step().unwrap();
    assert_eq!(
        stats.resting_pairs, 1,
        "a user value is no change: {stats:?}"
    );
    assert_eq!(
        (w.pairs()[0].a_user, w.pairs()[0].event),
        (7, PairEvent::Persist)
    );
    assert_eq!(w.contacts(&first).unwrap(), &[[0, 0]]);
    // Moved by a hair: computed again, the same contact, and the old pair is stale.
    let nudged = Pose::from_translation(DVec3::new(1e-9, 0.0, 0.0))
        .unwrap()
        .after(&turned)
        .unwrap();
    w.set_pose(a, nudged).unwrap();
    let stats = w.step().unwrap();
    assert_eq!(stats.resting_pairs, 0, "{stats:?}");
    assert!(matches!(
        w.contacts(&first),
        Err(Error::StaleHandle {
            what: "contact pair"
        })
    ));
    let second = w.pairs()[0];
    assert_eq!((second.event, second.a_user), (PairEvent::Persist, 7));
    assert_eq!(w.contacts(&second).unwrap(), &[[0, 0]]);
    // Ended: stale too.
    w.set_pose(a, far(-20.0)).unwrap();
    w.step().unwrap();
    assert!(w.pairs().is_empty());
    assert_eq!(w.ended().len(), 1);
    assert_eq!(w.ended()[0].a_user, 7);
    assert!(matches!(
        w.contacts(&second),
        Err(Error::StaleHandle { .. })
    ));
}

/// A world loaded in one step (20,000 objects placed at once) gives back the step's
/// scratch that load grew once it is long past (it had bounded every object: a root k-DOP
/// of 72 bytes each at least), and answers as a world built afresh at the same poses: the
/// same colliding pairs (by user value) and contacts.
#[test]
fn a_world_loaded_at_once_gives_its_scratch_back_and_answers_alike() {
    let ball = kdop::scene::icosphere(0.3, 0).unwrap();
    let side = 28usize;
    let place = |i: usize, nudge: f64| {
        let (x, y, z) = (i % side, (i / side) % side, i / (side * side));
        let at = DVec3::new(x as f64, y as f64, z as f64) * 0.45 + DVec3::new(nudge, 0.0, 0.0);
        Pose::from_translation(at).unwrap()
    };
    let n = side * side * 26;
    let build = |poses: &[Pose]| {
        let mut w = World::<18>::new();
        let s = w.add_shape(ball.clone()).unwrap();
        let ids: Vec<ObjectId> = poses
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let desc = ObjectDesc {
                    user: i as u64,
                    ..ObjectDesc::default()
                };
                w.add_object(s, *p, desc).unwrap()
            })
            .collect();
        w.step().unwrap();
        (w, ids)
    };
    let mut poses: Vec<Pose> = (0..n).map(|i| place(i, 0.0)).collect();
    let (mut world, ids) = build(&poses);
    let loaded = world.memory_per_object().step;
    for f in 0..400 {
        // Ten objects a frame nudged along x and back.
        for k in 0..10 {
            let i = (f * 37 + k * 1009) % n;
            let nudge = if f % 2 == 0 { 0.03 } else { 0.0 };
            poses[i] = place(i, nudge);
            world.set_pose(ids[i], poses[i]).unwrap();
        }
        world.step().unwrap();
    }
    let trimmed = world.memory_per_object().step;
    assert!(
        trimmed + 72 <= loaded,
        "the load's step scratch was kept: {loaded} bytes an object after it, {trimmed} later"
    );
    let answer = |w: &World<18>| -> BTreeMap<(u64, u64), Vec<[u32; 2]>> {
        w.pairs()
            .iter()
            .map(|p| ((p.a_user, p.b_user), w.contacts(p).unwrap().to_vec()))
            .collect()
    };
    let (fresh, _) = build(&poses);
    let got = answer(&world);
    assert!(got.len() > n, "neighbours touch: {} pairs", got.len());
    assert_eq!(got, answer(&fresh));
}

/// A real mesh from `../shared/data/meshes`, centred on the origin and scaled to the
/// diagonal `diag` (`fit_mesh` into a cube of that diagonal).
fn real_mesh(dir: &std::path::Path, name: &str, diag: f64) -> Mesh {
    let m = kdop::io::formats::load_mesh(dir.join(name)).unwrap();
    let half = DVec3::splat(diag / 2.0 / 3f64.sqrt());
    kdop::scene::paper::fit_mesh(&m, -half, half).unwrap()
}

/// Real meshes in a world: CAD parts, a robot link, a knot, a ball and FCL's robot as
/// objects from 0.1 to 6 units across (size ratios up to 60, and 200 against the room),
/// FCL's room and the CGAL tray as parts. Six objects lie across surfaces (at a vertex of a
/// part or of an earlier object, turned at random) and drift; eight fly through such
/// points from a few units away, spinning, while some switch between detect and report;
/// the knot deforms in a wave and the tray part is dragged now and then. Every step's
/// pairs, contacts and events equal brute force over all triangle pairs (on the knot as
/// deformed), and the triangles of every contact meet in a shape (`World::contact_shapes`
/// refuses a pair whose do not).
#[test]
fn real_meshes_in_a_world_equal_brute_force() {
    let Some(dir) = common::meshes_dir() else {
        return;
    };
    // (file, diagonal): objects first, then the parts' shapes.
    let kinds = [
        ("fcl_rob.obj", 1.0),
        ("kuka_iiwa_link0.obj", 0.1),
        ("trefoil_knot.obj", 2.0),
        ("soccerball.obj", 0.5),
        ("boeing_part.obj", 6.0),
        ("fcl_env.obj", 20.0),
    ];
    let mut meshes: Vec<Mesh> = kinds.iter().map(|&(n, d)| real_mesh(&dir, n, d)).collect();
    // The knot deforms: a wave along it, a tenth of its size high, the whole array given
    // on even frames and the moved vertices alone on odd ones.
    let knot = meshes[2].clone();
    let size = |shape: usize| kinds[shape].1;
    let mut rng = Rng::new(2026);
    let mut world = World::<18>::new();
    let shapes = add_shapes(&mut world, &meshes);
    let mut parts = BTreeMap::new();
    for (i, (shape, pose)) in [(5, Pose::IDENTITY), (4, random_pose(&mut rng, 1.0, false))]
        .into_iter()
        .enumerate()
    {
        let desc = PartDesc {
            group: 1,
            mask: u32::MAX,
            user: 100 + i as u64,
        };
        let h = world.add_part(shapes[shape], pose, desc).unwrap();
        let item = Item::open(shape, pose, Mode::Report);
        parts.insert(h, item);
    }
    // A point on a surface already placed: a vertex of a part or of an earlier object.
    let on_a_surface = |rng: &mut Rng, placed: &[Item]| {
        let at = &placed[rng.below(placed.len() as u64) as usize];
        let v = meshes[at.shape].vertices();
        at.pose
            .transform_point(v[rng.below(v.len() as u64) as usize])
    };
    let mut placed: Vec<Item> = parts.values().copied().collect();
    let mut objects = BTreeMap::new();
    // Per object: its slide a frame and its spin. The first six lie across surfaces and
    // drift a few percent of their size a frame; the others fly at a point on a surface
    // from 1 to 3 units away, reach it in 4 to 8 frames and fly on through.
    let mut motion = BTreeMap::new();
    for i in 0..14 {
        let shape = i % 5;
        let target = on_a_surface(&mut rng, &placed);
        let (centre, slide) = if i < 6 {
            (target, rng.unit() * 0.03 * size(shape))
        } else {
            let start = target + rng.unit() * rng.range(1.0, 3.0);
            (start, (target - start) / rng.range(4.0, 8.0))
        };
        let item = Item::open(
            shape,
            Pose::new(rng.rotation(), centre).unwrap(),
            if i % 4 == 3 {
                Mode::Detect
            } else {
                Mode::Report
            },
        );
        let desc = ObjectDesc {
            mode: item.mode,
            group: 1,
            mask: u32::MAX,
            user: i as u64,
        };
        let id = world.add_object(shapes[shape], item.pose, desc).unwrap();
        let spin = glam::DQuat::from_axis_angle(rng.unit(), 0.1);
        let spin = Pose::from_rotation_translation(spin, DVec3::ZERO).unwrap();
        motion.insert(id, (slide, spin));
        objects.insert(id, item);
        if i < 6 {
            placed.push(item);
        }
    }
    let mut previous = BTreeSet::new();
    // Colliding pairs seen of objects with objects, and of objects with parts; of bodies
    // ten or more times apart in size; begin and end events; contacts with their shapes.
    let (mut with_objects, mut with_parts, mut far_apart) = (0, 0, 0);
    let (mut begins, mut ends, mut shapes_checked) = (0, 0, 0);
    let mut knot_pairs = 0;
    for frame in 0..12 {
        if frame > 0 {
            for (id, item) in objects.iter_mut() {
                let (slide, spin) = motion[id];
                let step = Pose::from_translation(slide).unwrap();
                item.pose = step.after(&item.pose.after(&spin).unwrap()).unwrap();
                if rng.below(8) == 0 {
                    item.mode = match item.mode {
                        Mode::Detect => Mode::Report,
                        Mode::Report => Mode::Detect,
                    };
                    let mut d = world.object_desc(*id).unwrap();
                    d.mode = item.mode;
                    world.set_object_desc(*id, d).unwrap();
                }
                world.set_pose(*id, item.pose).unwrap();
            }
            let wave = |v: DVec3| {
                let phase = f64::from(frame) + 6.0 * v.x;
                v + DVec3::new(0.3, 0.5, 0.8).normalize() * 0.2 * phase.sin()
            };
            let moved: Vec<DVec3> = knot.vertices().iter().map(|&v| wave(v)).collect();
            let stats = if frame % 2 == 0 {
                world.deform_shape(shapes[2], &moved)
            } else {
                let (indices, positions) = moved_vertices(&moved, meshes[2].vertices());
                world.deform_shape_some(shapes[2], &indices, &positions)
            };
            stats.unwrap();
            meshes[2] = Mesh::new(moved, knot.triangles().to_vec()).unwrap();
            // The tray part is moved now and then, as a CAD user drags it.
            if frame % 3 == 0 {
                let (&h, tray) = parts.iter_mut().find(|(_, p)| p.shape == 4).unwrap();
                let nudge = Pose::from_translation(rng.unit() * 0.3).unwrap();
                tray.pose = nudge.after(&tray.pose).unwrap();
                world.set_part_placement(h, tray.pose).unwrap();
            }
        }
        world.step().unwrap();
        world.part_tree().validate().unwrap();
        let truth = brute(&meshes, &objects, &parts);
        let context = format!("real meshes, frame {frame}");
        let seen = check_step(&world, &truth, &previous, &objects, &context);
        for (a, b, event, _) in &seen {
            let shape_of = |body: &Body| match body {
                Body::Object(o) => objects[o].shape,
                Body::Part(p) => parts[p].shape,
            };
            match b {
                Body::Object(_) => with_objects += 1,
                Body::Part(_) => with_parts += 1,
            }
            let (sa, sb) = (size(shape_of(a)), size(shape_of(b)));
            far_apart += usize::from(sa.max(sb) >= 10.0 * sa.min(sb));
            begins += usize::from(*event == PairEvent::Begin);
            knot_pairs += usize::from(shape_of(a) == 2 || shape_of(b) == 2);
        }
        ends += world.ended().len();
        for p in world.pairs() {
            let contacts = world.contacts(p).unwrap();
            let found = world.contact_shapes(p).unwrap();
            assert_eq!(
                found.len(),
                contacts.len(),
                "{context}: a shape per contact"
            );
            shapes_checked += found.len();
        }
        previous = truth.keys().copied().collect();
    }
    assert!(
        with_objects > 20 && with_parts > 20 && far_apart > 20,
        "too few pairs of a kind: {with_objects} object, {with_parts} part, {far_apart} far apart in size"
    );
    assert!(begins > 10 && ends > 3, "{begins} begins, {ends} ends");
    assert!(knot_pairs > 10, "{knot_pairs} pairs with the deformed knot");
    assert!(shapes_checked > 1000, "{shapes_checked} contact shapes");
}
