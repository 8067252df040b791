//! Recorded traces of a program's filesystem calls and their replay (fsbench issue 49):
//! the trace format (`format`, `kind`), its import from strace's output (`straceline`,
//! `import`, with the tree `snapshot` taken before the program ran), its checking
//! (`check`) and its replay (`replay`, `calls`); `bench` holds what measures the
//! replayer's own cost. docs/replay.md describes them for people.

pub mod bench;
pub mod calls;
pub mod check;
pub mod clock;
pub mod format;
pub mod import;
pub mod kind;
pub mod replay;
pub mod snapshot;
pub mod straceline;
