fn main() {
    let parts = kdop::scene::demo_environment(1).unwrap();
    let n: usize = parts.iter().map(|(m, _)| m.triangle_count()).sum();
    println!("parts {} tris {}", parts.len(), n);
}
