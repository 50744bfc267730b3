//! Brute-force oracles that the fast structures are tested against.

mod reference;

pub use reference::reference_triangles_intersect;
