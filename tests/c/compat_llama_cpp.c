/* Replays llama.cpp's llguidance sampler (src/llama-grammar + common/llguidance.cpp) against
 * sieve's LLGuidance-compatible layer: a tokenizer from a byte table with 0xFF-marked
 * special tokens and a tokenize callback, llg_new_matcher, then per step in the sampler's
 * order: llg_matcher_get_mask, llg_matcher_compute_mask only when that is NULL (apply to
 * logits), sample, llg_matcher_consume_token (return value ignored, as there);
 * llg_matcher_is_stopped, reset, clone and free. Also covers the
 * matcher calls llama.cpp does not use (rollback, validate, ff tokens, compute_mask_into). */
#include "compat_common.h"

static const char *WORDS[] = {"The", " answer", " is", " ", "42", "ing", "\n"};
#define N_ASCII 95
#define N_WORDS (sizeof WORDS / sizeof WORDS[0])
#define N_TOK (N_ASCII + N_WORDS + 2)

static char ascii_text[N_ASCII][2];
static const char *texts[N_TOK];
static unsigned char specials[N_TOK];
static token_table table = {N_TOK, texts, specials};
static int tokenize_calls = 0;
/* llama.cpp's static tokenizer cache (a global here, so the compiler keeps the store). */
LlgTokenizer *tokenizer_cache;

static size_t tokenize_cb(const void *user_data, const uint8_t *bytes, size_t len, uint32_t *out,
                          size_t cap) {
    CHECK(user_data == &table);
    tokenize_calls++;
    return greedy_tokenize((const token_table *)user_data, bytes, len, out, cap);
}

/* llama_sampler_llg_apply, in its order: the saved mask first, computed only when it is
 * NULL. A mask that stayed valid after consume/rollback/reset would be applied forever. */
static const uint32_t *llg_apply(LlgMatcher *m) {
    const uint32_t *mask = llg_matcher_get_mask(m);
    if (mask == NULL) {
        CHECK(llg_matcher_compute_mask(m) == 0);
        mask = llg_matcher_get_mask(m);
    }
    CHECK(mask != NULL);
    return mask;
}

/* Drives the matcher to produce `target`, then EOS, like llama.cpp's sampling loop. */
static void generate(LlgMatcher *m, uint32_t eos, const char *target) {
    size_t at = 0, tlen = strlen(target);
    for (int step = 0; step < 100; step++) {
        const uint32_t *mask = llg_apply(m);
        /* The sampler may apply twice in one step (e.g. resampling): the same mask. */
        CHECK(llg_apply(m) == mask);
        long tok;
        if (at < tlen) {
            tok = pick_token(&table, mask, target + at);
            CHECK(tok >= 0);
            at += strlen(texts[tok]);
        } else {
            CHECK(bit_set(mask, eos));
            tok = (long)eos;
        }
        /* llama_sampler_llg_accept_impl: the return value is ignored there; checked after. */
        (void)llg_matcher_consume_token(m, (uint32_t)tok);
        CHECK(llg_matcher_get_error(m) == NULL);
        CHECK(llg_matcher_get_mask(m) == NULL); /* the next apply computes afresh */
        if (llg_matcher_is_stopped(m)) {
            CHECK(at == tlen);
            CHECK(llg_matcher_get_error(m) == NULL);
            /* A stopped matcher's mask holds only EOS. */
            mask = llg_apply(m);
            size_t words = llg_matcher_get_mask_byte_size(m) / 4;
            for (size_t w = 0; w < words; w++) {
                uint32_t want = (w == eos / 32) ? (1u << (eos % 32)) : 0;
                CHECK(mask[w] == want);
            }
            return;
        }
    }
    CHECK(!"no stop within 100 steps");
}

