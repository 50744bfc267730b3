//! Contact geometry against independent constructions: the line where two planes meet,
//! clipped by each triangle's edges (crossing pairs), and Sutherland–Hodgman clipping
//! (coplanar pairs); and through the world, every contact of every pair has a shape on
//! both triangles.

mod common;

use glam::{DMat3, DVec3};
use kdop::{ContactShape, Triangle, contact_shape, triangles_intersect};

/// Distance from `x` to the closed triangle `t` (by the closest point on its plane if
/// inside, else on its edges).
fn distance_to(t: &Triangle, x: DVec3) -> f64 {
    let n = (t[1] - t[0]).cross(t[2] - t[0]);
    let mut best = f64::INFINITY;
    if n.length() > 0.0 {
        let nn = n.normalize();
        let p = x - nn * nn.dot(x - t[0]);
        let inside = (0..3).all(|i| {
            let (a, b) = (t[i], t[(i + 1) % 3]);
            (b - a).cross(p - a).dot(n) >= -1e-12 * n.length()
        });
        if inside {
            best = (x - p).length();
        }
    }
    for i in 0..3 {
        let (a, b) = (t[i], t[(i + 1) % 3]);
        let d = b - a;
        let s = if d.length_squared() > 0.0 {
            ((x - a).dot(d) / d.length_squared()).clamp(0.0, 1.0)
        } else {
            0.0
        };
        best = best.min((a + d * s - x).length());
    }
    best
}

/// The intersection of two crossing (non-coplanar) triangles, by another route: the line
/// where their planes meet, clipped by each triangle's three edge half-planes.
fn line_oracle(t1: &Triangle, t2: &Triangle) -> Option<(DVec3, DVec3)> {
    let (n1, n2) = (
        (t1[1] - t1[0]).cross(t1[2] - t1[0]),
        (t2[1] - t2[0]).cross(t2[2] - t2[0]),
    );
    let d = n1.cross(n2);
    // A point on both planes: solve n1.x = n1.a, n2.x = n2.b, d.x = 0.
    let m = DMat3::from_cols(n1, n2, d).transpose();
    let origin = m.inverse() * DVec3::new(n1.dot(t1[0]), n2.dot(t2[0]), 0.0);
    let (mut lo, mut hi) = (f64::NEG_INFINITY, f64::INFINITY);
    for (t, n) in [(t1, n1), (t2, n2)] {
        for i in 0..3 {
            let (a, b) = (t[i], t[(i + 1) % 3]);
            let inward = n.cross(b - a);
            // inward . (origin + s d - a) >= 0
            let (c0, c1) = (inward.dot(origin - a), inward.dot(d));
            if c1.abs() < 1e-300 {
                if c0 < 0.0 {
                    return None;
                }
            } else if c1 > 0.0 {
                lo = lo.max(-c0 / c1);
            } else {
                hi = hi.min(-c0 / c1);
            }
        }
    }
    (lo <= hi).then(|| (origin + d * lo, origin + d * hi))
}

/// Sutherland–Hodgman: `subject` clipped by the convex `clip` (both counter-clockwise in
/// the xy-plane).
fn clip_polygon(subject: &[DVec3], clip: &Triangle) -> Vec<DVec3> {
    let mut out = subject.to_vec();
    for i in 0..3 {
        let (a, b) = (clip[i], clip[(i + 1) % 3]);
        let side = |p: DVec3| (b - a).x * (p - a).y - (b - a).y * (p - a).x;
        let input = std::mem::take(&mut out);
        for j in 0..input.len() {
            let (p, q) = (input[j], input[(j + 1) % input.len()]);
            let (sp, sq) = (side(p), side(q));
            if sp >= 0.0 {
                out.push(p);
            }
            if (sp >= 0.0) != (sq >= 0.0) {
                out.push(p + (q - p) * (sp / (sp - sq)));
            }
        }
        if out.is_empty() {
            break;
        }
    }
    out
}

fn area(poly: &[DVec3]) -> f64 {
    let mut s = DVec3::ZERO;
    for i in 0..poly.len() {
        s += poly[i].cross(poly[(i + 1) % poly.len()]);
    }
    s.length() * 0.5
}

fn points(shape: &ContactShape) -> Vec<DVec3> {
    match shape {
        ContactShape::Point(p) => vec![*p],
        ContactShape::Segment(a, b) => vec![*a, *b],
        ContactShape::Polygon(v) => v.clone(),
    }
}

