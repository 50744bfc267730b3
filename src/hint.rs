//! Hints to the CPU that change no result: asking for memory ahead of its use, where a
//! pass gathers by index and a benchmark showed the wait (`docs/benchmarks.md`).

/// Asks the CPU to bring `x` into the caches (a hint: nothing else changes).
#[inline(always)]
pub(crate) fn prefetch<T>(x: &T) {
    prefetch_at(std::ptr::from_ref(x));
}

/// Asks for every line of `x`: a record larger than its alignment (or than a line) may
/// touch two or more lines, and [`prefetch`] asks for the first alone, leaving the rest to a
/// miss when the record is read (a hint: nothing else changes).
#[inline(always)]
pub(crate) fn prefetch_whole<T>(x: &T) {
    let p = std::ptr::from_ref(x).cast::<u8>();
    prefetch_at(p);
    if size_of::<T>() > align_of::<T>().min(64) {
        // Every 64th byte after the first and the last: one in each line the record
        // touches, whatever its place in its first line.
        let mut at = 64;
        while at < size_of::<T>() {
            prefetch_at(p.wrapping_add(at));
            at += 64;
        }
        prefetch_at(p.wrapping_add(size_of::<T>() - 1));
    }
}

/// [`prefetch`] of an address that need not hold a value (a list's places past its end,
/// which a write will fill): a prefetch cannot fault.
#[inline(always)]
pub(crate) fn prefetch_at<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing the program sees and cannot fault, whatever the
    // address; SSE, which provides it, is part of the x86_64 baseline.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
