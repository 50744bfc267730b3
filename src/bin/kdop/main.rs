//! `kdop`: the command-line program.
//!
//! - `kdop demo`: a billiard flight through the built-in scene (or your meshes), summarised.
//! - `kdop check ENV OBJECT --poses FILE`: the clash check a CAD user runs, one answer per pose.
//! - `kdop build MESH --out FILE.kdop`: build and save an environment hierarchy.

mod check;
mod common;
mod demo;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "kdop",
    version,
    about = "Exact collision detection with k-DOP hierarchies"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Fly an object along a billiard path through an environment and summarise the checks.
    Demo(demo::DemoArgs),
    /// Check an object at every pose of a file against an environment that stays put.
    Check(check::CheckArgs),
    /// Build an environment hierarchy from a mesh and save it for fast loading.
    Build(common::BuildArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(a) => demo::run(&a),
        Command::Check(a) => check::run(&a),
        Command::Build(a) => common::run_build(&a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
