//! Random sequences of world edits — shapes (with the world's build options, the deforming
//! preset or leaves of any size, 0 refused), objects and parts added and removed, poses and
//! part placements set (bad ones too), filters changed, shapes swapped, shapes deformed,
//! whole or by listed vertices (bad vertices too), stale handles used, batches of part
//! edits prepared and finalized (some gone stale by an edit in between), probes of a shape
//! at a pose (each against brute force over the objects and parts as they stand) — with a
//! step after each few: every step's colliding pairs and contacts equal brute force over
//! all object and part pairs (the pairs of unchanged objects and parts kept from the step
//! before), every pair that collided and stops is reported ended exactly once, and a
//! refused step leaves the last pairs and contacts readable.
#![no_main]

mod decode;

use decode::Bytes;
use kdop::oracle::brute_force_object_contacts;
use kdop::{
    Body, BuildOptions, Error, FlyingObject, Mesh, ObjectDesc, ObjectId, PartDesc, PartEdit,
    PartHandle, Pose, ProbeScratch, ShapeId, World,
};
use libfuzzer_sys::fuzz_target;
use std::collections::BTreeMap;

fn mesh(b: &mut Bytes) -> Option<Mesh> {
    let nv = 3 + (b.byte() % 6) as usize;
    let nt = 1 + (b.byte() % 6) as usize;
    let v = (0..nv).map(|_| b.point()).collect();
    let t = (0..nt)
        .map(|_| [0, 1, 2].map(|_| u32::from(b.byte()) % nv as u32))
        .collect();
    Mesh::new(v, t).ok()
}

/// The world's pairs of the last step with their contacts.
fn listed(w: &World<18>) -> BTreeMap<(Body, Body), Vec<[u32; 2]>> {
    w.pairs()
        .iter()
        .map(|p| ((p.a, p.b), w.contacts(p).unwrap().to_vec()))
        .collect()
}

/// The oracle's triangle pairs of two placed shapes.
fn brute(w: &World<18>, a: &Item, c: &Item) -> Vec<[u32; 2]> {
    let obj = |s: ShapeId| w.shape_object(s).unwrap();
    brute_force_object_contacts(obj(a.shape), &a.pose, obj(c.shape), &c.pose, 0.0)
        .into_iter()
        .map(|x| [x.a_triangle, x.b_triangle])
        .collect()
}

