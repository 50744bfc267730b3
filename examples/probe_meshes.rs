use kdop::{AxisRule, BuildOptions, Bvh, SplitPoint};
use std::time::Instant;
fn main() {
    let dir = std::path::Path::new("../shared/data/meshes");
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().map_or(false, |e| e != "md"))
        .collect();
    names.sort();
    for p in names {
        let t = Instant::now();
        let m = kdop::io::formats::load_mesh(&p).unwrap();
        let load = t.elapsed();
        let n = m.triangle_count();
        let mut line = format!(
            "{:28} {:>7} tris {:>7} verts load {:>6.0?}",
            p.file_name().unwrap().to_str().unwrap(),
            n,
            m.vertices().len(),
            load
        );
        for rule in [AxisRule::Splatter, AxisRule::MinSum] {
            let o = BuildOptions {
                rule,
                split: SplitPoint::Mean,
                leaf_size: 1,
            };
            let t = Instant::now();
            let b = Bvh::<18>::build(m.clone(), &o).unwrap();
            line += &format!(" {:?} {:>7.1?} depth {}", rule, t.elapsed(), b.depth());
            if n > 100_000 {
                break;
            }
        }
        println!("{line}");
    }
}
