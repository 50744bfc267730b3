//! Mesh files: OBJ (`tobj`), STL binary and ASCII (`stl_io`), PLY ASCII and binary
//! (`ply-rs-bw`). Behind the `formats` feature.
//!
//! Triangles are numbered in file order. A polygon with n > 3 corners becomes the fan
//! `(v0, v1, v2), (v0, v2, v3), ...`; degenerate triangles are kept, so they keep their
//! numbers. Vertices of bit-identical position are welded (triangles and their order are
//! unchanged). OBJ coordinates are parsed as `f64`.

use crate::error::{Error, Result};
use crate::mesh::Mesh;
use glam::DVec3;
use std::path::Path;

fn err(path: &Path, reason: impl ToString) -> Error {
    Error::MeshFile {
        source_name: path.display().to_string(),
        reason: reason.to_string(),
    }
}

/// Reads a mesh file, choosing the format by extension (`.obj`, `.stl`, `.ply`, any case).
///
/// # Errors
/// [`Error::MeshFile`] for unreadable or malformed files and unknown extensions, and every
/// [`Mesh::new`] error (an OBJ without faces is [`Error::EmptyMesh`]).
pub fn load_mesh(path: impl AsRef<Path>) -> Result<Mesh> {
    let path = path.as_ref();
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    let (v, t) = match ext.as_str() {
        "obj" => read_obj(path)?,
        "stl" => read_stl(path)?,
        "ply" => read_ply(path)?,
        _ => return Err(err(path, "unknown extension (expected .obj, .stl or .ply)")),
    };
    Ok(Mesh::new(v, t)?.welded())
}

type Raw = (Vec<DVec3>, Vec<[u32; 3]>);

fn read_obj(path: &Path) -> Result<Raw> {
    let opts = tobj::LoadOptions {
        single_index: true,
        triangulate: true,
        ignore_points: true,
        ignore_lines: true,
    };
    // Materials are not needed; a missing .mtl file must not fail the load.
    let file = std::fs::File::open(path).map_err(|e| err(path, e))?;
    let mut reader = std::io::BufReader::new(file);
    let (models, _) =
        tobj::load_obj_buf(&mut reader, &opts, |_| Err(tobj::LoadError::OpenFileFailed))
            .map_err(|e| err(path, e))?;
    let mut vertices = Vec::new();
    let mut triangles = Vec::new();
    for m in models {
        let base = u32::try_from(vertices.len()).map_err(|_| err(path, "too many vertices"))?;
        vertices.extend(
            m.mesh
                .positions
                .chunks_exact(3)
                .map(|c| DVec3::new(c[0], c[1], c[2])),
        );
        for f in m.mesh.indices.chunks_exact(3) {
            triangles.push([base + f[0], base + f[1], base + f[2]]);
        }
    }
    Ok((vertices, triangles))
}

fn read_stl(path: &Path) -> Result<Raw> {
    let mut file = std::fs::File::open(path).map_err(|e| err(path, e))?;
    let m = stl_io::read_stl(&mut file).map_err(|e| err(path, e))?;
    let vertices = m
        .vertices
        .iter()
        .map(|v| DVec3::new(v[0].into(), v[1].into(), v[2].into()))
        .collect();
    let mut triangles = Vec::with_capacity(m.faces.len());
    for f in &m.faces {
        let idx = f.vertices.map(u32::try_from);
        match idx {
            [Ok(a), Ok(b), Ok(c)] => triangles.push([a, b, c]),
            _ => return Err(err(path, "vertex index too large")),
        }
    }
    Ok((vertices, triangles))
}

