//! fsbench-engine: a filebench-style workload engine for fsbench.
//!
//! A JSON spec (`"schema": 1`) describes filesets and thread groups running flowop
//! chains; the engine prepares the filesets (untimed), runs the chains for a duration or
//! an operation count, and reports per-flowop ops/s, MB/s and HDR latency percentiles as
//! JSON. The `churn` command ages a filesystem (after Geriatrix) by creating and deleting
//! files to a target fullness. `trace` records a program's filesystem calls (from strace)
//! and replays them. See README.md beside Cargo.toml for the CLI and the schemas.

pub mod churn;
pub mod cli;
pub mod dist;
pub mod error;
pub mod fileset;
pub mod flowops;
pub mod personalities;
pub mod runner;
pub mod spec;
pub mod stats;
pub mod sys;
pub mod trace;
