//! `kdop`: the command-line program.
//!
//! - `kdop demo`: the world: hundreds of objects on billiard paths through the built-in room.
//! - `kdop flight`: one object's billiard flight through the built-in scene (or your meshes).
//! - `kdop world SCENE.json`: replay a scene of parts and moving objects, pairs and events.
//! - `kdop check ENV OBJECT --poses FILE`: the clash check a CAD user runs, one answer per pose.
//! - `kdop build MESH --out FILE.kdop`: build and save an environment hierarchy.
//! - `kdop paper table1|table2|table3|table45|table67|fig3|all`: the paper's experiments.
//! - `kdop bench matrix`: every real mesh against every other, kdop against FCL.
//! - `kdop bench broad`: the broad phase on N moving boxes, kdop against parry3d.

mod broad;
mod check;
mod common;
mod deform;
mod demo;
mod edits;
mod flight;
mod flights;
mod matrix;
mod paper;
mod paper_text;
#[cfg(feature = "peers")]
mod peers;
mod plots;
mod scene_file;
mod stats;
mod world;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "kdop",
    version,
    about = "Exact collision detection with k-DOP hierarchies"
)]
struct Cli {
    /// Treat what a mesh reader ignored (unknown statements, a header count lower than the
    /// data, trailing bytes) and a scene file's poses that are not rigid (all printed as
    /// warnings) as errors.
    #[arg(long, global = true)]
    strict: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// The world: many objects on billiard paths through the built-in room, colliding with
    /// it and each other; per-frame times, pairs and events summarised.
    Demo(demo::DemoArgs),
    /// One object on a billiard path through an environment; every check timed.
    Flight(flight::FlightArgs),
    /// Replay a scene file: static parts, moving objects, poses frame by frame; prints each
    /// frame's colliding pairs, their triangle pairs and the begin/end events.
    World(world::WorldArgs),
    /// Check an object at every pose of a file against an environment that stays put.
    Check(check::CheckArgs),
    /// Build an environment hierarchy from a mesh and save it for fast loading.
    Build(common::BuildArgs),
    /// Re-make the paper's experiments (Tables 1-7, Figure 3); `all` writes docs/paper.md.
    Paper(paper::PaperArgs),
    /// Benchmarks against peers.
    #[command(subcommand)]
    Bench(BenchCommand),
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Every mesh of a folder as environment against every one as flying object, on seeded
    /// near poses: kdop (each k, OBB) against FCL, reports checked; writes
    /// docs/benchmarks.md's matrix section and heat maps.
    Matrix(matrix::MatrixArgs),
    /// The sweep-and-prune broad phase alone on N moving boxes, against parry3d's BVH
    /// broad phase (`--features peers`), pairs checked against an oracle.
    Broad(broad::BroadArgs),
    /// A deforming sheet's hierarchy refit per frame (a wave, a local poke), against
    /// parry3d's deformable TriMesh (`--features peers`) on the same vertices.
    Deform(deform::DeformArgs),
    /// The editable part tree under random edits: insert and remove times, cost and query
    /// time against a fresh build, the largest frame's optimisation.
    Edits(edits::EditsArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    common::set_strict(cli.strict);
    let result = match cli.command {
        Command::Demo(a) => demo::run(&a),
        Command::Flight(a) => flight::run(&a),
        Command::Check(a) => check::run(&a),
        Command::World(a) => world::run(&a),
        Command::Build(a) => common::run_build(&a),
        Command::Paper(a) => paper::run(&a),
        Command::Bench(BenchCommand::Matrix(a)) => matrix::run(&a),
        Command::Bench(BenchCommand::Broad(a)) => broad::run(&a),
        Command::Bench(BenchCommand::Deform(a)) => deform::run(&a),
        Command::Bench(BenchCommand::Edits(a)) => edits::run(&a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
