//! The engine's one error type: a message meant for a person, and whether it was the
//! caller's input (exit 2) or the system at run time (exit 1).

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Bad command line or bad spec: nothing was touched.
    Input,
    /// The filesystem or the system refused something while preparing or running.
    Runtime,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub kind: Kind,
    pub msg: String,
}

impl Error {
    pub fn input(msg: impl Into<String>) -> Self {
        Error {
            kind: Kind::Input,
            msg: msg.into(),
        }
    }

    pub fn runtime(msg: impl Into<String>) -> Self {
        Error {
            kind: Kind::Runtime,
            msg: msg.into(),
        }
    }

    /// Process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self.kind {
            Kind::Input => 2,
            Kind::Runtime => 1,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Always one line: callers parse stderr line by line.
        let one_line: String = self
            .msg
            .chars()
            .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
            .collect();
        f.write_str(&one_line)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
