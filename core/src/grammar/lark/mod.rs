//! The Lark-style front end. (Implementation by the Lark helper.)
