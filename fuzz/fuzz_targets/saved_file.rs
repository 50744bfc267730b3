//! Arbitrary bytes as a saved hierarchy: a typed error, or an environment that validates.
#![no_main]

use kdop::Environment;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(env) = Environment::<18>::from_bytes(data) {
        assert_eq!(env.validate(), Ok(()));
    }
    let _ = Environment::<6>::from_bytes(data);
});
