//! One error type with a kind and a context chain (foyer-style).

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Bad command line.
    Usage,
    /// A config file or field is invalid.
    Config,
    /// An input trace is malformed.
    Trace,
    /// The environment lacks something we need (a permission, a NUMA node).
    Unsupported,
    /// I/O on our own files.
    Io,
    /// A broken invariant inside tiermem.
    Internal,
}

impl ErrorKind {
    /// Process exit status for this kind: 2 for anything the user can fix in the invocation.
    pub fn exit_code(self) -> i32 {
        match self {
            ErrorKind::Usage | ErrorKind::Config | ErrorKind::Trace | ErrorKind::Unsupported => 2,
            ErrorKind::Io | ErrorKind::Internal => 1,
        }
    }
}

#[derive(Debug)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
    pub context: Vec<String>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            context: Vec::new(),
        }
    }
    pub fn config(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Config, message)
    }
    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Usage, message)
    }
    pub fn trace(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Trace, message)
    }
    pub fn io(what: impl fmt::Display, err: std::io::Error) -> Self {
        Self::new(ErrorKind::Io, format!("{what}: {err}"))
    }
    /// Add an outer context line ("while loading examples/x.toml").
    pub fn context(mut self, ctx: impl Into<String>) -> Self {
        self.context.push(ctx.into());
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.context.iter().rev() {
            write!(f, "{c}: ")?;
        }
        write!(f, "{}", self.message)
    }
}

impl std::error::Error for Error {}
