//! The descent against itself: its two k-DOP forms, and stopped descents resumed from
//! their unvisited pairs, or started from a cut of the flying hierarchy, against the
//! plain descent from the roots (whose own answers the oracle tests check).

use super::*;
use crate::BuildOptions;
use crate::env::Environment;
use crate::query::{Full, Limit, QueryState};
use crate::testing::{lcg, soup};
use crate::tumble::Rebound;
use glam::DMat3;

/// A seeded pose: every third a pure translation, the others turned too.
fn pose(i: usize, s: &mut u64) -> Pose {
    let q = glam::DQuat::from_axis_angle(
        DVec3::new(lcg(s), lcg(s), lcg(s) + 0.1).normalize(),
        lcg(s) * 6.0,
    );
    let linear = if i % 3 == 0 {
        DMat3::IDENTITY
    } else {
        DMat3::from_quat(q)
    };
    Pose::new(linear, DVec3::new(lcg(s), lcg(s), lcg(s)) * 4.0).unwrap()
}

/// Raw contacts of one query under `control`, sorted, and how it ended.
fn run<const K: usize>(
    env: &Environment<K>,
    obj: &FlyingObject<K>,
    pose: &Pose,
    options: &QueryOptions,
    state: &mut QueryState<K>,
    control: &mut impl Control,
) -> Result<(Vec<[u32; 3]>, Ended)> {
    let (_, ended) = env.query(obj, pose, options, state, None, control)?;
    let mut raw = state.work.raw.clone();
    raw.sort_unstable();
    Ok((raw, ended))
}

/// The descent's two forms (SSE and, where the CPU has it, AVX k-DOP tests) give the
/// same contacts in the same order with the same statistics, on seeded soups and poses,
/// in both modes and for both re-bounding methods: the form a CPU takes is not
/// observable. (The oracle tests check the answers themselves, in the form this CPU takes.)
fn forms_agree<const K: usize>() {
    let Some(wide) = Wide::detect() else {
        eprintln!("no AVX on this CPU: only the SSE form runs");
        return;
    };
    let mut s = 7u64 ^ K as u64;
    let env =
        Environment::<K>::from_mesh(soup(3000, 0.8, &mut s), &BuildOptions::ENVIRONMENT).unwrap();
    let obj = FlyingObject::<K>::new(soup(300, 0.6, &mut s), &BuildOptions::FLYING).unwrap();
    let (mut a, mut b) = (QueryState::new(), QueryState::new());
    let mut contacts = 0;
    for i in 0..60 {
        let pose = pose(i, &mut s);
        for base in [QueryOptions::DETECT, QueryOptions::REPORT] {
            for rebound in [Rebound::Slabs, Rebound::Corners] {
                let o = QueryOptions {
                    rebound,
                    witness: false,
                    ..base
                };
                let (xs, _) = env.query(&obj, &pose, &o, &mut a, None, &mut Full).unwrap();
                let x = env.finish(&mut a, xs);
                let (ys, _) = env
                    .query(&obj, &pose, &o, &mut b, Some(wide), &mut Full)
                    .unwrap();
                let y = env.finish(&mut b, ys);
                assert_eq!(x.contacts, y.contacts, "pose {i}");
                assert_eq!(x.stats, y.stats, "pose {i}");
                contacts += x.contacts.len();
            }
        }
    }
    assert!(contacts > 100, "the poses should make contacts: {contacts}");
}

/// k = 18 and 26 only: below k = 16 both forms run the same SSE test, and comparing
/// them could not fail.
#[test]
fn sse_and_avx_descents_agree() {
    forms_agree::<18>();
    forms_agree::<26>();
}

/// The scenes: an environment of many parts' worth of triangles, and one small part that
/// a large object takes the static side against (its part flies in the object's frame).
fn scenes<const K: usize>(s: &mut u64) -> Vec<(Environment<K>, FlyingObject<K>)> {
    let large = Environment::<K>::from_mesh(soup(3000, 0.8, s), &BuildOptions::ENVIRONMENT);
    let obj = FlyingObject::<K>::new(soup(300, 0.6, s), &BuildOptions::FLYING).unwrap();
    let mut speck = soup(60, 0.3, s);
    let shrink = Pose::new(DMat3::from_diagonal(DVec3::splat(0.2)), DVec3::splat(4.0)).unwrap();
    speck = speck.transformed(&shrink).unwrap();
    let small = Environment::<K>::from_mesh(speck, &BuildOptions::ENVIRONMENT).unwrap();
    let big = FlyingObject::<K>::new(soup(2000, 0.8, s), &BuildOptions::FLYING).unwrap();
    assert!(
        small.flying_for(&big).is_some(),
        "the speck should fly in the object's frame"
    );
    vec![(large.unwrap(), obj), (small, big)]
}

