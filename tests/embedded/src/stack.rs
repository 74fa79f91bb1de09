//! Stack high-water mark: paint the unused stack below the current frame with a pattern, run,
//! then find the lowest word that changed. The stack grows down from `_stack_start` to
//! `_stack_end` (cortex-m-rt's symbols; `aarch64.ld` defines the same).

const PAINT: u32 = 0x5A5A_A5A5;
/// Left unpainted below the painting frame itself.
const MARGIN: usize = 512;

unsafe extern "C" {
    static _stack_start: u8;
    static _stack_end: u8;
}

fn bounds() -> (usize, usize) {
    // Only the symbols' addresses are taken, never their contents.
    (
        &raw const _stack_end as usize,
        &raw const _stack_start as usize,
    )
}

fn sp() -> usize {
    let sp: usize;
    // SAFETY: reads the stack pointer into a register; no memory is touched.
    unsafe { core::arch::asm!("mov {}, sp", out(reg) sp, options(nomem, nostack)) };
    sp
}

/// Paints the stack from its end up to `MARGIN` bytes below this frame.
#[inline(never)]
pub fn paint() {
    let (end, _) = bounds();
    let top = (sp() - MARGIN) & !3;
    let mut p = (end + 3) & !3;
    while p < top {
        // SAFETY: (1) [end, top) is stack below every live frame (MARGIN covers this one);
        // (2) `p` is 4-aligned.
        unsafe { core::ptr::write_volatile(p as *mut u32, PAINT) };
        p += 4;
    }
}

/// Bytes of stack used so far (since start-up: the lowest painted word that changed, measured
/// from the top).
#[inline(never)]
pub fn high_water() -> usize {
    let (end, start) = bounds();
    let mut p = (end + 3) & !3;
    // SAFETY (each read): `p` is a 4-aligned address inside the stack region.
    while p < start && unsafe { core::ptr::read_volatile(p as *const u32) } == PAINT {
        p += 4;
    }
    start - p
}
