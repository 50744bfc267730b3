//! Reading a scene file of `kdop world`: shapes, static parts, moving objects and their
//! poses frame by frame. Every fault is reported with the file and the JSON path of the
//! value at fault (`frames[3].B`), so a CAD script's author can go straight to it.
//!
//! ```json
//! {"k": 18,
//!  "shapes":  {"NAME": "mesh file, relative to the scene file"},
//!  "parts":   [{"name": "P", "shape": "NAME", "pose": [12 numbers]}],
//!  "objects": [{"name": "A", "shape": "NAME", "mode": "report", "group": 1, "mask": 4294967295}],
//!  "frames":  [{"A": [12 numbers],
//!               "insert": [{"name": "Q", "shape": "NAME", "pose": [12 numbers]}],
//!               "remove": ["P"], "move": {"P": [12 numbers]},
//!               "deform": {"A": "mesh file with A's shape's triangles"}}]}
//! ```
//!
//! A frame's edits apply before its poses, in the order remove, insert, move, deform (so a
//! frame may remove a part and insert another of the same name). Edits are checked against
//! the parts alive at their frame: removing or moving a part that is not there is a fault at
//! its path, as is a name that `insert`, `remove`, `move` or `deform` would shadow.

use crate::common::KArg;
use kdop::{Mode, Pose};
use serde_json::{Map, Value};
use std::cell::RefCell;
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

/// An edit of a frame; parts are named by their index in [`SceneFile::parts`].
#[derive(Debug, PartialEq)]
pub enum Edit {
    Remove(usize),
    Insert(usize),
    Move(usize, Pose),
    /// The vertices of a mesh file replace those of the shape (index into
    /// [`SceneFile::shapes`]); `at` is the JSON path, for errors.
    Deform {
        shape: usize,
        file: PathBuf,
        at: String,
    },
}

/// One frame: its edits, in the order they apply, then the objects placed in it (index
/// into [`SceneFile::objects`]) and their poses.
#[derive(Debug, Default)]
pub struct Frame {
    pub edits: Vec<Edit>,
    pub placed: Vec<(usize, Pose)>,
}

/// A parsed scene. Names are unique among the objects and the parts alive at any frame;
/// a removed part's name may be inserted again (a new entry of `parts`).
#[derive(Debug)]
pub struct SceneFile {
    pub k: KArg,
    /// Shape names and mesh paths (resolved against the scene file's folder), by name.
    pub shapes: Vec<(String, PathBuf)>,
    /// The parts placed from the start (`initial` of them), then those frames insert.
    pub parts: Vec<PartSpec>,
    pub initial: usize,
    pub objects: Vec<ObjectSpec>,
    pub frames: Vec<Frame>,
    /// The JSON paths of poses that are not rigid ([`NOT_RIGID`]): the format's poses are
    /// a rotation and a translation; others are applied as the affine maps they are, and
    /// the command warns.
    pub not_rigid: Vec<String>,
}

/// How far a pose's linear part may be from a rotation and still count as one
/// ([`Pose::is_rigid`]): about what numbers written from `f32` keep.
const NOT_RIGID: f64 = 1e-5;

/// Frame keys that are edits, never object names.
const EDITS: [&str; 4] = ["insert", "remove", "move", "deform"];

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

/// Paths of the poses that are not rigid, as parsing meets them.
type Notes = RefCell<Vec<String>>;

fn pose(v: &Value, at: &str, notes: &Notes) -> Parsed<Pose> {
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
    let p = Pose::from_rows(m).or_else(|e| fault(at, e.to_string()))?;
    if !p.is_rigid(NOT_RIGID) {
        notes.borrow_mut().push(at.to_string());
    }
    Ok(p)
}

/// A moving object's pose: it must have an inverse, since the object is seen from its own
/// frame.
fn object_pose(v: &Value, at: &str, notes: &Notes) -> Parsed<Pose> {
    let p = pose(v, at, notes)?;
    match p.inverse() {
        Ok(_) => Ok(p),
        Err(e) => fault(at, e.to_string()),
    }
}

