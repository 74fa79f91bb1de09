// The sieve C++ API end to end: a tokenizer from a byte table, a Lark grammar, and a
// greedy decoding loop (compute_mask -> pick the longest allowed token -> consume_token)
// that prints the generated text. Then the error model: a rejected token (sticky until
// reset) and a grammar that does not compile, both as rust::Error exceptions. Last, a stop
// controller: text held back while it may begin the stop string "END", the match never
// shown, a clone branching the sequence, and a stop regex that is rejected. Also the same
// kind of grammar in GBNF (llama.cpp's format), by syntax name and through grammar_from_gbnf.
// Then the mask kernels: a mask applied to a batch of logit rows and to a sparse candidate
// list, checked against the mask bits. Last, a batch of masks on the library's thread pool
// (compute_masks), checked against the masks computed one by one, and shutdown_threads, which
// joins the pool's threads before the program exits. The tool-call part also compiles its tag
// twice through the tokenizer's compile cache.
//
// Built by build.rs with cxx_build; `sieve_cxx_demo_main` is the program (examples/demo.rs
// only calls it). Prints "demo ok" and returns 0 on success.

#include <cmath>
#include <cstdint>
#include <exception>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "rust/cxx.h"
#include "sieve-ffi-cxx/src/lib.rs.h"

namespace {

const char *const kGrammar = R"(
start: greeting " " name "!"
greeting: "hello" | "hi"
name: "world" | "sieve"
)";

// Printable ASCII, a few words, then the special EOS token "<|eos|>" (the last id).
rust::Box<sieve::Tokenizer> small_tokenizer() {
    std::vector<std::string> tokens;
    for (char c = 0x20; c < 0x7f; ++c) {
        tokens.emplace_back(1, c);
    }
    for (const char *w : {"hello", "hi", " world", " sieve", "<|eos|>"}) {
        tokens.emplace_back(w);
    }
    std::vector<uint8_t> bytes;
    std::vector<uint32_t> lens;
    for (const std::string &t : tokens) {
        bytes.insert(bytes.end(), t.begin(), t.end());
        lens.push_back(static_cast<uint32_t>(t.size()));
    }
    const uint32_t eos[] = {static_cast<uint32_t>(tokens.size() - 1)};
    return sieve::tokenizer_from_byte_table(
        rust::Slice<const uint8_t>(bytes.data(), bytes.size()),
        rust::Slice<const uint32_t>(lens.data(), lens.size()),
        rust::Slice<const uint32_t>(eos, 1), rust::Slice<const uint32_t>(eos, 1));
}

bool allowed(const std::vector<uint32_t> &mask, uint32_t id) {
    return (mask[id / 32] >> (id % 32)) & 1u;
}

// Greedy decoding: the longest allowed non-EOS token (lowest id on ties); EOS once nothing
// else is allowed. Returns the text.
std::string generate(const sieve::Tokenizer &tok, sieve::Matcher &m) {
    const uint32_t eos = tok.eos_tokens()[0];
    const uint32_t n = static_cast<uint32_t>(tok.vocab_size());
    std::vector<uint32_t> mask(m.mask_words());
    std::string out;
    for (int step = 0; step < 64 && !m.is_stopped(); ++step) {
        m.compute_mask(rust::Slice<uint32_t>(mask.data(), mask.size()));
        uint32_t best = eos;
        size_t best_len = 0;
        for (uint32_t id = 0; id < n; ++id) {
            if (id == eos || !allowed(mask, id)) {
                continue;
            }
            size_t len = tok.token_text(id).size();
            if (len > best_len) {
                best = id;
                best_len = len;
            }
        }
        if (best == eos && !allowed(mask, eos)) {
            throw std::runtime_error("no token allowed");
        }
        m.consume_token(best);
        if (best != eos) {
            rust::Vec<uint8_t> text = tok.token_text(best);
            out.append(text.begin(), text.end());
        }
    }
    return out;
}

void check(bool ok, const char *what) {
    if (!ok) {
        throw std::runtime_error(std::string("check failed: ") + what);
    }
}

// Commits `text` one printable-ASCII token at a time (id = byte - 0x20) and returns the text
// the controller showed; `stopped` says whether the last commit reported a stop.
std::string commit_chars(sieve::StopController &sc, const std::string &text, bool &stopped) {
    std::string shown;
    for (char c : text) {
        sieve::StopCommit r = sc.commit_token(static_cast<uint32_t>(c - 0x20));
        shown.append(r.text.begin(), r.text.end());
        stopped = r.stopped;
    }
    return shown;
}

