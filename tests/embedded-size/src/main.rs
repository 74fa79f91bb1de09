//! The smallest useful sieve firmware: compile a Lark grammar and a regex over a tiny vocabulary,
//! compute a mask, consume a token. Built per feature configuration by `size-table.sh`, which
//! reports the sizes of `.text`, `.rodata` and `.data`. With the `json-schema` feature the
//! grammar also embeds a JSON Schema (`%json`), so that configuration measures the compiler.
#![no_std]
#![no_main]

extern crate alloc;

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::mem::MaybeUninit;
use cortex_m_rt::entry;
use embedded_alloc::LlffHeap as Heap;
use sieve_core::{Grammar, Limits, Matcher, Vocabulary};

#[global_allocator]
static HEAP: Heap = Heap::empty();

#[cfg(not(feature = "json-schema"))]
const LARK: &str = r#"
start: "{" item ("," item)* "}"
item: KEY ":" NUMBER
KEY: /[a-z]+/
NUMBER: /-?[0-9]+/
"#;

#[cfg(feature = "json-schema")]
const LARK: &str = r#"
start: "{" item ("," item)* "}" | obj
obj: %json { "type": "object", "properties": { "a": { "type": "integer" } } }
item: KEY ":" NUMBER
KEY: /[a-z]+/
NUMBER: /-?[0-9]+/
"#;

fn run() -> Option<u32> {
    let tokens: Vec<Vec<u8>> = [
        "{", "}", ",", ":", "a", "b", "ab", "1", "2", "12", "-", "<eos>",
    ]
    .iter()
    .map(|t| t.as_bytes().to_vec())
    .collect();
    let vocab = Arc::new(Vocabulary::new(tokens, &[11], &[11]).ok()?);
    let limits = Limits::default();
    let lark = Grammar::from_lark(LARK, &vocab, &limits).ok()?;
    let regex = Grammar::from_regex("[a-b]+[0-9]", &vocab, &limits).ok()?;
    let mut mask = [0u32; 1];
    let mut acc = 0;
    for g in [&lark, &regex] {
        let mut m = Matcher::new(g);
        m.compute_mask(&mut mask).ok()?;
        acc ^= mask[0];
        m.consume_token(mask[0].trailing_zeros()).ok()?;
        m.compute_mask(&mut mask).ok()?;
        acc ^= mask[0];
    }
    Some(acc)
}

#[entry]
fn main() -> ! {
    const HEAP_SIZE: usize = 192 * 1024;
    static mut HEAP_MEM: [MaybeUninit<u8>; HEAP_SIZE] = [MaybeUninit::uninit(); HEAP_SIZE];
    // SAFETY: 1. `main` runs once, before any allocation; 2. HEAP_MEM is used only here.
    unsafe { HEAP.init(&raw mut HEAP_MEM as usize, HEAP_SIZE) }
    let r = run();
    // Keep the result observable so nothing is optimised away.
    core::hint::black_box(r);
    loop {
        cortex_m::asm::wfi();
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    cortex_m::asm::udf()
}
