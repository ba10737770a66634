//! The one error type of the crate.
//!
//! Every fallible public function returns [`Result<T>`]. Variants carry the data a user
//! needs to find the problem: which operation, which argument, the sizes involved.
//! The library does not panic on user input; panics are reserved for broken internal
//! invariants and are documented under `# Panics` where they can occur.

/// Shorthand for `std::result::Result<T, galerkin::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in `galerkin`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Two operands that must agree in size do not.
    #[error("dimension mismatch in {op}: {what} has length {found}, expected {expected}")]
    DimensionMismatch {
        /// The operation that found the mismatch (e.g. `"axpy"`).
        op: &'static str,
        /// Which operand or dimension disagrees (e.g. `"x"` or `"ncols"`).
        what: &'static str,
        /// The size that was required.
        expected: usize,
        /// The size that was given.
        found: usize,
    },

    /// The backend or device cannot do what was asked (a precision it lacks, a feature
    /// its runtime does not have).
    #[error("{what} is not supported on {backend}: {reason}")]
    Unsupported {
        /// The backend's name, with its device.
        backend: String,
        /// What was requested (e.g. `"f64 vectors"`).
        what: String,
        /// Why it cannot be done there.
        reason: String,
    },

    /// A backend could not be created: its runtime is not compiled in, or no device exists.
    #[error("backend `{backend}` is not available: {reason}")]
    BackendUnavailable {
        /// The backend that was asked for.
        backend: String,
        /// Why it cannot be used.
        reason: String,
    },

    /// A string named no known backend.
    #[error("unknown backend `{0}`: expected one of `cpu`, `wgpu`, `cuda`")]
    UnknownBackend(String),

    /// A request exceeds a limit of the device (largest buffer, grid size).
    #[error("{what} needs {requested} bytes but {backend} allows at most {limit} bytes")]
    ResourceLimit {
        /// The backend's name, with its device.
        backend: String,
        /// What was being allocated.
        what: String,
        /// The size asked for, in bytes.
        requested: u64,
        /// The device limit, in bytes.
        limit: u64,
    },

    /// An argument is outside the range the operation accepts.
    #[error("invalid argument `{name}` to {op}: {reason}")]
    InvalidArgument {
        /// The operation.
        op: &'static str,
        /// The argument.
        name: &'static str,
        /// What is wrong with it.
        reason: String,
    },

    /// Two vectors or matrices live on different devices or backends.
    #[error("operands of {op} live on different devices: {left} and {right}")]
    DeviceMismatch {
        /// The operation.
        op: &'static str,
        /// The device of the receiver.
        left: String,
        /// The device of the argument.
        right: String,
    },

    /// The device runtime reported a failure (a launch, a copy, a lost device).
    #[error("device error on {backend}: {message}")]
    Device {
        /// The backend's name, with its device.
        backend: String,
        /// The runtime's message.
        message: String,
    },

    /// A kernel could not be expanded or compiled for the device, so it did not run (its
    /// outputs hold what they held before).
    #[error("a kernel failed to compile on {backend}: {message}")]
    KernelCompilation {
        /// The backend's name, with its device.
        backend: String,
        /// The expansion panic or the compiler's message.
        message: String,
    },

    /// A sparse matrix's arrays violate the invariants of its format.
    #[error("invalid {format} matrix: {reason}")]
    InvalidMatrix {
        /// The format (`"CSR"`, `"COO"`, ...).
        format: &'static str,
        /// What is wrong, with the offending index.
        reason: String,
    },

    /// A format conversion would store too many padding slots.
    #[error(
        "converting to {format} would store {stored} slots for {nnz} nonzeros \
         (padding ratio {ratio:.2} > limit {limit:.2}); raise `FormatLimits::max_padding_ratio` \
         to accept it"
    )]
    Padding {
        /// The target format.
        format: &'static str,
        /// Slots the converted matrix would store, padding included.
        stored: u64,
        /// Nonzeros of the matrix.
        nnz: u64,
        /// `stored / nnz`.
        ratio: f64,
        /// The configured limit.
        limit: f64,
    },

    /// A file could not be parsed.
    #[error("{path}:{line}: {message}")]
    Parse {
        /// The file.
        path: String,
        /// The 1-based line number (0 when the error is not tied to a line).
        line: u64,
        /// What is wrong.
        message: String,
    },

    /// Reading or writing a file failed.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// A distributed operation failed on one or more ranks; every rank returns this error
    /// (see [`Communicator::agree`](crate::distributed::Communicator::agree)).
    #[error("rank {rank} failed ({ranks} rank(s) in all): {message}")]
    Rank {
        /// The lowest failing rank.
        rank: usize,
        /// How many ranks failed.
        ranks: usize,
        /// That rank's error.
        message: String,
        /// Whether that rank's error was bad input ([`Error::is_bad_input`]), so that every
        /// rank can tell bad input from a failure of the device or the library.
        bad_input: bool,
    },
}

impl Error {
    /// Whether the error is bad usage or input that the caller can fix (arguments, files,
    /// sizes beyond the memory or the device, a backend or feature that is not there), as
    /// opposed to a failure of the device or the library. An [`Error::Rank`] answers for
    /// the error of its failing rank.
    pub fn is_bad_input(&self) -> bool {
        match self {
            Error::InvalidArgument { .. }
            | Error::InvalidMatrix { .. }
            | Error::Padding { .. }
            | Error::DimensionMismatch { .. }
            | Error::Parse { .. }
            | Error::Io { .. }
            | Error::ResourceLimit { .. }
            | Error::Unsupported { .. }
            | Error::UnknownBackend(_)
            | Error::BackendUnavailable { .. } => true,
            Error::Rank { bad_input, .. } => *bad_input,
            Error::DeviceMismatch { .. }
            | Error::Device { .. }
            | Error::KernelCompilation { .. } => false,
        }
    }

    /// An [`Error::InvalidArgument`]: argument `name` of `op` is bad, for `reason`.
    pub(crate) fn invalid(op: &'static str, name: &'static str, reason: impl Into<String>) -> Self {
        Error::InvalidArgument {
            op,
            name,
            reason: reason.into(),
        }
    }

    /// A [`Error::DimensionMismatch`] for operand `what` of `op`.
    pub(crate) fn dims(
        op: &'static str,
        what: &'static str,
        expected: usize,
        found: usize,
    ) -> Self {
        Error::DimensionMismatch {
            op,
            what,
            expected,
            found,
        }
    }
}

/// Checks `found == expected`, else returns [`Error::DimensionMismatch`] for operand `what`
/// of `op`.
///
/// # Errors
/// [`Error::DimensionMismatch`] when the sizes differ.
pub fn check_len(
    op: &'static str,
    what: &'static str,
    expected: usize,
    found: usize,
) -> Result<()> {
    if expected == found {
        Ok(())
    } else {
        Err(Error::dims(op, what, expected, found))
    }
}
