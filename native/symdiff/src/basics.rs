//! What every module of the helper shares: why it stops without a diff, and strings that live as
//! long as the process.

/// Why the helper stops without a diff (main.rs says it and exits).
pub enum Stop {
    /// One line, printed as `layoutbench: error: ...` (exit 2): what failed and what to do.
    Error(String),
    /// OLD or NEW cannot be diffed as a file (not ELF, cut short, corrupt, no symbol table, another
    /// machine): the front end words the error with the package's ELF reader (exit 125).
    Files(String),
}

/// A string that lives as long as the process (the images are kept for all of it).
pub fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}
