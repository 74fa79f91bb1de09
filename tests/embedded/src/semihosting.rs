//! ARM semihosting, the two calls the firmware needs: write to the host's stdout and exit
//! with a status. qemu serves them with `-semihosting-config enable=on,target=native`
//! (`bkpt 0xab` on M-profile, `hlt 0xf000` on AArch64).

use core::fmt;

const SYS_OPEN: usize = 0x01;
const SYS_WRITE: usize = 0x05;
/// Exit with a status code (both on AArch32 and AArch64; its argument is a 2-word block).
const SYS_EXIT_EXTENDED: usize = 0x20;
/// `ADP_Stopped_ApplicationExit`: the reason code of a normal exit.
const APPLICATION_EXIT: usize = 0x20026;

/// One semihosting call: operation `op`, argument (usually a pointer to a parameter block)
/// `arg`; returns the host's result.
///
/// # Safety
/// `arg` must be what `op` expects (a valid parameter block for the block-taking calls).
#[inline(never)]
unsafe fn call(op: usize, arg: usize) -> usize {
    let ret: usize;
    #[cfg(target_arch = "arm")]
    // SAFETY: (1) `bkpt 0xab` traps into the debugger (qemu), which reads r0/r1 and writes r0;
    // (2) the caller passes a valid block for `op`.
    unsafe {
        core::arch::asm!("bkpt 0xab", inout("r0") op => ret, in("r1") arg, options(nostack));
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: as above, with `hlt 0xf000` and x0/x1.
    unsafe {
        core::arch::asm!("hlt 0xf000", inout("x0") op => ret, in("x1") arg, options(nostack));
    }
    ret
}

/// The host's stdout (`:tt` opened for writing), opened once.
fn stdout() -> usize {
    static HANDLE: core::sync::atomic::AtomicUsize =
        core::sync::atomic::AtomicUsize::new(usize::MAX);
    let h = HANDLE.load(core::sync::atomic::Ordering::Relaxed);
    if h != usize::MAX {
        return h;
    }
    let name = b":tt\0";
    // Mode 4 is "w"; the length excludes the NUL.
    let block = [name.as_ptr() as usize, 4, name.len() - 1];
    // SAFETY: (1) SYS_OPEN takes a 3-word block: a NUL-terminated name, the mode and the
    // name's length; (2) `block` and `name` outlive the call.
    let h = unsafe { call(SYS_OPEN, block.as_ptr() as usize) };
    HANDLE.store(h, core::sync::atomic::Ordering::Relaxed);
    h
}

/// Writes `bytes` to the host's stdout.
pub fn write(bytes: &[u8]) {
    let block = [stdout(), bytes.as_ptr() as usize, bytes.len()];
    // SAFETY: (1) SYS_WRITE takes a 3-word block: a handle, a buffer and its length; (2) the
    // buffer and the block outlive the call.
    unsafe {
        call(SYS_WRITE, block.as_ptr() as usize);
    }
}

/// Ends the program: qemu exits with `code`.
pub fn exit(code: u32) -> ! {
    let block = [APPLICATION_EXIT, code as usize];
    // SAFETY: SYS_EXIT_EXTENDED takes a 2-word block (reason, status) that outlives the call.
    unsafe {
        call(SYS_EXIT_EXTENDED, block.as_ptr() as usize);
    }
    // Not reached under qemu; a debugger that ignores the call parks here.
    loop {
        core::hint::spin_loop();
    }
}

/// `core::fmt` onto the host's stdout.
pub struct Stdout;

impl fmt::Write for Stdout {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        write(s.as_bytes());
        Ok(())
    }
}

/// `println!` onto the host's stdout.
#[macro_export]
macro_rules! println {
    ($($arg:tt)*) => {{
        use core::fmt::Write as _;
        let _ = writeln!($crate::semihosting::Stdout, $($arg)*);
    }};
}