fn read_ply(path: &Path) -> Result<Raw> {
    use ply_rs_bw::parser::Parser;
    use ply_rs_bw::ply::{DefaultElement, Property};
    let mut file = std::fs::File::open(path).map_err(|e| err(path, e))?;
    let ply = Parser::<DefaultElement>::new()
        .read_ply(&mut file)
        .map_err(|e| err(path, e))?;
    let scalar = |p: Option<&Property>| -> Option<f64> {
        Some(match p? {
            Property::Float(v) => f64::from(*v),
            Property::Double(v) => *v,
            Property::Int(v) => f64::from(*v),
            Property::UInt(v) => f64::from(*v),
            Property::Short(v) => f64::from(*v),
            Property::UShort(v) => f64::from(*v),
            Property::Char(v) => f64::from(*v),
            Property::UChar(v) => f64::from(*v),
            _ => return None,
        })
    };
    let verts = ply
        .payload
        .get("vertex")
        .ok_or_else(|| err(path, "no vertex element"))?;
    let mut vertices = Vec::with_capacity(verts.len());
    for v in verts {
        let c = ["x", "y", "z"].map(|k| scalar(v.get(k)));
        match c {
            [Some(x), Some(y), Some(z)] => vertices.push(DVec3::new(x, y, z)),
            _ => return Err(err(path, "vertex without numeric x, y, z")),
        }
    }
    let mut triangles = Vec::new();
    let faces = ply.payload.get("face").map(Vec::as_slice).unwrap_or(&[]);
    for f in faces {
        let list = f
            .get("vertex_indices")
            .or_else(|| f.get("vertex_index"))
            .ok_or_else(|| err(path, "face without vertex_indices"))?;
        let idx: Vec<i64> = match list {
            Property::ListChar(l) => l.iter().map(|&v| i64::from(v)).collect(),
            Property::ListUChar(l) => l.iter().map(|&v| i64::from(v)).collect(),
            Property::ListShort(l) => l.iter().map(|&v| i64::from(v)).collect(),
            Property::ListUShort(l) => l.iter().map(|&v| i64::from(v)).collect(),
            Property::ListInt(l) => l.iter().map(|&v| i64::from(v)).collect(),
            Property::ListUInt(l) => l.iter().map(|&v| i64::from(v)).collect(),
            _ => return Err(err(path, "face indices are not an integer list")),
        };
        let idx: Vec<u32> = idx
            .into_iter()
            .map(|v| u32::try_from(v).map_err(|_| err(path, "negative or huge vertex index")))
            .collect::<Result<_>>()?;
        if idx.len() < 3 {
            return Err(err(path, "face with fewer than 3 corners"));
        }
        for k in 1..idx.len() - 1 {
            triangles.push([idx[0], idx[k], idx[k + 1]]);
        }
    }
    Ok((vertices, triangles))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str, content: &[u8]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("kdop-fmt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, content).unwrap();
        p
    }

    #[test]
    fn obj_fans_polygons_in_file_order_and_keeps_degenerates() {
        let p = tmp(
            "a.obj",
            b"v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0.5 0.5 1\nf 1 2 3 4\ng second\nf 1 1 1\nf 5 1 2\n",
        );
        let m = load_mesh(&p).unwrap();
        assert_eq!(m.triangle_count(), 4);
        let t = |i| m.triangle(i).unwrap();
        assert_eq!(t(0), [DVec3::ZERO, DVec3::X, DVec3::new(1.0, 1.0, 0.0)]);
        assert_eq!(t(1), [DVec3::ZERO, DVec3::new(1.0, 1.0, 0.0), DVec3::Y]);
        assert_eq!(t(2), [DVec3::ZERO; 3]);
        assert_eq!(t(3)[0], DVec3::new(0.5, 0.5, 1.0));
    }

    #[test]
    fn ply_ascii_and_errors() {
        let p = tmp(
            "b.ply",
            b"ply\nformat ascii 1.0\nelement vertex 4\nproperty float x\nproperty float y\nproperty float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n0 0 0\n1 0 0\n1 1 0\n0 1 0\n4 0 1 2 3\n",
        );
        let m = load_mesh(&p).unwrap();
        assert_eq!(m.triangle_count(), 2);
        let bad = tmp("c.ply", b"ply\nformat ascii 1.0\nelement vertex 1\n");
        assert!(matches!(load_mesh(&bad), Err(Error::MeshFile { .. })));
        let bad = tmp("d.obj", b"v 0 0 0\nf 1 2 3\n");
        assert!(load_mesh(&bad).is_err());
        assert!(matches!(
            load_mesh(tmp("e.xyz", b"")),
            Err(Error::MeshFile { .. })
        ));
        assert!(load_mesh(tmp("f.stl", b"solid x\nfacet normal")).is_err());
    }
}