int main(void) {
    /* llama_sampler_llg_new_tokenizer: every token's piece, specials prefixed by 0xFF. */
    uint8_t bytes[2048];
    uint32_t lens[N_TOK];
    size_t at = 0, id = 0;
    for (int b = 0x20; b < 0x7f; b++, id++) {
        ascii_text[id][0] = (char)b;
        ascii_text[id][1] = 0;
        texts[id] = ascii_text[id];
    }
    for (size_t w = 0; w < N_WORDS; w++) {
        texts[id++] = WORDS[w];
    }
    const uint32_t bos = (uint32_t)id;
    texts[id] = "<|begin_of_text|>";
    specials[id++] = 1;
    const uint32_t eos = (uint32_t)id;
    texts[id] = "<|eot_id|>";
    specials[id++] = 1;
    CHECK(id == N_TOK);
    for (size_t i = 0; i < N_TOK; i++) {
        size_t l = strlen(texts[i]);
        if (specials[i]) {
            bytes[at++] = 0xFF;
        }
        memcpy(bytes + at, texts[i], l);
        at += l;
        lens[i] = (uint32_t)(l + (specials[i] ? 1 : 0));
    }

    LlgTokenizerInit tinit = {
        /* .vocab_size = */ (uint32_t)N_TOK,
        /* .tok_eos = */ eos,
        /* .token_lens = */ lens,
        /* .token_bytes = */ bytes,
        /* .tokenizer_json = */ NULL,
        /* .tokenize_assumes_string = */ true,
        /* .tokenize_fn = */ tokenize_cb,
        /* .use_approximate_greedy_tokenize_fn = */ false,
        /* .tokenize_user_data = */ &table,
        /* .slices = */ NULL,
    };
    char err[1024];
    /* llama_sampler_llg_new_tokenizer keeps its tokenizer in a static cache for the life of
     * the process and never frees it: at exit the handle must read as reachable to a leak
     * checker (it points at the start of its allocation), not as possibly lost. */
    tokenizer_cache = llg_new_tokenizer(&tinit, err, sizeof err);
    LlgTokenizer *tok = tokenizer_cache;
    CHECK(tok != NULL);

    /* The tokenize callback is reachable through llg_tokenize_bytes. */
    uint32_t ids[8];
    size_t n_ids = llg_tokenize_bytes(tok, (const uint8_t *)"The answer", 10, ids, 8);
    CHECK(n_ids == 2 && ids[0] == N_ASCII && ids[1] == N_ASCII + 1 && tokenize_calls == 1);

    /* A bad table: NULL with a message, truncated to the buffer. */
    LlgTokenizerInit bad = tinit;
    bad.tok_eos = 100000;
    char small[8];
    CHECK(llg_new_tokenizer(&bad, small, sizeof small) == NULL);
    CHECK(strlen(small) == sizeof small - 1);
    CHECK(llg_new_tokenizer(&bad, NULL, 0) == NULL);

    /* llama_sampler_init_llg: clone the tokenizer, defaults, new matcher, check error. */
    LlgTokenizer *tok2 = llg_clone_tokenizer(tok);
    CHECK(tok2 != NULL);
    LlgConstraintInit cinit;
    memset(&cinit, 0, sizeof cinit);
    llg_constraint_init_set_defaults(&cinit, tok2);
    CHECK(cinit.tokenizer == tok2 && !cinit.ff_tokens_ok && !cinit.backtrack_ok);
    cinit.log_stderr_level = 0;
    const char *lark = "start: \"The answer is \" NUM\nNUM: /[0-9]+/\n";
    LlgMatcher *m = llg_new_matcher(&cinit, "lark", lark);
    CHECK(m != NULL);
    CHECK(llg_matcher_get_error(m) == NULL && !llg_matcher_is_error(m));
    CHECK(llg_matcher_get_mask(m) == NULL); /* nothing computed yet */
    CHECK(llg_matcher_get_mask_byte_size(m) == ((N_TOK + 31) / 32) * 4);
    /* The tokenizer may go before the matcher. Its handle is gone with it (as in LLGuidance,
     * a clone is its own allocation): later matchers are made from the cached one. */
    llg_free_tokenizer(tok2);
    cinit.tokenizer = tok;

    /* Specials are reachable only when named: BOS is never allowed here. */
    CHECK(llg_matcher_compute_mask(m) == 0);
    CHECK(!bit_set(llg_matcher_get_mask(m), bos) && !bit_set(llg_matcher_get_mask(m), eos));
    CHECK(!llg_matcher_is_accepting(m));

    /* Forced tokens at the start; validate and rollback. */
    uint32_t ff[16];
    int32_t n_ff = llg_matcher_compute_ff_tokens(m, ff, 16);
    CHECK(n_ff >= 1 && ff[0] == N_ASCII); /* "The" */
    uint32_t draft[4] = {N_ASCII, N_ASCII + 1, N_ASCII + 2, N_ASCII + 5 /* "ing" */};
    CHECK(llg_matcher_validate_tokens(m, draft, 4) == 3);
    CHECK(llg_matcher_get_mask(m) != NULL);
    CHECK(llg_matcher_consume_tokens(m, draft, 3) == 0);
    CHECK(llg_matcher_get_mask(m) == NULL); /* consumed: no mask until computed */
    CHECK(llg_matcher_compute_mask(m) == 0 && llg_matcher_get_mask(m) != NULL);
    CHECK(llg_matcher_rollback(m, 2) == 0);
    CHECK(llg_matcher_get_mask(m) == NULL); /* rolled back: likewise */

    /* A caller-buffer mask equals the internal one. */
    size_t nbytes = llg_matcher_get_mask_byte_size(m);
    uint32_t *buf = malloc(nbytes);
    CHECK(buf != NULL);
    CHECK(llg_matcher_compute_mask_into(m, buf, nbytes) == 0);
    CHECK(llg_matcher_get_mask(m) == NULL); /* compute_mask_into does not save one */
    CHECK(llg_matcher_compute_mask(m) == 0);
    CHECK(memcmp(buf, llg_matcher_get_mask(m), nbytes) == 0);
    CHECK(bit_set(buf, N_ASCII + 1)); /* " answer" */
    free(buf);

    /* llama_sampler_llg_reset, then the sampling loop. */
    CHECK(llg_matcher_get_mask(m) != NULL);
    CHECK(llg_matcher_reset(m) == 0);
    CHECK(llg_matcher_get_mask(m) == NULL); /* reset: likewise */
    generate(m, eos, "The answer is 42");

    /* Reset and generate again; clone mid-way (llama_sampler_llg_clone) and finish both. */
    CHECK(llg_matcher_reset(m) == 0);
    CHECK(!llg_matcher_is_stopped(m));
    CHECK(llg_matcher_consume_token(m, N_ASCII) == 0);
    CHECK(llg_matcher_compute_mask(m) == 0);
    LlgMatcher *c = llg_clone_matcher(m);
    CHECK(c != NULL);
    CHECK(llg_matcher_get_mask(c) == NULL); /* a clone computes its own */
    CHECK(llg_matcher_get_mask(m) != NULL);
    generate(m, eos, " answer is 7");
    generate(c, eos, " answer is 12345");

    /* Errors: a rejected token is sticky, its message pointer stable; reset cannot clear
     * it; the stopped flag is forced. */
    LlgMatcher *e = llg_clone_matcher(c);
    CHECK(llg_matcher_consume_token(e, N_ASCII) != 0); /* after EOS */
    const char *msg = llg_matcher_get_error(e);
    CHECK(msg != NULL && llg_matcher_is_error(e) && llg_matcher_is_stopped(e));
    CHECK(llg_matcher_compute_mask(e) == -1);
    CHECK(llg_matcher_reset(e) == -1);
    CHECK(llg_matcher_get_error(e) == msg);
    llg_free_matcher(e);

    LlgMatcher *r = llg_new_matcher(&cinit, "lark", lark);
    CHECK(llg_matcher_consume_token(r, N_ASCII + 5) == -1); /* "ing" first */
    CHECK(llg_matcher_get_error(r) != NULL);
    llg_free_matcher(r);

    r = llg_new_matcher(&cinit, "lark", lark);
    CHECK(llg_matcher_consume_token(r, N_TOK + 5) == -1); /* out of range */
    llg_free_matcher(r);

    r = llg_new_matcher(&cinit, "regex", "[0-9]+");
    CHECK(llg_matcher_compute_mask_into(r, ff, 3) == -1); /* wrong size */
    CHECK(llg_matcher_is_error(r));
    llg_free_matcher(r);

    /* A grammar that does not compile: never NULL, error set. */
    r = llg_new_matcher(&cinit, "lark", "start: undefined_rule\n");
    CHECK(r != NULL && llg_matcher_get_error(r) != NULL);
    CHECK(llg_matcher_compute_mask(r) == -1 && llg_matcher_get_mask(r) == NULL);
    llg_free_matcher(r);
    r = llg_new_matcher(&cinit, "cobol", "x");
    CHECK(r != NULL && llg_matcher_get_error(r) != NULL);
    llg_free_matcher(r);
    CHECK(llg_validate_grammar(&cinit, "regex", "(", err, sizeof err) == -1 && err[0] != 0);
    CHECK(llg_validate_grammar(&cinit, "lark", lark, err, sizeof err) == 0 && err[0] == 0);

    /* Other grammar types through llg_new_matcher. */
    r = llg_new_matcher(&cinit, "json", "{\"type\":\"integer\"}");
    CHECK(llg_matcher_get_error(r) == NULL);
    generate(r, eos, "42");
    llg_free_matcher(r);
    r = llg_new_matcher(&cinit, "llguidance",
                        "{\"grammars\":[{\"lark_grammar\":\"start: \\\"The\\\"\"}]}");
    CHECK(llg_matcher_get_error(r) == NULL);
    generate(r, eos, "The");
    llg_free_matcher(r);

    /* llama.cpp sends a grammar that starts with `%llguidance` to this sampler as "lark".
     * A lazy tool call inside free text (LLGuidance's documented idiom): text until "<f",
     * then the call's syntax is enforced, then free text again. */
    const char *lazy = "%llguidance {}\n"
                       "start: f_call* f_end\n"
                       "f_end: TEXT\n"
                       "TEXT: /(.|\\n)*/\n"
                       "f_call_hd[lazy]: TEXT \"<f\"\n"
                       "f_call: f_call_hd \"=\" /[0-9]+/ \">\"\n";
    r = llg_new_matcher(&cinit, "lark", lazy);
    CHECK(llg_matcher_get_error(r) == NULL);
    generate(r, eos, "The answer is <f=42>The\n<f=7>ing");
    CHECK(llg_matcher_reset(r) == 0);
    /* Inside a call only its syntax is allowed: after "<f" the only text is "=" (EOS stays
     * allowed: the whole output so far is also one TEXT). */
    CHECK(llg_matcher_consume_token(r, N_ASCII) == 0); /* "The" */
    CHECK(llg_matcher_consume_token(r, '<' - 0x20) == 0);
    CHECK(llg_matcher_consume_token(r, 'f' - 0x20) == 0);
    const uint32_t *lm = llg_apply(r);
    for (uint32_t t = 0; t < N_TOK; t++) {
        CHECK(t == eos || bit_set(lm, t) == (t == '=' - 0x20));
    }
    llg_free_matcher(r);

    /* NULL handles are safe. */
    llg_free_matcher(NULL);
    llg_free_tokenizer(NULL);
    CHECK(llg_matcher_compute_mask(NULL) == -1);
    CHECK(llg_matcher_is_stopped(NULL));

    llg_free_matcher(c);
    llg_free_matcher(m);
    /* tokenizer_cache is not freed, as in llama.cpp. */
    printf("compat_llama_cpp: ok\n");
    return 0;
}
