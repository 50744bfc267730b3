//! Reading a scene file of `kdop world`: shapes, static parts, moving objects and their
//! poses frame by frame. Every fault is reported with the file and the JSON path of the
//! value at fault (`frames[3].B`), so a CAD script's author can go straight to it.
//!
//! ```json
//! {"k": 18,
//!  "shapes":  {"NAME": "mesh file, relative to the scene file"},
//!  "parts":   [{"name": "P", "shape": "NAME", "pose": [12 numbers]}],
//!  "objects": [{"name": "A", "shape": "NAME", "mode": "report", "group": 1, "mask": 4294967295}],
//!  "frames":  [{"A": [12 numbers]}]}
//! ```

use crate::common::KArg;
use kdop::{Mode, Pose};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A static part of a scene.
#[derive(Debug)]
pub struct PartSpec {
    pub name: String,
    /// Index into [`SceneFile::shapes`].
    pub shape: usize,
    pub pose: Pose,
    pub group: u32,
    pub mask: u32,
}

/// A moving object of a scene.
#[derive(Debug)]
pub struct ObjectSpec {
    pub name: String,
    /// Index into [`SceneFile::shapes`].
    pub shape: usize,
    pub mode: Mode,
    pub group: u32,
    pub mask: u32,
    /// Where it is before the first frame; without one it joins at the first frame that
    /// places it.
    pub pose: Option<Pose>,
}

/// A parsed scene: names are unique across parts and objects.
#[derive(Debug)]
pub struct SceneFile {
    pub k: KArg,
    /// Shape names and mesh paths (resolved against the scene file's folder), by name.
    pub shapes: Vec<(String, PathBuf)>,
    pub parts: Vec<PartSpec>,
    pub objects: Vec<ObjectSpec>,
    /// Per frame, the objects placed in it (index into `objects`) and their poses.
    pub frames: Vec<Vec<(usize, Pose)>>,
}

/// A fault at a JSON path.
struct At(String, String);

type Parsed<T> = Result<T, At>;

fn fault<T>(path: impl Into<String>, why: impl Into<String>) -> Parsed<T> {
    Err(At(path.into(), why.into()))
}

/// `parent.key`, or `parent["key"]` when the key is not a plain identifier.
fn child(parent: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match (parent.is_empty(), plain) {
        (true, true) => key.to_string(),
        (false, true) => format!("{parent}.{key}"),
        (_, false) => format!("{parent}[{key:?}]"),
    }
}

/// Reads and checks a scene file.
pub fn read(path: &Path) -> kdop::Result<SceneFile> {
    let name = format!("scene {}", path.display());
    let bytes = std::fs::read(path).map_err(|e| kdop::Error::from(e).context(name.clone()))?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
        kdop::Error::InvalidParameter {
            name: "scene file",
            reason: format!("not JSON: {e}"),
        }
        .context(name.clone())
    })?;
    let folder = path.parent().unwrap_or(Path::new("."));
    parse(&value, folder).map_err(|At(at, why)| {
        kdop::Error::InvalidParameter {
            name: "scene file",
            reason: format!("at {}: {why}", if at.is_empty() { "the top" } else { &at }),
        }
        .context(name)
    })
}

fn object<'a>(v: &'a Value, at: &str) -> Parsed<&'a Map<String, Value>> {
    v.as_object().map_or_else(
        || fault(at, format!("expected an object, found {}", kind(v))),
        Ok,
    )
}

fn array<'a>(v: &'a Value, at: &str) -> Parsed<&'a Vec<Value>> {
    v.as_array().map_or_else(
        || fault(at, format!("expected an array, found {}", kind(v))),
        Ok,
    )
}

fn string<'a>(v: &'a Value, at: &str) -> Parsed<&'a str> {
    v.as_str().map_or_else(
        || fault(at, format!("expected a string, found {}", kind(v))),
        Ok,
    )
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Refuses keys outside `known`: a misspelt "mask" must not be silently ignored.
fn only_keys(map: &Map<String, Value>, at: &str, known: &[&str]) -> Parsed<()> {
    match map.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => fault(
            child(at, k),
            format!("unknown key; expected one of {}", known.join(", ")),
        ),
        None => Ok(()),
    }
}

fn u32_of(v: &Value, at: &str) -> Parsed<u32> {
    v.as_u64().and_then(|n| u32::try_from(n).ok()).map_or_else(
        || fault(at, format!("expected an integer from 0 to {}", u32::MAX)),
        Ok,
    )
}

fn pose(v: &Value, at: &str) -> Parsed<Pose> {
    let nums = array(v, at)?;
    if nums.len() != 12 {
        return fault(
            at,
            format!(
                "expected 12 numbers (the row-major 3x4 matrix), found {}",
                nums.len()
            ),
        );
    }
    let mut m = [0.0; 12];
    for (i, (slot, n)) in m.iter_mut().zip(nums).enumerate() {
        *slot = n.as_f64().map_or_else(
            || {
                fault(
                    format!("{at}[{i}]"),
                    format!("expected a number, found {}", kind(n)),
                )
            },
            Ok,
        )?;
    }
    Pose::from_rows(m).or_else(|e| fault(at, e.to_string()))
}