/// A descent stopped after a few pairs and started again from the pairs it left, round
/// after round, finds exactly the contacts of one full descent, none twice; in detect mode
/// it finds one of them exactly when there are any. Both descent rules, both re-bounding
/// methods, with and without epsilon, with a large object as the static side too.
fn stopped_descents_resume<const K: usize>() {
    let mut s = 11u64 ^ K as u64;
    let (mut full, mut part) = (QueryState::new(), QueryState::new());
    let (mut stops, mut contacts) = (0, 0);
    for (scene, (env, obj)) in scenes::<K>(&mut s).iter().enumerate() {
        for i in 0..24 {
            let pose = pose(i, &mut s);
            let rebound = [Rebound::Slabs, Rebound::Corners][i % 2];
            let descent = [Descent::Larger, Descent::EnvironmentFirst][(i / 2) % 2];
            let epsilon = [0.0, 0.05][(i / 4) % 2];
            for mode in [Mode::Report, Mode::Detect] {
                let o = QueryOptions {
                    mode,
                    descent,
                    epsilon,
                    rebound,
                    witness: false,
                };
                let report = QueryOptions {
                    mode: Mode::Report,
                    ..o
                };
                let (want, _) = run(env, obj, &pose, &report, &mut full, &mut Full).unwrap();
                let mut got = Vec::new();
                let mut limit = Limit::default();
                let ended = loop {
                    limit.left = 1 + (lcg(&mut s) * 12.0) as usize;
                    let (raw, ended) = run(env, obj, &pose, &o, &mut part, &mut limit).unwrap();
                    got.extend(raw);
                    if ended != Ended::Stopped {
                        break ended;
                    }
                    stops += 1;
                    assert!(stops < 1_000_000, "the descent does not progress");
                    limit.start = part.work.pending().to_vec();
                };
                got.sort_unstable();
                let at = format!("scene {scene}, pose {i}, {o:?}");
                match mode {
                    Mode::Report => {
                        assert_eq!(got, want, "{at}");
                        contacts += want.len();
                    }
                    Mode::Detect => {
                        assert_eq!(ended == Ended::Found, !want.is_empty(), "{at}");
                        assert!(got.len() <= 1, "{at}");
                        assert!(got.iter().all(|c| want.contains(c)), "{at}");
                    }
                }
            }
        }
    }
    assert!(
        stops > 1000 && contacts > 200,
        "{stops} stops, {contacts} contacts"
    );
}

#[test]
fn stopped_descents_resume_to_the_full_answer() {
    stopped_descents_resume::<6>();
    stopped_descents_resume::<18>();
}

/// The flying nodes `depth` levels below the root, or leaves above that depth: a cut
/// that every root-to-leaf path crosses once.
fn cut<const K: usize>(obj: &FlyingObject<K>, depth: usize) -> Vec<u32> {
    let mut level = vec![0u32];
    for _ in 0..depth {
        level = level
            .iter()
            .flat_map(|&f| {
                let link = FlyLink(obj.links[f as usize]);
                if link.is_leaf() {
                    vec![f]
                } else {
                    vec![link.first_child(), link.first_child() + 1]
                }
            })
            .collect();
    }
    level
}

