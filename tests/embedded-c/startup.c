/* Startup code for QEMU's mps2-an386 (Cortex-M4F): the vector table, and a reset handler that
 * enables the FPU (the Rust library and this firmware use the hard-float ABI), zeroes .bss,
 * opens newlib's semihosting stdio (librdimon) and calls main. Built with -nostartfiles: the
 * C library's crt0 is not used. */
#include <stdint.h>
#include <stdlib.h>

extern uint32_t __stack_top;
extern uint32_t __bss_start__;
extern uint32_t __bss_end__;

int main(void);
/* librdimon: sets up stdin/stdout/stderr over semihosting. */
extern void initialise_monitor_handles(void);

void Reset_Handler(void);
void Fault_Handler(void);

/* Coprocessor Access Control Register: CP10 and CP11 (the FPU) at bits 20..23. */
#define SCB_CPACR (*(volatile uint32_t *)0xE000ED88u)

void Reset_Handler(void) {
    SCB_CPACR |= 0xFu << 20;
    __asm volatile("dsb\n\tisb" ::: "memory");
    for (uint32_t *p = &__bss_start__; p < &__bss_end__; p++) {
        *p = 0;
    }
    initialise_monitor_handles();
    exit(main());
}

/* crti.o's hooks, which -nostartfiles leaves out and newlib's exit path may reference
 * (__libc_fini_array calls _fini). Nothing to run. */
void _init(void);
void _fini(void);
void _init(void) {}
void _fini(void) {}

/* Any fault ends the run with a distinct exit status (semihosting SYS_EXIT). */
void Fault_Handler(void) {
    _Exit(3);
}

/* Initial stack pointer, then the handlers: reset, NMI, HardFault, MemManage, BusFault,
 * UsageFault; the rest of the table is unused (no interrupts are enabled). */
__attribute__((section(".vectors"), used)) static void (*const vectors[16])(void) = {
    (void (*)(void))(&__stack_top),
    Reset_Handler,
    Fault_Handler,
    Fault_Handler,
    Fault_Handler,
    Fault_Handler,
    Fault_Handler,
};
