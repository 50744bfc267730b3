//! Hints to the CPU that change no result: asking for memory ahead of its use, where a
//! pass gathers by index and a benchmark showed the wait (`docs/benchmarks.md`).

/// Asks the CPU to bring `x` into the caches (a hint: nothing else changes).
#[inline(always)]
pub(crate) fn prefetch<T>(x: &T) {
    prefetch_at(std::ptr::from_ref(x));
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
