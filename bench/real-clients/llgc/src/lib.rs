pub use llguidance::ffi::*;
