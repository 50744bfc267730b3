//! Random sequences of edits to the dynamic part tree — leaves inserted (one by one and in
//! bulk), removed and moved, the tree optimised and rebuilt,
//! bounds with NaN, infinities and huge or empty extents, handles used after removal — with
//! the tree's invariants checked after every edit and its queries against a brute-force scan
//! of a model of the leaves' fat bounds.
#![no_main]

mod decode;

use decode::Bytes;
use kdop::{Dop, DynamicTree, Error, TreeLeaf};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let margin = [0.0, 0.1, 0.5][usize::from(b.byte()) % 3];
    let mut tree = DynamicTree::<18>::new(margin).unwrap();
    // The model: per live leaf, its handle, item and fat bound.
    let mut live: Vec<(TreeLeaf, u32, Dop<18>)> = Vec::new();
    let mut gone: Vec<TreeLeaf> = Vec::new();
    // A leaf's fat bound, read from the tree and checked against the documented rule: it
    // holds the leaf's bound, and the margin (about `margin` times the largest extent,
    // rounded in f32) stays within a thousandth of that rounded outward.
    let fat = |tree: &DynamicTree<18>, leaf: TreeLeaf, d: &Dop<18>| {
        let f = tree.fat(leaf).unwrap();
        if margin == 0.0 {
            assert_eq!(f, *d);
        } else {
            assert!(f.contains(d), "{f:?} does not hold {d:?}");
            let most = d.enlarged(margin * d.box_extent().max_element() * 1.001);
            assert!(most.contains(&f), "{f:?} is fatter than {most:?}");
        }
        f
    };
    for item in 0..200u32 {
        if b.0.is_empty() {
            break;
        }
        match b.byte() % 7 {
            0 | 1 => {
                let d = Dop::from_points(&[b.point(), b.point()]);
                match tree.insert(&d, item) {
                    Ok(leaf) => live.push((leaf, item, fat(&tree, leaf, &d))),
                    Err(Error::InvalidParameter { .. }) => assert!(
                        d.is_empty()
                            || (0..9).any(|i| !d.lo(i).is_finite() || !d.hi(i).is_finite())
                    ),
                    Err(e) => panic!("insert: {e}"),
                }
            }
            2 if !live.is_empty() => {
                let j = usize::from(b.byte()) % live.len();
                let (leaf, item, _) = live.swap_remove(j);
                assert_eq!(tree.remove(leaf).unwrap(), item);
                gone.push(leaf);
            }
            3 if !live.is_empty() => {
                let j = usize::from(b.byte()) % live.len();
                let d = Dop::from_points(&[b.point(), b.point()]);
                let (leaf, _, old) = live[j];
                match tree.move_leaf(leaf, &d) {
                    Ok(moved) => {
                        assert_eq!(moved, !old.contains(&d));
                        if moved {
                            live[j].2 = fat(&tree, leaf, &d);
                        }
                    }
                    Err(Error::InvalidParameter { .. }) => {}
                    Err(e) => panic!("move: {e}"),
                }
            }
            4 => {
                // A bulk load (a bad bound in it must change nothing), then optimisation.
                let batch: Vec<(Dop<18>, u32)> = (0..b.byte() % 8)
                    .map(|j| {
                        let d = Dop::from_points(&[b.point(), b.point()]);
                        (d, 1000 * (item + 1) + u32::from(j))
                    })
                    .collect();
                match tree.insert_bulk(&batch) {
                    Ok(leaves) => {
                        for ((d, i), leaf) in batch.iter().zip(leaves) {
                            live.push((leaf, *i, fat(&tree, leaf, d)));
                        }
                    }
                    Err(e) => assert!(matches!(e.root(), Error::InvalidParameter { .. }), "{e}"),
                }
                tree.optimize(u32::from(b.byte()));
            }
            5 => tree.rebuild(),
            _ => {
                if let Some(&leaf) = gone.last() {
                    assert!(matches!(tree.remove(leaf), Err(Error::StaleHandle { .. })));
                    assert!(matches!(tree.item(leaf), Err(Error::StaleHandle { .. })));
                }
                let q = Dop::from_points(&[b.point(), b.point()]);
                let mut got = Vec::new();
                tree.query(&q, |i| got.push(i));
                got.sort_unstable();
                let mut want: Vec<u32> = live
                    .iter()
                    .filter(|(_, _, f)| f.overlaps(&q))
                    .map(|&(_, i, _)| i)
                    .collect();
                want.sort_unstable();
                assert_eq!(got, want);
            }
        }
        tree.validate().unwrap();
        assert_eq!(tree.len(), live.len());
    }
});
