//! Derivatives. (Implementation by the regex helper.)