/// A descent started from a cut of the flying hierarchy against the environment's root,
/// at a pose its cache has not seen (so each start node's parent is stale when it is
/// re-bounded), finds the contacts of the descent from the roots.
#[test]
fn a_start_set_covering_the_hierarchy_gives_the_full_answer() {
    let mut s = 5u64;
    let (mut full, mut cold) = (QueryState::<18>::new(), QueryState::<18>::new());
    let mut contacts = 0;
    for (env, obj) in scenes::<18>(&mut s) {
        for i in 0..20 {
            let pose = pose(i, &mut s);
            let o = QueryOptions {
                rebound: [Rebound::Slabs, Rebound::Corners][i % 2],
                ..QueryOptions::REPORT
            };
            let (want, _) = run(&env, &obj, &pose, &o, &mut full, &mut Full).unwrap();
            let fly = env.flying_for(&obj).unwrap_or(&obj);
            let start = Limit {
                left: usize::MAX,
                start: cut(fly, 1 + i % 5)
                    .into_iter()
                    .map(|f| [f, TOP, 0])
                    .collect(),
            };
            let (got, ended) = run(&env, &obj, &pose, &o, &mut cold, &mut start.clone()).unwrap();
            assert_eq!(ended, Ended::Done);
            assert_eq!(got, want, "pose {i}");
            contacts += want.len();
        }
    }
    assert!(contacts > 100, "{contacts} contacts");
}

/// Start pairs that name no node of the hierarchies are typed errors, and the state
/// answers the next query as before.
#[test]
fn start_pairs_outside_the_hierarchies_are_errors() {
    let mut s = 3u64;
    let (env, obj) = scenes::<18>(&mut s).swap_remove(0);
    let pose = pose(1, &mut s);
    let mut state = QueryState::new();
    let report = |state: &mut QueryState<18>, control: &mut Limit| {
        run(&env, &obj, &pose, &QueryOptions::REPORT, state, control)
    };
    let everything = || Limit {
        left: usize::MAX,
        start: Vec::new(),
    };
    let (want, _) = report(&mut state, &mut everything()).unwrap();
    let nodes = obj.links.len() as u32;
    for bad in [
        [nodes, TOP, 0],
        [FTRI | 300, TOP, 0],
        [0, TOP, env.statics().top.len() as u32],
        [0, 1, 0],
        [0, 0, u32::MAX - 1],
    ] {
        let mut start = Limit {
            left: usize::MAX,
            start: vec![[0, TOP, 0], bad],
        };
        match report(&mut state, &mut start) {
            Err(Error::InvalidParameter { name: "start", .. }) => {}
            other => panic!("{bad:?}: {other:?}"),
        }
        let (again, _) = report(&mut state, &mut everything()).unwrap();
        assert_eq!(again, want);
    }
}

/// Prunes every pair of one flying node.
struct PruneNode(u32);

impl Control for PruneNode {
    fn visit(&mut self, [f, _, _]: NodePair, _: &QueryStats) -> control::Step {
        if f == self.0 {
            control::Step::Prune
        } else {
            control::Step::Continue
        }
    }
}

/// The object triangles (mesh indices) under flying node `f`.
fn triangles_under<const K: usize>(obj: &FlyingObject<K>, f: u32) -> Vec<u32> {
    let link = FlyLink(obj.links[f as usize]);
    if !link.is_leaf() {
        let c = link.first_child();
        let mut both = triangles_under(obj, c);
        both.extend(triangles_under(obj, c + 1));
        return both;
    }
    let mut pos = link.first_triangle() as usize;
    let mut out = vec![obj.part.bvh.id_at(pos)];
    while obj.part.bvh.ids[pos] & END == 0 {
        pos += 1;
        out.push(obj.part.bvh.id_at(pos));
    }
    out
}

/// Pruning the pairs of the flying root's second child leaves exactly the contacts of the
/// triangles under the first.
#[test]
fn a_pruned_node_loses_exactly_its_triangles_contacts() {
    let mut s = 9u64;
    let (env, obj) = scenes::<18>(&mut s).swap_remove(0);
    let right = FlyLink(obj.links[0]).first_child() + 1;
    let under = triangles_under(&obj, right);
    let mut state = QueryState::new();
    let (mut kept, mut lost) = (0, 0);
    for i in 0..30 {
        let pose = pose(i, &mut s);
        let o = QueryOptions::REPORT;
        let (want, _) = run(&env, &obj, &pose, &o, &mut state, &mut Full).unwrap();
        let (got, ended) = run(&env, &obj, &pose, &o, &mut state, &mut PruneNode(right)).unwrap();
        assert_eq!(ended, Ended::Done);
        let expected: Vec<_> = want
            .iter()
            .filter(|c| !under.contains(&c[2]))
            .copied()
            .collect();
        assert_eq!(got, expected, "pose {i}");
        kept += got.len();
        lost += want.len() - got.len();
    }
    assert!(kept > 20 && lost > 20, "{kept} kept, {lost} lost");
}