/// A moving object's pose: it must have an inverse, since the object is seen from its own
/// frame.
fn object_pose(v: &Value, at: &str) -> Parsed<Pose> {
    let p = pose(v, at)?;
    match p.inverse() {
        Ok(_) => Ok(p),
        Err(e) => fault(at, e.to_string()),
    }
}

fn parse(v: &Value, folder: &Path) -> Parsed<SceneFile> {
    let top = object(v, "")?;
    only_keys(top, "", &["k", "shapes", "parts", "objects", "frames"])?;
    let k = match top.get("k") {
        None => KArg::K18,
        Some(k) => match k.as_u64() {
            Some(6) => KArg::K6,
            Some(14) => KArg::K14,
            Some(18) => KArg::K18,
            Some(26) => KArg::K26,
            _ => return fault("k", "expected 6, 14, 18 or 26"),
        },
    };
    let empty = Value::Object(Map::new());
    let shape_map = object(top.get("shapes").unwrap_or(&empty), "shapes")?;
    let mut shapes = Vec::new();
    let mut shape_index = BTreeMap::new();
    for (name, file) in shape_map {
        let at = child("shapes", name);
        let file = string(file, &at)?;
        shape_index.insert(name.as_str(), shapes.len());
        shapes.push((name.clone(), folder.join(file)));
    }
    let shape_of = |v: Option<&Value>, at: &str| -> Parsed<usize> {
        let at = child(at, "shape");
        let Some(v) = v else {
            return fault(at, "missing");
        };
        let name = string(v, &at)?;
        shape_index.get(name).copied().map_or_else(
            || fault(at, format!("no shape named {name:?} in shapes")),
            Ok,
        )
    };
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    let mut claim = |v: Option<&Value>, at: &str| -> Parsed<String> {
        let at = child(at, "name");
        let Some(v) = v else {
            return fault(at, "missing");
        };
        let name = string(v, &at)?.to_string();
        if let Some(first) = names.insert(name.clone(), at.clone()) {
            return fault(at, format!("the name {name:?} is taken by {first}"));
        }
        Ok(name)
    };
    let filter = |m: &Map<String, Value>, at: &str| -> Parsed<(u32, u32)> {
        let group = m
            .get("group")
            .map_or(Ok(1), |g| u32_of(g, &child(at, "group")))?;
        let mask = m
            .get("mask")
            .map_or(Ok(u32::MAX), |g| u32_of(g, &child(at, "mask")))?;
        Ok((group, mask))
    };

    let no_parts = Value::Array(Vec::new());
    let mut parts = Vec::new();
    for (i, p) in array(top.get("parts").unwrap_or(&no_parts), "parts")?
        .iter()
        .enumerate()
    {
        let at = format!("parts[{i}]");
        let m = object(p, &at)?;
        only_keys(m, &at, &["name", "shape", "pose", "group", "mask"])?;
        let name = claim(m.get("name"), &at)?;
        let shape = shape_of(m.get("shape"), &at)?;
        let pose = m
            .get("pose")
            .map_or(Ok(Pose::IDENTITY), |v| pose(v, &child(&at, "pose")))?;
        let (group, mask) = filter(m, &at)?;
        parts.push(PartSpec {
            name,
            shape,
            pose,
            group,
            mask,
        });
    }

    let mut objects = Vec::new();
    for (i, o) in array(top.get("objects").unwrap_or(&no_parts), "objects")?
        .iter()
        .enumerate()
    {
        let at = format!("objects[{i}]");
        let m = object(o, &at)?;
        only_keys(m, &at, &["name", "shape", "mode", "group", "mask", "pose"])?;
        let name = claim(m.get("name"), &at)?;
        let shape = shape_of(m.get("shape"), &at)?;
        let mode = match m.get("mode") {
            None => Mode::Report,
            Some(v) => match string(v, &child(&at, "mode"))? {
                "report" => Mode::Report,
                "detect" => Mode::Detect,
                other => {
                    return fault(
                        child(&at, "mode"),
                        format!("{other:?}: expected \"report\" or \"detect\""),
                    );
                }
            },
        };
        let (group, mask) = filter(m, &at)?;
        let pose = m
            .get("pose")
            .map(|v| object_pose(v, &child(&at, "pose")))
            .transpose()?;
        objects.push(ObjectSpec {
            name,
            shape,
            mode,
            group,
            mask,
            pose,
        });
    }

    let by_name: BTreeMap<&str, usize> = objects
        .iter()
        .enumerate()
        .map(|(i, o)| (o.name.as_str(), i))
        .collect();
    let mut frames = Vec::new();
    for (i, f) in array(top.get("frames").unwrap_or(&no_parts), "frames")?
        .iter()
        .enumerate()
    {
        let at = format!("frames[{i}]");
        let mut placed = Vec::new();
        for (name, v) in object(f, &at)? {
            let at = child(&at, name);
            let Some(&o) = by_name.get(name.as_str()) else {
                let why = if parts.iter().any(|p| &p.name == name) {
                    "a part; parts stay where they are placed".to_string()
                } else {
                    format!("no object named {name:?}")
                };
                return fault(at, why);
            };
            placed.push((o, object_pose(v, &at)?));
        }
        frames.push(placed);
    }
    Ok(SceneFile {
        k,
        shapes,
        parts,
        objects,
        frames,
    })
}