fn parse(v: &Value, folder: &Path) -> Parsed<SceneFile> {
    let notes = Notes::default();
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
        if EDITS.contains(&name.as_str()) {
            return fault(at, format!("{name:?} is a frame's edit key, not a name"));
        }
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

    let part_spec = |p: &Value, at: &str, name: String| -> Parsed<PartSpec> {
        let m = object(p, at)?;
        only_keys(m, at, &["name", "shape", "pose", "group", "mask"])?;
        let shape = shape_of(m.get("shape"), at)?;
        let pose = m
            .get("pose")
            .map_or(Ok(Pose::IDENTITY), |v| pose(v, &child(at, "pose"), &notes))?;
        let (group, mask) = filter(m, at)?;
        Ok(PartSpec {
            name,
            shape,
            pose,
            group,
            mask,
        })
    };
    let no_parts = Value::Array(Vec::new());
    let mut parts = Vec::new();
    for (i, p) in array(top.get("parts").unwrap_or(&no_parts), "parts")?
        .iter()
        .enumerate()
    {
        let at = format!("parts[{i}]");
        let name = claim(object(p, &at)?.get("name"), &at)?;
        parts.push(part_spec(p, &at, name)?);
    }
    let initial = parts.len();

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
            .map(|v| object_pose(v, &child(&at, "pose"), &notes))
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
    // The parts alive as the frames go, by name.
    let mut alive: BTreeMap<String, usize> = parts
        .iter()
        .enumerate()
        .map(|(i, p)| (p.name.clone(), i))
        .collect();
    let mut frames = Vec::new();
    for (i, f) in array(top.get("frames").unwrap_or(&no_parts), "frames")?
        .iter()
        .enumerate()
    {
        let at = format!("frames[{i}]");
        let m = object(f, &at)?;
        let mut frame = Frame::default();
        let live = |alive: &BTreeMap<String, usize>, v: &str, at: &str| -> Parsed<usize> {
            alive.get(v).copied().map_or_else(
                || {
                    let why = if by_name.contains_key(v) {
                        format!("{v:?} is an object; objects move by the frame's poses")
                    } else {
                        format!("no part named {v:?} at this frame")
                    };
                    fault(at, why)
                },
                Ok,
            )
        };
        if let Some(v) = m.get("remove") {
            let at = child(&at, "remove");
            for (j, name) in array(v, &at)?.iter().enumerate() {
                let at = format!("{at}[{j}]");
                let p = live(&alive, string(name, &at)?, &at)?;
                alive.remove(&parts[p].name);
                frame.edits.push(Edit::Remove(p));
            }
        }
        if let Some(v) = m.get("insert") {
            let at = child(&at, "insert");
            for (j, p) in array(v, &at)?.iter().enumerate() {
                let at = format!("{at}[{j}]");
                let name_at = child(&at, "name");
                let Some(name) = object(p, &at)?.get("name") else {
                    return fault(name_at, "missing");
                };
                let name = string(name, &name_at)?.to_string();
                if EDITS.contains(&name.as_str()) {
                    return fault(
                        name_at,
                        format!("{name:?} is a frame's edit key, not a name"),
                    );
                }
                if by_name.contains_key(name.as_str()) || alive.contains_key(&name) {
                    return fault(name_at, format!("the name {name:?} is taken at this frame"));
                }
                let spec = part_spec(p, &at, name.clone())?;
                alive.insert(name, parts.len());
                frame.edits.push(Edit::Insert(parts.len()));
                parts.push(spec);
            }
        }
        if let Some(v) = m.get("move") {
            let at = child(&at, "move");
            for (name, v) in object(v, &at)? {
                let at = child(&at, name);
                let p = live(&alive, name, &at)?;
                frame.edits.push(Edit::Move(p, pose(v, &at, &notes)?));
            }
        }
        if let Some(v) = m.get("deform") {
            let at = child(&at, "deform");
            for (name, v) in object(v, &at)? {
                let at = child(&at, name);
                let shape = match by_name.get(name.as_str()) {
                    Some(&o) => objects[o].shape,
                    None => parts[live(&alive, name, &at)?].shape,
                };
                let file = folder.join(string(v, &at)?);
                frame.edits.push(Edit::Deform { shape, file, at });
            }
        }
        for (name, v) in m {
            if EDITS.contains(&name.as_str()) {
                continue;
            }
            let at = child(&at, name);
            let Some(&o) = by_name.get(name.as_str()) else {
                let why = if alive.contains_key(name) {
                    "a part; a part moves by the frame's \"move\"".to_string()
                } else {
                    format!("no object named {name:?}")
                };
                return fault(at, why);
            };
            frame.placed.push((o, object_pose(v, &at, &notes)?));
        }
        frames.push(frame);
    }
    Ok(SceneFile {
        k,
        shapes,
        parts,
        initial,
        objects,
        frames,
        not_rigid: notes.into_inner(),
    })
}