void stop_controller_demo(const sieve::Tokenizer &tok) {
    const uint32_t eos = tok.eos_tokens()[0];
    rust::Box<sieve::StopController> sc =
        sieve::stop_controller_new(tok, rust::Slice<const uint32_t>(&eos, 1), "END");
    bool stopped = false;
    std::string shown = commit_chars(*sc, "hi E", stopped);
    check(shown == "hi " && !stopped, "\"E\" may begin \"END\": held back");
    rust::Box<sieve::StopController> branch = sc->clone();
    shown += commit_chars(*sc, "ND and more", stopped);
    check(shown == "hi " && stopped && sc->is_stopped(), "\"END\" stops and is never shown");
    std::cout << "stop: shown=[" << shown << "] stopped=" << sc->is_stopped() << "\n";

    // The clone still holds "E": "x" releases it; the stop token releases nothing more.
    std::string branch_shown = commit_chars(*branch, "x", stopped);
    sieve::StopCommit last = branch->commit_token(eos);
    check(branch_shown == "Ex" && !stopped && last.text.empty() && last.stopped,
          "the clone is independent");
    std::cout << "stop branch: shown=[" << branch_shown << "] stopped=" << last.stopped << "\n";

    try {
        sieve::stop_controller_new(tok, rust::Slice<const uint32_t>(), "x*");
        std::cout << "error: a stop regex matching the empty string did not throw\n";
        throw std::runtime_error("no exception");
    } catch (const rust::Error &e) {
        std::cout << "bad stop regex: "
                  << std::string(sieve::error_code_name(sieve::error_code_of(e.what()))) << "\n";
    }
}

// Budget mode: with a budget of completion_tokens() tokens, a generation that picks the
// first allowed token of compute_mask_within every step ends accepting.
void budget_demo(const sieve::Tokenizer &tok, const sieve::Grammar &grammar) {
    rust::Box<sieve::Matcher> m = sieve::matcher_new(grammar);
    sieve::Completion c = m->shortest_completion();
    std::string shortest(c.bytes.begin(), c.bytes.end());
    sieve::TokenCount n = m->completion_tokens();
    check(c.found && n.found, "a completion exists");
    const uint32_t eos = tok.eos_tokens()[0];
    std::vector<uint32_t> mask(m->mask_words());
    std::string text;
    for (size_t left = n.tokens; left > 0; --left) {
        m->compute_mask_within(left, rust::Slice<uint32_t>(mask.data(), mask.size()));
        uint32_t pick = eos;
        for (uint32_t id = 0; id < eos; ++id) {
            if (allowed(mask, id)) {
                pick = id;
                break;
            }
        }
        check(pick != eos || allowed(mask, eos), "the budget mask is never empty");
        if (pick == eos) {
            break;
        }
        m->consume_token(pick);
        rust::Vec<uint8_t> t = tok.token_text(pick);
        text.append(t.begin(), t.end());
    }
    check(m->is_accepting(), "accepting within the budget");
    std::cout << "budget: shortest=[" << shortest << "] tokens=" << n.tokens << " text=[" << text
              << "]\n";
}

// A tool call in free text: a structural tag whose grammar applies from the trigger "<f="
// on, the same through a lazy gate over a Lark grammar, and a stop string.
void tools_demo(const sieve::Tokenizer &tok) {
    const char *tag = R"({"type":"structural_tag","format":{"type":"triggered_tags",
      "triggers":["<f="],"tags":[{"type":"tag","begin":"<f=add>","end":"</f>",
      "content":{"type":"json_schema","json_schema":{"type":"object",
        "properties":{"a":{"type":"integer"}},"required":["a"]}}}]}})";
    rust::Box<sieve::Grammar> g = sieve::grammar_from_structural_tag(tok, tag);
    rust::Box<sieve::Matcher> m = sieve::matcher_new(*g);
    const std::string text = "ok <f=add>{\"a\":1}</f>";
    for (char c : text) {
        m->consume_token(static_cast<uint32_t>(c - 0x20));
    }
    std::cout << "structural: accepting=" << m->is_accepting() << "\n";

    // The compile cache: the same tag again is a hit (agents send their tool list each turn).
    tok.set_compile_cache(16u << 20);
    rust::Box<sieve::Grammar> first = sieve::grammar_from_structural_tag(tok, tag);
    rust::Box<sieve::Grammar> again = sieve::grammar_from_structural_tag(tok, tag);
    const sieve::CompileCacheStats st = tok.compile_cache_stats();
    check(st.hits == 1 && st.misses == 1 && st.entries == 1 && st.bytes <= st.max_bytes,
          "compile cache hit");
    std::cout << "compile cache: hits=" << st.hits << " misses=" << st.misses << "\n";
    tok.set_compile_cache(0);

    rust::Box<sieve::Grammar> lark = sieve::grammar_from_lark(tok, "start: \"<f>\" /[0-9]+/");
    rust::Vec<rust::String> triggers;
    triggers.push_back("<f>");
    rust::Vec<rust::String> none;
    rust::Box<sieve::Gate> gate = sieve::gate_new(tok, false, rust::Slice<const uint32_t>(), -1,
                                                  true, triggers, rust::Slice<const uint32_t>(),
                                                  none);
    rust::Box<sieve::Matcher> lazy = sieve::matcher_new_gated(*lark, *gate);
    const bool before = lazy->is_unconstrained();
    for (char c : std::string("hi <f>")) {
        lazy->consume_token(static_cast<uint32_t>(c - 0x20));
    }
    std::cout << "gate: unconstrained before=" << before
              << " after=" << lazy->is_unconstrained() << "\n";

    rust::Vec<rust::String> stops;
    stops.push_back("END");
    rust::Box<sieve::StopController> sc = sieve::stop_controller_with_strings(
        tok, rust::Slice<const uint32_t>(), stops, "");
    std::string shown;
    bool stopped = false;
    for (char c : std::string("hi END")) {
        sieve::StopCommit r = sc->commit_token(static_cast<uint32_t>(c - 0x20));
        shown.append(r.text.begin(), r.text.end());
        stopped = r.stopped;
    }
    std::cout << "stop strings: shown=[" << shown << "] stopped=" << stopped << "\n";
}