#[derive(Clone, Copy)]
struct Item {
    shape: ShapeId,
    pose: Pose,
    group: u32,
    mask: u32,
}

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let mut w = World::<18>::new();
    let mut shapes: Vec<ShapeId> = Vec::new();
    // Per shape, its vertex count (a deformation keeps it).
    let mut counts: Vec<usize> = Vec::new();
    let mut objects: BTreeMap<ObjectId, Item> = BTreeMap::new();
    let mut parts: BTreeMap<PartHandle, Item> = BTreeMap::new();
    let mut gone: Vec<ObjectId> = Vec::new();
    // The last step's pairs with their contacts, which a failed step must leave readable.
    let mut last: BTreeMap<(Body, Body), Vec<[u32; 2]>> = BTreeMap::new();
    for _ in 0..24 {
        if b.0.is_empty() {
            break;
        }
        match b.byte() % 13 {
            0 => {
                let how = b.byte();
                if let Some(m) = mesh(&mut b) {
                    // The world's options, the deforming preset, or leaves of 0 (refused)
                    // to 7 triangles.
                    let leaf_size = u32::from(how / 3) % 8;
                    let added = match how % 3 {
                        0 => w.add_shape(m.clone()),
                        1 => w.add_shape_with(m.clone(), &BuildOptions::DEFORMING),
                        _ => w.add_shape_with(
                            m.clone(),
                            &BuildOptions {
                                leaf_size,
                                ..BuildOptions::FLYING
                            },
                        ),
                    };
                    match added {
                        Ok(s) => {
                            shapes.push(s);
                            counts.push(m.vertices().len());
                        }
                        // Refused for its options, or for a mesh no build takes.
                        Err(e) => assert!(
                            (how % 3 == 2 && leaf_size == 0)
                                || FlyingObject::<18>::new(m.clone(), &BuildOptions::FLYING)
                                    .is_err(),
                            "a buildable mesh refused: {e}"
                        ),
                    }
                    assert_eq!(w.shape_ids().count(), shapes.len(), "a refused shape added");
                }
            }
            7 if !parts.is_empty() => {
                let id = *parts
                    .keys()
                    .nth(usize::from(b.byte()) % parts.len())
                    .unwrap();
                if let Ok(p) = b.pose()
                    && w.set_part_placement(id, p).is_ok()
                {
                    parts.get_mut(&id).unwrap().pose = p;
                }
                assert_eq!(
                    w.part_placement(id).unwrap(),
                    parts[&id].pose,
                    "a refused placement changed it"
                );
            }
            8 if !shapes.is_empty() && (!objects.is_empty() || !parts.is_empty()) => {
                let shape = shapes[usize::from(b.byte()) % shapes.len()];
                let i = usize::from(b.byte());
                if i % 2 == 0 && !parts.is_empty() {
                    let id = *parts.keys().nth(i % parts.len()).unwrap();
                    w.set_part_shape(id, shape).unwrap();
                    parts.get_mut(&id).unwrap().shape = shape;
                } else if !objects.is_empty() {
                    let id = *objects.keys().nth(i % objects.len()).unwrap();
                    w.set_object_shape(id, shape).unwrap();
                    objects.get_mut(&id).unwrap().shape = shape;
                }
            }
            9 if !shapes.is_empty() => {
                let i = usize::from(b.byte()) % shapes.len();
                let before = w.shape_object(shapes[i]).unwrap().bvh().clone();
                let done = if b.byte() % 2 == 0 {
                    let n = counts[i] + usize::from(b.byte() % 8 == 0);
                    let v: Vec<_> = (0..n).map(|_| b.point()).collect();
                    w.deform_shape(shapes[i], &v)
                } else {
                    // A few listed vertices, some past the end or listed twice.
                    let n = usize::from(b.byte() % 6);
                    let top = counts[i] as u32 + u32::from(b.byte() % 8 == 0);
                    let indices: Vec<u32> = (0..n).map(|_| u32::from(b.byte()) % top).collect();
                    let positions: Vec<_> = (0..n + usize::from(b.byte() % 8 == 0))
                        .map(|_| b.point())
                        .collect();
                    w.deform_shape_some(shapes[i], &indices, &positions)
                };
                if done.is_err() {
                    let after = w.shape_object(shapes[i]).unwrap().bvh();
                    assert!(
                        before.bounds().eq(after.bounds()),
                        "a refused deformation changed the shape"
                    );
                }
            }
            1 | 2 if !shapes.is_empty() => {
                let shape = shapes[usize::from(b.byte()) % shapes.len()];
                let group = 1 << (b.byte() % 2);
                let mask = if b.byte() % 3 == 0 { 1 } else { u32::MAX };
                if let Ok(p) = b.pose() {
                    let item = Item {
                        shape,
                        pose: p,
                        group,
                        mask,
                    };
                    if b.byte() % 4 == 0 {
                        let d = PartDesc {
                            group,
                            mask,
                            user: 0,
                        };
                        if let Ok(h) = w.add_part(shape, p, d) {
                            parts.insert(h, item);
                        }
                    } else {
                        let d = ObjectDesc {
                            group,
                            mask,
                            ..ObjectDesc::default()
                        };
                        match w.add_object(shape, p, d) {
                            Ok(id) => {
                                objects.insert(id, item);
                            }
                            Err(_) => assert!(p.inverse().is_err(), "a good pose refused"),
                        }
                    }
                }
            }
            3 if !objects.is_empty() => {
                let id = *objects
                    .keys()
                    .nth(usize::from(b.byte()) % objects.len())
                    .unwrap();
                if let Ok(p) = b.pose()
                    && w.set_pose(id, p).is_ok()
                {
                    objects.get_mut(&id).unwrap().pose = p;
                }
                assert_eq!(
                    w.pose(id).unwrap(),
                    objects[&id].pose,
                    "a refused pose changed it"
                );
            }
            4 if !objects.is_empty() => {
                let id = *objects
                    .keys()
                    .nth(usize::from(b.byte()) % objects.len())
                    .unwrap();
                w.remove_object(id).unwrap();
                objects.remove(&id);
                gone.push(id);
            }
            10 if !shapes.is_empty() => {
                // A batch: a part inserted, one removed; an edit in between makes it stale.
                let shape = shapes[usize::from(b.byte()) % shapes.len()];
                let Ok(pose) = b.pose() else { continue };
                let mut edits = vec![PartEdit::Insert {
                    shape,
                    placement: pose,
                    desc: PartDesc::default(),
                }];
                let victim = (!parts.is_empty()).then(|| {
                    *parts
                        .keys()
                        .nth(usize::from(b.byte()) % parts.len())
                        .unwrap()
                });
                edits.extend(victim.map(PartEdit::Remove));
                let Ok(prepared) = w.prepare_edits(&edits) else {
                    continue;
                };
                let stale = b.byte() % 4 == 0 && victim.is_some();
                if stale {
                    let v = victim.unwrap();
                    w.set_part_placement(v, parts[&v].pose).unwrap();
                    assert!(matches!(
                        w.finalize_edits(prepared),
                        Err(Error::StaleHandle { .. })
                    ));
                } else {
                    let made = w.finalize_edits(prepared).unwrap();
                    let item = Item {
                        shape,
                        pose,
                        group: 1,
                        mask: u32::MAX,
                    };
                    parts.insert(made[0], item);
                    if let Some(v) = victim {
                        parts.remove(&v);
                    }
                }
            }
            11 if !shapes.is_empty() => {
                let shape = shapes[usize::from(b.byte()) % shapes.len()];
                let Ok(pose) = b.pose() else { continue };
                let mut hits = Vec::new();
                let mut scratch = ProbeScratch::new();
                if w.probe(
                    shape,
                    &pose,
                    &ObjectDesc::default(),
                    &mut scratch,
                    &mut hits,
                )
                .is_err()
                {
                    continue; // A pose without an inverse.
                }
                let probe = Item {
                    shape,
                    pose,
                    group: 1,
                    mask: u32::MAX,
                };
                let mut truth: Vec<(Body, Vec<[u32; 2]>)> = Vec::new();
                let bodies = objects
                    .iter()
                    .map(|(k, c)| (Body::Object(*k), c))
                    .chain(parts.iter().map(|(k, c)| (Body::Part(*k), c)));
                for (body, c) in bodies {
                    if probe.group & c.mask != 0 && c.group & probe.mask != 0 {
                        let t = brute(&w, &probe, c);
                        if !t.is_empty() {
                            truth.push((body, t));
                        }
                    }
                }
                truth.sort_by_key(|t| t.0);
                let got: Vec<(Body, Vec<[u32; 2]>)> =
                    hits.into_iter().map(|h| (h.body, h.contacts)).collect();
                assert_eq!(got, truth, "a probe differs from brute force");
            }
            5 if !parts.is_empty() => {
                let id = *parts
                    .keys()
                    .nth(usize::from(b.byte()) % parts.len())
                    .unwrap();
                w.remove_part(id).unwrap();
                parts.remove(&id);
            }
            6 if !objects.is_empty() => {
                let id = *objects
                    .keys()
                    .nth(usize::from(b.byte()) % objects.len())
                    .unwrap();
                let item = objects.get_mut(&id).unwrap();
                item.mask ^= 1;
                let d = ObjectDesc {
                    group: item.group,
                    mask: item.mask,
                    ..ObjectDesc::default()
                };
                w.set_object_desc(id, d).unwrap();
            }
            _ => {
                for id in &gone {
                    assert!(
                        w.pose(*id).is_err(),
                        "a removed object's handle still works"
                    );
                }
                if let Err(e) = w.step() {
                    // Documented: a pair compared in the world frame (neither pose has a
                    // usable inverse) whose placed vertex leaves the coordinate range is
                    // refused, naming the pair; the step's lists stay as they were.
                    assert!(
                        matches!(e.root(), Error::CoordinateOutOfRange { .. }),
                        "step failed: {e:?}"
                    );
                    assert!(format!("{e}").contains("user value"), "unnamed pair: {e}");
                    assert_eq!(
                        listed(&w),
                        last,
                        "a failed step changed the pairs or contacts"
                    );
                    continue;
                }
                let mut truth = BTreeMap::new();
                let accepts = |a: &Item, c: &Item| a.group & c.mask != 0 && c.group & a.mask != 0;
                for (i, (ka, a)) in objects.iter().enumerate() {
                    let others = objects
                        .iter()
                        .skip(i + 1)
                        .map(|(k, c)| (Body::Object(*k), c))
                        .chain(parts.iter().map(|(k, c)| (Body::Part(*k), c)));
                    for (kb, c) in others {
                        if accepts(a, c) {
                            let t = brute(&w, a, c);
                            if !t.is_empty() {
                                truth.insert((Body::Object(*ka), kb), t);
                            }
                        }
                    }
                }
                assert_eq!(
                    listed(&w),
                    truth,
                    "pairs or contacts differ from brute force"
                );
                let ended: Vec<(Body, Body)> = w.ended().iter().map(|e| (e.a, e.b)).collect();
                let expect: Vec<(Body, Body)> = last
                    .keys()
                    .filter(|k| !truth.contains_key(k))
                    .copied()
                    .collect();
                assert_eq!(ended, expect, "ended pairs differ");
                last = truth;
            }
        }
    }
});
