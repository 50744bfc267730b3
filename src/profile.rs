//! Profiling zones that cost nothing unless the `profile-with-tracy` feature is on.

/// Opens a Tracy zone named `$name` that lasts until the end of the enclosing block.
///
/// Without the `profile-with-tracy` feature this expands to nothing.
#[macro_export]
#[doc(hidden)]
macro_rules! zone {
    ($name:literal) => {
        #[cfg(feature = "profile-with-tracy")]
        let _tracy_zone = tracy_client::span!($name);
    };
}