// GBNF: by syntax name (any syntax works the same way: "lark", "json_schema", "regex", ...)
// and with its options (start rule, left recursion).
void gbnf_demo(const sieve::Tokenizer &tok) {
    try {
        rust::Box<sieve::Grammar> g =
            sieve::grammar_new(tok, "gbnf", "root ::= \"<f>\" [0-9]+\n");
        rust::Box<sieve::Matcher> m = sieve::matcher_new(*g);
        for (char c : std::string("<f>42")) {
            m->consume_token(static_cast<uint32_t>(c - 0x20));
        }
        rust::Box<sieve::Grammar> list =
            sieve::grammar_from_gbnf(tok, "list ::= list \",\" [0-9] | [0-9]\n", "list", true);
        rust::Box<sieve::Matcher> l = sieve::matcher_new(*list);
        for (char c : std::string("1,2")) {
            l->consume_token(static_cast<uint32_t>(c - 0x20));
        }
        std::cout << "gbnf: accepting=" << m->is_accepting() << " left-recursive=" << l->is_accepting()
                  << "\n";
    } catch (const rust::Error &e) {
        std::cout << "gbnf: " << e.what() << "\n";
    }
}

// The mask kernels on a real mask: a batch of two rows (the mask and an all-allowed row),
// and a sparse candidate list with one id past the vocabulary; every logit is checked.
bool kernels_demo(const sieve::Tokenizer &tok, const sieve::Grammar &grammar) {
    rust::Box<sieve::Matcher> m = sieve::matcher_new(grammar);
    const size_t words = m->mask_words();
    const size_t n = tok.vocab_size();
    std::vector<uint32_t> masks(2 * words, 0xFFFFFFFFu);
    m->compute_mask(rust::Slice<uint32_t>(masks.data(), words));
    std::vector<float> logits(2 * n, 0.5f);
    sieve::apply_mask_f32_batch(rust::Slice<float>(logits.data(), logits.size()), n,
                                rust::Slice<const uint32_t>(masks.data(), masks.size()), words);
    size_t allowed_n = 0;
    for (size_t i = 0; i < n; ++i) {
        const bool ok = allowed(masks, static_cast<uint32_t>(i));
        if (logits[i] != (ok ? 0.5f : -INFINITY) || logits[n + i] != 0.5f) {
            std::cout << "error: batch row mismatch at token " << i << "\n";
            return false;
        }
        allowed_n += ok;
    }
    std::vector<uint32_t> ids;
    for (uint32_t id = 0; id < n; id += 3) {
        ids.push_back(id);
    }
    ids.push_back(static_cast<uint32_t>(n + 100));
    std::vector<float> sparse(ids.size() + 1, 1.0f);
    sieve::apply_mask_sparse_f32(rust::Slice<float>(sparse.data(), sparse.size()),
                                 rust::Slice<const uint32_t>(ids.data(), ids.size()),
                                 rust::Slice<const uint32_t>(masks.data(), words));
    for (size_t i = 0; i < sparse.size(); ++i) {
        const bool ok = i < ids.size() && ids[i] < n && allowed(masks, ids[i]);
        if (sparse[i] != (ok ? 1.0f : -INFINITY)) {
            std::cout << "error: sparse mismatch at candidate " << i << "\n";
            return false;
        }
    }
    std::cout << "kernels: " << std::string(sieve::kernel_name()) << " batch and sparse ok ("
              << allowed_n << " allowed)\n";
    return true;
}

