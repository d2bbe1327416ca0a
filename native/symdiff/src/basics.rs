//! What every module of the helper shares: the hand-back to the Python path, and strings that live
//! as long as the process.

/// What this program does not handle, and why: the Python path answers it (main.rs hands it back).
pub struct HandBack(pub String);

impl From<String> for HandBack {
    fn from(s: String) -> Self {
        HandBack(s)
    }
}

/// A string that lives as long as the process (the images are kept for all of it).
pub fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}