#[test]
fn crossing_triangles_meet_where_the_planes_line_says() {
    let mut rng = common::Rng::new(31);
    let (mut segments, mut checked) = (0, 0);
    while checked < 3000 {
        let t1: Triangle = [rng.vec(-1.0, 1.0), rng.vec(-1.0, 1.0), rng.vec(-1.0, 1.0)];
        let t2: Triangle = [rng.vec(-1.0, 1.0), rng.vec(-1.0, 1.0), rng.vec(-1.0, 1.0)];
        let shape = contact_shape(&t1, &t2);
        assert_eq!(shape.is_some(), triangles_intersect(&t1, &t2));
        let Some(shape) = shape else { continue };
        checked += 1;
        let (a, b) = line_oracle(&t1, &t2).expect("the oracle finds the crossing too");
        let got = points(&shape);
        for p in &got {
            assert!(
                distance_to(&t1, *p) < 1e-9 && distance_to(&t2, *p) < 1e-9,
                "{shape:?}"
            );
        }
        match shape {
            ContactShape::Segment(p, q) => {
                segments += 1;
                let same = (p - a).length().max((q - b).length());
                let swapped = (p - b).length().max((q - a).length());
                assert!(same.min(swapped) < 1e-9, "{p} {q} vs {a} {b}");
            }
            ContactShape::Point(p) => {
                assert!(
                    (a - b).length() < 1e-9 && (p - a).length() < 1e-9,
                    "{p} vs {a} {b}"
                );
            }
            ContactShape::Polygon(_) => panic!("random triangles are not coplanar"),
        }
    }
    assert!(segments > 2900, "{segments}");
}

#[test]
fn coplanar_triangles_overlap_in_the_clipped_polygon() {
    let mut rng = common::Rng::new(32);
    let mut polygons = 0;
    // Counter-clockwise triangles in z = 0, turned and moved by the same exact-free pose
    // would break coplanarity, so the plane is z = 0 and the check is the shape itself.
    let ccw = |mut t: Triangle| {
        if (t[1] - t[0]).cross(t[2] - t[0]).z < 0.0 {
            t.swap(1, 2);
        }
        t
    };
    let flat = |rng: &mut common::Rng| {
        let mut v = rng.vec(-1.0, 1.0);
        v.z = 0.0;
        v
    };
    for _ in 0..2000 {
        let t1 = ccw([flat(&mut rng), flat(&mut rng), flat(&mut rng)]);
        let t2 = ccw([flat(&mut rng), flat(&mut rng), flat(&mut rng)]);
        let Some(shape) = contact_shape(&t1, &t2) else {
            assert!(!triangles_intersect(&t1, &t2));
            continue;
        };
        let want = clip_polygon(&t1, &t2);
        let got = points(&shape);
        for p in &got {
            assert!(distance_to(&t1, *p) < 1e-9 && distance_to(&t2, *p) < 1e-9);
        }
        let want_area = if want.len() >= 3 { area(&want) } else { 0.0 };
        match &shape {
            ContactShape::Polygon(v) => {
                polygons += 1;
                assert!(v.len() >= 3 && v.len() <= 6, "{v:?}");
                assert!(
                    (area(v) - want_area).abs() < 1e-9,
                    "{} vs {want_area}",
                    area(v)
                );
                // Every corner of the clipped polygon is a corner of ours, up to rounding
                // (clipping may repeat or add collinear points, which we merge).
                for w in &want {
                    let near = v
                        .iter()
                        .map(|p| (*p - *w).length())
                        .fold(f64::MAX, f64::min);
                    let on_edge = (0..v.len()).any(|i| {
                        let (a, b) = (v[i], v[(i + 1) % v.len()]);
                        (b - a).cross(*w - a).length() < 1e-9 * (b - a).length().max(1e-9)
                            && (*w - a).dot(b - a) >= -1e-12
                            && (*w - b).dot(a - b) >= -1e-12
                    });
                    assert!(near < 1e-9 || on_edge, "{w} not on {v:?}");
                }
            }
            _ => assert!(
                want_area < 1e-9,
                "a {shape:?} for an overlap of area {want_area}"
            ),
        }
    }
    assert!(polygons > 300, "{polygons}");
}

