//! Start-up on bare AArch64 (qemu `-M virt`, entered at EL1 with the MMU off): set the stack,
//! enable FP/SIMD (the `aarch64-unknown-none` target uses NEON registers), zero `.bss`,
//! install a vector table whose every entry reports and exits, then call [`crate::run`].
//! Symbols come from `aarch64.ld`.

core::arch::global_asm!(
    r#"
    .section .text.boot, "ax"
    .global _start
_start:
    adrp x0, _stack_start
    add  x0, x0, :lo12:_stack_start
    mov  sp, x0
    mov  x0, #(3 << 20)
    msr  cpacr_el1, x0
    isb
    adrp x0, __sbss
    add  x0, x0, :lo12:__sbss
    adrp x1, __ebss
    add  x1, x1, :lo12:__ebss
1:  cmp  x0, x1
    b.hs 2f
    str  xzr, [x0], #8
    b    1b
2:  adrp x0, vectors
    add  x0, x0, :lo12:vectors
    msr  vbar_el1, x0
    isb
    bl   rust_start
3:  wfe
    b    3b

    .section .text.vectors, "ax"
    .balign 2048
vectors:
    .rept 16
    .balign 128
    mrs  x0, esr_el1
    mrs  x1, elr_el1
    b    rust_exception
    .endr
"#
);

#[unsafe(no_mangle)]
extern "C" fn rust_start() -> ! {
    crate::semihosting::exit(crate::run())
}

#[unsafe(no_mangle)]
extern "C" fn rust_exception(esr: u64, elr: u64) -> ! {
    crate::println!("FAIL: exception, ESR_EL1 {esr:#x} at {elr:#x}");
    crate::semihosting::exit(3)
}
