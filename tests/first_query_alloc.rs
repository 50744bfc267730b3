//! A prepared `QueryState` answers its first detect queries without calling the allocator:
//! `prepare` sizes what a query touches, so a first query costs what the next ones do
//! (issue 18). Its own test binary, one test, so that no other test's allocations are
//! counted.

use kdop::{BuildOptions, Environment, FlyingObject, QueryOptions, QueryState};

#[path = "support/counting_alloc.rs"]
mod counting;

#[global_allocator]
static A: counting::Counting = counting::Counting;

#[test]
fn a_prepared_state_answers_first_queries_without_allocating() {
    let env_mesh = kdop::scene::torus_knot(2, 3, 1.0, 0.35, 0.12, 240, 12).unwrap();
    let obj_mesh = kdop::scene::icosphere(0.4, 3).unwrap();
    let poses = kdop::scene::near_poses(&env_mesh, &obj_mesh, 40, 7).unwrap();
    let env = Environment::<18>::from_mesh(env_mesh, &BuildOptions::ENVIRONMENT).unwrap();
    let obj = FlyingObject::<18>::new(obj_mesh, &BuildOptions::FLYING).unwrap();
    let mut state = QueryState::new();
    state.prepare(&env, &obj);
    let mut collided = 0;
    let mut refined = 0u64;
    for (i, pose) in poses.iter().enumerate() {
        let (r, allocations) = counting::allocations_during(|| {
            env.collide(&obj, pose, &QueryOptions::DETECT, &mut state)
                .map(|r| (r.collides, r.stats.np))
        });
        let (collides, np) = r.unwrap();
        assert_eq!(
            allocations, 0,
            "pose {i}: a prepared detect query allocated"
        );
        collided += usize::from(collides);
        refined += np;
    }
    // The poses must exercise the descent down to triangle tests, and find contacts.
    assert!(
        collided > 10 && refined > 100,
        "{collided} contacts, {refined} triangle tests"
    );
}
