//! Arbitrary bytes as a saved hierarchy: a typed error, or an environment that validates.
//!
//! With the first byte odd, the input is taken as a file body and given a correct header
//! and checksum, as a hostile file would have, so that mutations reach the decoder and the
//! validation behind the checksum.
#![no_main]

use kdop::Environment;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let bytes = if mode % 2 == 1 {
        let mut v = b"KDOPENV\0".to_vec();
        v.extend_from_slice(&1u32.to_le_bytes());
        v.extend_from_slice(&18u32.to_le_bytes());
        v.extend_from_slice(rest);
        let crc = crc32(&v);
        v.extend_from_slice(&crc.to_le_bytes());
        v
    } else {
        rest.to_vec()
    };
    if let Ok(env) = Environment::<18>::from_bytes(&bytes) {
        assert_eq!(env.validate(), Ok(()));
    }
    let _ = Environment::<6>::from_bytes(&bytes);
});

/// CRC-32 (IEEE), bitwise.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}
