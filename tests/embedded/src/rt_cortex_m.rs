//! Start-up on Cortex-M (cortex-m-rt: vector table, `.data`/`.bss` set-up, the FPU enabled
//! for `eabihf`), and a HardFault handler that reports and exits.

// The `critical-section-single-core` implementation, which embedded-alloc uses.
use cortex_m as _;
use cortex_m_rt::{ExceptionFrame, entry, exception};

#[entry]
fn main() -> ! {
    crate::semihosting::exit(crate::run())
}

#[exception]
unsafe fn HardFault(frame: &ExceptionFrame) -> ! {
    crate::println!("FAIL: HardFault at pc {:#010x}", frame.pc());
    crate::semihosting::exit(3)
}