/// A one-triangle environment leaf much larger than the flying object screens the object's
/// nodes by the triangle's plane and edges: the answers equal brute force whether the
/// object crosses the triangle, lies beside its plane inside its k-DOP, or lies beyond an
/// edge; and an object on one side of the plane is rejected near the root instead of
/// being descended to every leaf (which its k-DOP overlap alone would do).
#[test]
fn a_large_one_triangle_leaf_screens_the_flying_hierarchy() {
    // A plane none of the 18-DOP's directions is normal to, so the triangle's k-DOP is
    // thick: the plane 2x + 3y - 5z = 0 through three corners far apart.
    let normal = DVec3::new(2.0, 3.0, -5.0).normalize();
    let (u, v) = (DVec3::new(5.0, 0.0, 2.0), DVec3::new(0.0, 5.0, 3.0));
    let tri = crate::mesh::Mesh::new(
        vec![-2.0 * u - 2.0 * v, 2.0 * u - v, 2.0 * v],
        vec![[0, 1, 2]],
    )
    .unwrap();
    let env = Environment::<18>::from_mesh(tri.clone(), &BuildOptions::ENVIRONMENT).unwrap();
    let ball = crate::scene::icosphere(0.1, 3).unwrap();
    let obj = FlyingObject::<18>::new(ball, &BuildOptions::FLYING).unwrap();
    let leaves = obj.part.bvh.nodes.iter().filter(|n| n.is_leaf()).count() as u64;
    let mut state = QueryState::new();
    let (mut hits, mut s) = (0, 3u64);
    for i in 0..60 {
        // Offsets from the plane: through it, just beside it, and well off it (still inside
        // the triangle's k-DOP), at points inside the triangle and beyond its edges.
        let off = [0.0, 0.05, 0.3, -0.3, 0.12][i % 5];
        let at = u * (lcg(&mut s) * 4.0 - 2.0) + v * (lcg(&mut s) * 4.0 - 2.0) + normal * off;
        let turn = glam::DQuat::from_axis_angle(DVec3::new(0.3, 1.0, 0.2).normalize(), i as f64);
        let pose = Pose::new(DMat3::from_quat(turn), at).unwrap();
        let o = QueryOptions {
            witness: false,
            ..QueryOptions::REPORT
        };
        let mut got: Vec<[u32; 2]> = env
            .collide(&obj, &pose, &o, &mut state)
            .unwrap()
            .contacts
            .iter()
            .map(|c| [c.env_triangle, c.object_triangle])
            .collect();
        got.sort_unstable();
        let want = crate::oracle::brute_force_contacts(&env, &obj, &pose, 0.0);
        let want: Vec<[u32; 2]> = want
            .iter()
            .map(|c| [c.env_triangle, c.object_triangle])
            .collect();
        assert_eq!(got, want, "pose {i}");
        hits += usize::from(!got.is_empty());
        if off.abs() >= 0.3 {
            let d = QueryOptions {
                witness: false,
                ..QueryOptions::DETECT
            };
            let r = env.collide(&obj, &pose, &d, &mut state).unwrap();
            assert!(!r.collides);
            assert!(
                r.stats.nv < leaves / 4,
                "pose {i}: {} k-DOP tests",
                r.stats.nv
            );
        }
    }
    assert!(hits > 5, "the poses should cross the triangle: {hits}");
}

