//! Random sequences of broad-phase edits — boxes set (dynamic or static, points, huge,
//! infinite, NaN, inverted), moved a little (several at once, `set_many`) or far,
//! switched between dynamic and static, removed and set again — with updates in between
//! under a chosen or an automatic cell size: every update's pairs equal the all-pairs
//! oracle, none twice, and box queries report exactly the boxes they meet. Refused boxes
//! (a list of them whole) change nothing.
#![no_main]

mod decode;

use decode::Bytes;
use kdop::{Aabb, BroadPhase};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let mut bp = match b.byte() % 4 {
        0 => BroadPhase::with_cell_size(0.5).unwrap(),
        1 => BroadPhase::with_cell_size(4.0).unwrap(),
        _ => BroadPhase::new(),
    };
    let ids = 1 + u32::from(b.byte() % 48);
    let mut model: Vec<Option<(Aabb, bool)>> = vec![None; ids as usize];
    let boxes = |b: &mut Bytes| {
        let lo = [b.f64(), b.f64(), b.f64()].map(|v| v as f32);
        let ext = [b.f64(), b.f64(), b.f64()].map(|v| (v.abs() as f32) * 0.5);
        Aabb::new(lo, [0, 1, 2].map(|i| lo[i] + ext[i]))
    };
    for _ in 0..300 {
        if b.0.is_empty() {
            break;
        }
        let id = u32::from(b.byte()) % ids;
        match b.byte() % 6 {
            0 | 1 => {
                let a = boxes(&mut b);
                let dynamic = b.byte() % 3 != 0;
                match bp.set(id, a, dynamic) {
                    Ok(()) => model[id as usize] = Some((a, dynamic)),
                    Err(_) => assert!(
                        a.lo.iter().chain(&a.hi).any(|v| v.is_nan())
                            || (0..3).any(|i| a.lo[i] > a.hi[i])
                    ),
                }
            }
            2 => {
                // A few boxes moved a little, set as one list (repeats allowed), all
                // dynamic or all static.
                let d = b.byte() % 4 != 0;
                let mut list = Vec::new();
                for _ in 0..=b.byte() % 4 {
                    let id = u32::from(b.byte()) % ids;
                    if let Some((mut a, _)) = model[id as usize] {
                        let step = f32::from(b.byte() as i8) / 64.0;
                        let axis = usize::from(b.byte() % 3);
                        a.lo[axis] += step;
                        a.hi[axis] += step;
                        list.push((id, a));
                    }
                }
                if bp.set_many(&list, d).is_ok() {
                    for &(id, a) in &list {
                        model[id as usize] = Some((a, d));
                    }
                }
            }
            3 => {
                if let Some((a, d)) = model[id as usize] {
                    bp.set(id, a, !d).unwrap();
                    model[id as usize] = Some((a, !d));
                }
            }
            4 => {
                assert_eq!(bp.remove(id), model[id as usize].is_some());
                model[id as usize] = None;
            }
            _ => {
                bp.update();
                let live: Vec<(u32, Aabb, bool)> = model
                    .iter()
                    .enumerate()
                    .filter_map(|(i, m)| m.map(|(a, d)| (i as u32, a, d)))
                    .collect();
                let mut got: Vec<(u32, u32)> = bp.pairs().collect();
                let n = got.len();
                got.sort_unstable();
                got.dedup();
                assert_eq!(got.len(), n, "a pair reported twice");
                assert_eq!(got, kdop::oracle::brute_force_pairs(&live));
                assert_eq!(bp.len(), live.len());
                let q = boxes(&mut b);
                let mut found = Vec::new();
                bp.query(&q, |p| found.push(p));
                let n = found.len();
                found.sort_unstable();
                found.dedup();
                assert_eq!(found.len(), n, "a box reported twice");
                if q.lo.iter().chain(&q.hi).all(|v| !v.is_nan())
                    && (0..3).all(|i| q.lo[i] <= q.hi[i])
                {
                    let want: Vec<u32> = live
                        .iter()
                        .filter(|(_, a, _)| a.overlaps(&q))
                        .map(|x| x.0)
                        .collect();
                    assert_eq!(found, want);
                }
            }
        }
    }
});
