use std::io;
use std::path::PathBuf;

/// Why a run could not be carried out. A payload that fails, crashes or hits a limit is not
/// an error: that is a [`crate::RunOutput`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    #[error("the sandbox needs root (to map uid 0 and a private host uid into its user namespace); run clover as root")]
    NotRoot,
    #[error("invalid run: {0}")]
    InvalidSpec(String),
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{what}: {source}")]
    Sys {
        what: &'static str,
        #[source]
        source: io::Error,
    },
    #[error("setting up the sandbox failed at `{step}`: {source}")]
    Setup {
        step: String,
        #[source]
        source: io::Error,
    },
    #[error("cannot start {program:?} inside the sandbox: {source}")]
    Exec {
        program: String,
        #[source]
        source: io::Error,
    },
    #[error(
        "the sandbox supervisor died unexpectedly (status {0}); this is a bug in clover-sandbox"
    )]
    SupervisorDied(i32),
}

impl SandboxError {
    /// An I/O error while `what` on `path`.
    pub fn io(what: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        SandboxError::Io {
            what,
            path: path.into(),
            source,
        }
    }

    pub(crate) fn sys(what: &'static str) -> Self {
        SandboxError::Sys {
            what,
            source: io::Error::last_os_error(),
        }
    }
}