// Matchers at different points of the grammar: their masks in one compute_masks call equal
// the masks computed one by one, on pools of 1 and 3 threads.
bool batch_demo(const sieve::Grammar &grammar) {
    // Token ids: "hello" 95, "hi" 96, " world" 97, " sieve" 98, "!" 1 (see small_tokenizer).
    const std::vector<std::vector<uint32_t>> prefixes = {{}, {95}, {96}, {95, 97}, {96, 98, 1}};
    auto make = [&] {
        std::vector<rust::Box<sieve::Matcher>> ms;
        for (const std::vector<uint32_t> &p : prefixes) {
            ms.push_back(sieve::matcher_new(grammar));
            for (uint32_t t : p) {
                ms.back()->consume_token(t);
            }
        }
        return ms;
    };
    std::vector<rust::Box<sieve::Matcher>> one = make();
    const size_t words = one[0]->mask_words();
    std::vector<uint32_t> want(one.size() * words);
    for (size_t i = 0; i < one.size(); ++i) {
        one[i]->compute_mask(rust::Slice<uint32_t>(want.data() + i * words, words));
    }
    for (size_t threads : {1, 3}) {
        sieve::set_num_threads(threads);
        std::vector<rust::Box<sieve::Matcher>> ms = make();
        std::vector<uint32_t> masks(ms.size() * words, 0xABABABABu);
        std::vector<sieve::ErrorCode> statuses(ms.size(), sieve::ErrorCode::Panic);
        sieve::compute_masks(rust::Slice<rust::Box<sieve::Matcher>>(ms.data(), ms.size()),
                             rust::Slice<uint32_t>(masks.data(), masks.size()), words,
                             rust::Slice<sieve::ErrorCode>(statuses.data(), statuses.size()));
        for (size_t i = 0; i < ms.size(); ++i) {
            if (statuses[i] != sieve::ErrorCode::Ok) {
                std::cout << "error: batch item " << i << " failed\n";
                return false;
            }
        }
        if (masks != want) {
            std::cout << "error: batch masks differ from the one-by-one masks\n";
            return false;
        }
    }
    std::cout << "batch: " << one.size() << " matchers on 1 and " << sieve::num_threads()
              << " threads ok\n";
    return true;
}

int run() {
    std::cout << "version: " << std::string(sieve::version()) << "\n";
    rust::Box<sieve::Tokenizer> tok = small_tokenizer();
    rust::Box<sieve::Grammar> grammar = sieve::grammar_from_lark(*tok, kGrammar);
    rust::Box<sieve::Matcher> m = sieve::matcher_new(*grammar);

    std::string text = generate(*tok, *m);
    std::cout << "generated: " << text << "\n";
    std::cout << "stopped: " << m->is_stopped() << "\n";

    m->rollback(1);  // undo EOS
    std::cout << "after rollback: stopped=" << m->is_stopped()
              << " accepting=" << m->is_accepting() << "\n";

    try {
        m->consume_token(0);  // " " is not allowed after "!"
        std::cout << "error: a rejected token did not throw\n";
        return 1;
    } catch (const rust::Error &e) {
        std::cout << "rejected: " << std::string(sieve::error_code_name(sieve::error_code_of(e.what())))
                  << " (sticky: " << std::string(sieve::error_code_name(m->error_code())) << ")\n";
    }
    m->reset();
    std::cout << "after reset: " << std::string(sieve::error_code_name(m->error_code())) << "\n";

    try {
        sieve::grammar_from_lark(*tok, "start: (");
        std::cout << "error: a bad grammar did not throw\n";
        return 1;
    } catch (const rust::Error &e) {
        std::cout << "bad grammar: "
                  << std::string(sieve::error_code_name(sieve::error_code_of(e.what()))) << "\n";
    }
    stop_controller_demo(*tok);
    budget_demo(*tok, *grammar);
    tools_demo(*tok);
    gbnf_demo(*tok);
    if (!kernels_demo(*tok, *grammar)) {
        return 1;
    }
    if (!batch_demo(*grammar)) {
        return 1;
    }
    // No library thread is left running after this (the demo runs under valgrind).
    sieve::shutdown_threads();
    std::cout << "demo ok\n";
    return 0;
}

}  // namespace

extern "C" int sieve_cxx_demo_main() {
    try {
        return run();
    } catch (const std::exception &e) {
        std::cout << "error: " << e.what() << "\n";
        return 1;
    } catch (...) {
        std::cout << "error: unknown exception\n";
        return 1;
    }
}