/// A detect query that visits everything and finds nothing marks its pair apart, one that
/// finds a contact (in the descent or by its witness) clears the mark, a stopped one leaves
/// it, and so does a report query; clearing the cache forgets it. Which poses collide is
/// decided by report queries on a state of their own. Answers do not depend on the mark
/// (the oracle tests run detect sequences on one state).
#[test]
fn detect_queries_mark_their_pair_apart_or_touching() {
    let mut s = 17u64;
    let (env, obj) = scenes::<18>(&mut s).swap_remove(0);
    let mut oracle = QueryState::new();
    let (mut touching, mut apart) = (Vec::new(), Vec::new());
    for i in 0..200 {
        let p = pose(i, &mut s);
        let hit = env
            .collide(&obj, &p, &QueryOptions::REPORT, &mut oracle)
            .unwrap()
            .collides;
        if hit { touching.push(p) } else { apart.push(p) }
    }
    assert!(
        touching.len() >= 2 && apart.len() >= 2,
        "{} touching, {} apart",
        touching.len(),
        apart.len()
    );
    let mut state = QueryState::new();
    let detect = QueryOptions::DETECT;
    env.collide(&obj, &apart[0], &detect, &mut state).unwrap();
    assert!(state.pair.apart);
    env.collide(&obj, &apart[0], &QueryOptions::REPORT, &mut state)
        .unwrap();
    assert!(state.pair.apart, "a report query leaves the mark");
    let mut stop = Limit {
        left: 2,
        start: Vec::new(),
    };
    let (_, ended) = env
        .query(&obj, &touching[0], &detect, &mut state, None, &mut stop)
        .unwrap();
    assert_eq!(ended, Ended::Stopped);
    assert!(state.pair.apart, "a stopped query leaves the mark");
    assert!(
        env.collide(&obj, &touching[0], &detect, &mut state)
            .unwrap()
            .collides
    );
    assert!(!state.pair.apart);
    env.collide(&obj, &apart[1], &detect, &mut state).unwrap();
    assert!(state.pair.apart);
    state.pair.clear();
    assert!(!state.pair.apart);
    // Found by the witness: the contact of the last query is re-tested first.
    env.collide(&obj, &touching[1], &detect, &mut state)
        .unwrap();
    state.pair.apart = true;
    let again = env
        .collide(&obj, &touching[1], &detect, &mut state)
        .unwrap();
    assert_eq!(again.stats.witness_hits, 1);
    assert!(!state.pair.apart);
}

/// An environment query's contacts as `[environment triangle, object triangle]`.
fn pairs(o: &crate::query::Outcome<'_>) -> Vec<[u32; 2]> {
    o.contacts
        .iter()
        .map(|c| [c.env_triangle, c.object_triangle])
        .collect()
}

/// A trial of the pair's other side (`steer.rs`) leaves the query's answer alone: with a
/// trial due at every query, run whole or stopped at its first pair, every report equals a
/// fresh state's (which takes the size rule's side) and every detect query finds one of its
/// contacts exactly when there are any; as an environment query and as two objects.
fn trials_leave_answers_alone<const K: usize>() {
    let mut s = 23u64 ^ K as u64;
    let scenes = scenes::<K>(&mut s);
    let (small, big) = &scenes[1];
    let part = small.flying_for(big).unwrap();
    let (mut steered, mut pair) = (QueryState::new(), QueryState::new());
    let mut touching = 0;
    for i in 0..48 {
        let pose = pose(i, &mut s);
        let tight = i % 2 == 1;
        let mut fresh = QueryState::new();
        let want = small
            .collide(big, &pose, &QueryOptions::REPORT, &mut fresh)
            .unwrap();
        let want = pairs(&want);
        touching += usize::from(!want.is_empty());
        for o in [QueryOptions::REPORT, QueryOptions::DETECT] {
            steered.steer.force_trial((big.id, part.id), tight);
            let got = pairs(&small.collide(big, &pose, &o, &mut steered).unwrap());
            pair.steer.force_trial((big.id, part.id), tight);
            let hit = big
                .collide_with(&pose, part, &Pose::IDENTITY, &o, &mut pair)
                .unwrap();
            let mut objects: Vec<[u32; 2]> = hit
                .contacts
                .iter()
                .map(|c| [c.b_triangle, c.a_triangle])
                .collect();
            objects.sort_unstable();
            for (name, g) in [("environment", &got), ("objects", &objects)] {
                if o.mode == Mode::Report {
                    assert_eq!(g, &want, "{name}, pose {i}, tight {tight}");
                } else {
                    assert_eq!(g.len(), usize::from(!want.is_empty()), "{name}, pose {i}");
                    assert!(g.iter().all(|c| want.contains(c)), "{name}, pose {i}");
                }
            }
        }
    }
    assert!(touching > 4, "only {touching} of 48 poses touch");
}

#[test]
fn trials_of_the_other_side_leave_answers_alone() {
    trials_leave_answers_alone::<18>();
    trials_leave_answers_alone::<6>();
}