#[test]
fn touching_triangles_meet_in_a_point_or_along_the_shared_edge() {
    let t1: Triangle = [DVec3::ZERO, DVec3::X, DVec3::Y];
    // A corner on the face.
    let t2: Triangle = [
        DVec3::new(0.25, 0.25, 0.0),
        DVec3::new(0.0, 0.0, 1.0),
        DVec3::new(1.0, 1.0, 1.0),
    ];
    assert_eq!(
        contact_shape(&t1, &t2),
        Some(ContactShape::Point(DVec3::new(0.25, 0.25, 0.0)))
    );
    // A shared edge, the other triangle standing up.
    let t3: Triangle = [DVec3::ZERO, DVec3::X, DVec3::new(0.5, 0.0, 1.0)];
    match contact_shape(&t1, &t3) {
        Some(ContactShape::Segment(a, b)) => {
            let (a, b) = if a.x <= b.x { (a, b) } else { (b, a) };
            assert_eq!((a, b), (DVec3::ZERO, DVec3::X));
        }
        other => panic!("{other:?}"),
    }
    // Apart by a hair.
    let t4 = t2.map(|p| p + DVec3::new(0.0, 0.0, 1e-12));
    assert_eq!(contact_shape(&t1, &t4), None);
    // A degenerate triangle (a segment) piercing the face, and two crossing segments.
    let needle: Triangle = [
        DVec3::new(0.2, 0.2, -1.0),
        DVec3::new(0.2, 0.2, 1.0),
        DVec3::new(0.2, 0.2, 0.0),
    ];
    assert_eq!(
        contact_shape(&t1, &needle),
        Some(ContactShape::Point(DVec3::new(0.2, 0.2, 0.0)))
    );
    let cross: Triangle = [
        DVec3::new(0.0, 0.2, 0.0),
        DVec3::new(1.0, 0.2, 0.0),
        DVec3::new(0.5, 0.2, 0.0),
    ];
    let along: Triangle = [
        DVec3::new(0.2, -1.0, 0.0),
        DVec3::new(0.2, 1.0, 0.0),
        DVec3::new(0.2, 0.0, 0.0),
    ];
    match contact_shape(&cross, &along) {
        Some(ContactShape::Point(p)) => assert!((p - DVec3::new(0.2, 0.2, 0.0)).length() < 1e-15),
        other => panic!("{other:?}"),
    }
    // Non-finite corners: an answer, never a panic.
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let t: Triangle = [DVec3::new(bad, 0.0, 0.0), DVec3::X, DVec3::Y];
        let _ = contact_shape(&t, &t1);
        let _ = contact_shape(&t1, &t);
        let _ = contact_shape(&t, &t);
    }
}

/// Through the world: every contact of every colliding pair has a shape, on both placed
/// triangles.
#[test]
fn world_contacts_have_shapes_on_both_triangles() {
    use kdop::{Body, ObjectDesc, Pose, World};
    let mut world = World::<18>::new();
    let ring = world
        .add_shape(kdop::scene::torus(1.0, 0.3, 32, 12).unwrap())
        .unwrap();
    let ball = world
        .add_shape(kdop::scene::icosphere(0.6, 2).unwrap())
        .unwrap();
    world
        .add_part(ring, Pose::IDENTITY, Default::default())
        .unwrap();
    let mut rng = common::Rng::new(33);
    let mut ids = Vec::new();
    for _ in 0..12 {
        let pose = Pose::new(rng.rotation(), rng.vec(-1.5, 1.5)).unwrap();
        ids.push(world.add_object(ball, pose, ObjectDesc::default()).unwrap());
    }
    world.step().unwrap();
    let mut shapes = 0;
    let place = |body: Body, tri: u32| -> Triangle {
        match body {
            Body::Object(id) => {
                let pose = world.pose(id).unwrap();
                let t = world
                    .shape_object(ball)
                    .unwrap()
                    .bvh()
                    .triangle(tri)
                    .unwrap();
                t.map(|v| pose.transform_point(v))
            }
            Body::Part(_) => world
                .shape_object(ring)
                .unwrap()
                .bvh()
                .triangle(tri)
                .unwrap(),
        }
    };
    for pair in world.pairs() {
        let got = world.contact_shapes(pair).unwrap();
        let contacts = world.contacts(pair).unwrap();
        assert_eq!(got.len(), contacts.len());
        for (shape, c) in got.iter().zip(contacts) {
            let (ta, tb) = (place(pair.a, c[0]), place(pair.b, c[1]));
            assert_eq!(Some(shape), contact_shape(&ta, &tb).as_ref());
            for p in points(shape) {
                assert!(distance_to(&ta, p) < 1e-9 && distance_to(&tb, p) < 1e-9);
            }
            shapes += 1;
        }
    }
    assert!(shapes > 20, "{shapes}");
    // A moved object's pair is a typed error, not shapes at a pose the step never saw; set
    // to the same pose again, bit for bit, it has not moved.
    let pair = world.pairs()[0];
    if let Body::Object(id) = pair.a {
        let pose = world.pose(id).unwrap();
        world.set_pose(id, pose).unwrap();
        assert!(world.contact_shapes(&pair).is_ok());
        let nudge = Pose::from_translation(DVec3::new(1e-9, 0.0, 0.0)).unwrap();
        world.set_pose(id, nudge.after(&pose).unwrap()).unwrap();
        assert!(matches!(
            world.contact_shapes(&pair),
            Err(kdop::Error::InvalidParameter { .. })
        ));
        world.step().unwrap();
    }
    // A removed body's pair is a typed error, not another body's triangles.
    let pair = world.pairs()[0];
    if let Body::Object(id) = pair.a {
        world.remove_object(id).unwrap();
        assert!(matches!(
            world.contact_shapes(&pair),
            Err(kdop::Error::StaleHandle { .. })
        ));
    }
}
