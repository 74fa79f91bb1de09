/* A C firmware that uses sieve's no_std C API on a Cortex-M4F (QEMU mps2-an386), linked
 * against the Rust staticlib built for thumbv7em-none-eabihf (see run.sh and README.md).
 *
 * A 13-token vocabulary; a Lark grammar, a regex and a JSON Schema compiled on the target;
 * masks checked against the expected allowed sets at every step; a greedy generation that
 * applies each mask to a logits array with sieve_apply_mask_f32 (and f16) and picks the
 * argmax; the batch calls (sequential without std, and through a host executor). Output goes
 * over semihosting; the exit status (semihosting SYS_EXIT) is 0 when every check passed. */
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sieve.h"

#define CHECK(cond)                                                                       \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            printf("%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

#define CHECK_OK(call)                                                                    \
    do {                                                                                  \
        sieve_status got_ = (call);                                                       \
        if (got_ != SIEVE_STATUS_OK) {                                                    \
            printf("%s:%d: %s returned %s\n", __FILE__, __LINE__, #call,                  \
                   sieve_status_name(got_));                                              \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

/* The vocabulary: token i is WORDS[i]; token 0 is the special end-of-sequence token. */
static const char *const WORDS[] = {
    "</s>", "{", "}", "0", "1", "12", "{1", "1}", "x", "true", "false", "t", "rue",
};
#define N_TOKENS (sizeof WORDS / sizeof WORDS[0])
#define EOS 0u
#define MASK_WORDS ((N_TOKENS + 31) / 32)

static const sieve_tokenizer *new_tokenizer(void) {
    uint8_t bytes[64];
    uint32_t lens[N_TOKENS];
    uint8_t special[N_TOKENS] = {0};
    size_t at = 0;
    for (size_t i = 0; i < N_TOKENS; i++) {
        size_t n = strlen(WORDS[i]);
        CHECK(at + n <= sizeof bytes);
        memcpy(bytes + at, WORDS[i], n);
        lens[i] = (uint32_t)n;
        at += n;
    }
    special[EOS] = 1;
    const uint32_t eos = EOS;
    const sieve_tokenizer *tok = NULL;
    sieve_error *err = NULL;
    sieve_status s =
        sieve_tokenizer_new(bytes, at, lens, N_TOKENS, special, &eos, 1, NULL, NULL, &tok, &err);
    if (s != SIEVE_STATUS_OK) {
        printf("sieve_tokenizer_new: %s\n", err != NULL ? sieve_error_message(err) : "?");
        exit(1);
    }
    CHECK(sieve_tokenizer_vocab_size(tok) == N_TOKENS);
    return tok;
}

static const sieve_grammar *compile(const sieve_tokenizer *tok, uint32_t kind, const char *src) {
    const sieve_grammar *g = NULL;
    sieve_error *err = NULL;
    sieve_status s =
        sieve_grammar_new(tok, kind, (const uint8_t *)src, strlen(src), NULL, &g, &err);
    if (s != SIEVE_STATUS_OK) {
        printf("grammar error %s at %u:%u: %s\n", sieve_status_name(s),
               (unsigned)sieve_error_line(err), (unsigned)sieve_error_column(err),
               sieve_error_message(err));
        exit(1);
    }
    return g;
}

static int bit(const uint32_t *mask, uint32_t t) {
    return (mask[t / 32] >> (t % 32)) & 1u;
}

/* Prints the allowed tokens of `mask` as `{"a" "b"}`. */
static void print_mask(const char *label, const uint32_t *mask) {
    printf("%s: {", label);
    const char *sep = "";
    for (uint32_t t = 0; t < N_TOKENS; t++) {
        if (bit(mask, t)) {
            printf("%s\"%s\"", sep, WORDS[t]);
            sep = " ";
        }
    }
    printf("}\n");
}

/* Checks that `mask` allows exactly the `n` tokens of `want`. */
static void expect_mask(const uint32_t *mask, const uint32_t *want, size_t n) {
    uint32_t expected[MASK_WORDS] = {0};
    for (size_t i = 0; i < n; i++) {
        expected[want[i] / 32] |= 1u << (want[i] % 32);
    }
    for (size_t w = 0; w < MASK_WORDS; w++) {
        if (mask[w] != expected[w]) {
            print_mask("  got", mask);
            print_mask("  expected", expected);
            CHECK(mask[w] == expected[w]);
        }
    }
}

/* One step: compute the mask, check it, apply it to logits[i] = i (so the argmax is the
 * highest allowed id), check the masked logits, and return the argmax. */
static uint32_t step(sieve_matcher *m, const char *label, const uint32_t *want, size_t n) {
    uint32_t mask[MASK_WORDS];
    CHECK(sieve_matcher_mask_words(m) == MASK_WORDS);
    CHECK_OK(sieve_matcher_compute_mask(m, mask, MASK_WORDS));
    print_mask(label, mask);
    expect_mask(mask, want, n);

    float logits[N_TOKENS];
    uint16_t half[N_TOKENS];
    for (uint32_t t = 0; t < N_TOKENS; t++) {
        logits[t] = (float)t;
        half[t] = 0x3C00; /* 1.0 */
    }
    CHECK_OK(sieve_apply_mask_f32(logits, N_TOKENS, mask, MASK_WORDS));
    CHECK_OK(sieve_apply_mask_f16(half, N_TOKENS, mask, MASK_WORDS));
    uint32_t best = 0;
    for (uint32_t t = 0; t < N_TOKENS; t++) {
        CHECK(bit(mask, t) ? logits[t] == (float)t : isinf(logits[t]) && logits[t] < 0);
        CHECK(half[t] == (bit(mask, t) ? 0x3C00 : 0xFC00));
        if (logits[t] > logits[best]) {
            best = t;
        }
    }
    CHECK(bit(mask, best));
    return best;
}

/* Lark: a number in braces, generated greedily. */
static void lark(const sieve_tokenizer *tok) {
    const sieve_grammar *g =
        compile(tok, SIEVE_GRAMMAR_KIND_LARK, "start: \"{\" NUMBER \"}\"\nNUMBER: /[1-9][0-9]*/\n");
    sieve_matcher *m = NULL;
    CHECK_OK(sieve_matcher_new(g, &m));
    char text[32] = "";
    static const uint32_t want0[] = {1, 6};          /* "{" "{1" */
    static const uint32_t want1[] = {2, 3, 4, 5, 7}; /* "}" "0" "1" "12" "1}" */
    static const uint32_t want2[] = {EOS};
    uint32_t t = step(m, "lark step 0", want0, 2);
    CHECK(t == 6);
    strcat(text, WORDS[t]);
    CHECK_OK(sieve_matcher_consume_token(m, t));
    t = step(m, "lark step 1", want1, 5);
    CHECK(t == 7);
    strcat(text, WORDS[t]);
    CHECK_OK(sieve_matcher_consume_token(m, t));
    CHECK(sieve_matcher_is_accepting(m));
    t = step(m, "lark step 2", want2, 1);
    CHECK(t == EOS);
    CHECK_OK(sieve_matcher_consume_token(m, t));
    CHECK(sieve_matcher_is_stopped(m));
    printf("lark: generated \"%s\"\n", text);
    CHECK(strcmp(text, "{11}") == 0);
    /* A rejected token puts the matcher in error (sticky). */
    CHECK_OK(sieve_matcher_reset(m));
    CHECK(sieve_matcher_consume_token(m, 8) == SIEVE_STATUS_TOKEN_REJECTED);
    CHECK(sieve_matcher_error_status(m) == SIEVE_STATUS_TOKEN_REJECTED);
    sieve_matcher_free(m);
    sieve_grammar_free(g);
}

/* A regex: one or more "1". */
static void regex(const sieve_tokenizer *tok) {
    const sieve_grammar *g = compile(tok, SIEVE_GRAMMAR_KIND_REGEX, "1+");
    sieve_matcher *m = NULL;
    CHECK_OK(sieve_matcher_new(g, &m));
    static const uint32_t want0[] = {4};
    static const uint32_t want1[] = {EOS, 4};
    CHECK(step(m, "regex step 0", want0, 1) == 4);
    CHECK_OK(sieve_matcher_consume_token(m, 4));
    CHECK(step(m, "regex step 1", want1, 2) == 4);
    CHECK_OK(sieve_matcher_consume_token(m, 4));
    CHECK_OK(sieve_matcher_consume_token(m, EOS));
    CHECK(sieve_matcher_is_stopped(m));
    sieve_matcher_free(m);
    sieve_grammar_free(g);
}

/* A JSON Schema (serde_json and the schema compiler run on the target too). */
static void json_schema(const sieve_tokenizer *tok) {
    const sieve_grammar *g =
        compile(tok, SIEVE_GRAMMAR_KIND_JSON_SCHEMA, "{\"type\": \"boolean\"}");
    sieve_matcher *m = NULL;
    CHECK_OK(sieve_matcher_new(g, &m));
    uint32_t mask[MASK_WORDS];
    CHECK_OK(sieve_matcher_compute_mask(m, mask, MASK_WORDS));
    print_mask("json step 0", mask);
    CHECK(bit(mask, 9) && bit(mask, 10) && bit(mask, 11)); /* "true" "false" "t" */
    CHECK(!bit(mask, EOS) && !bit(mask, 1) && !bit(mask, 8) && !bit(mask, 12));
    CHECK_OK(sieve_matcher_consume_token(m, 11));
    static const uint32_t want1[] = {12}; /* "rue" */
    CHECK(step(m, "json step 1", want1, 1) == 12);
    CHECK_OK(sieve_matcher_consume_token(m, 12));
    static const uint32_t want2[] = {EOS};
    CHECK(step(m, "json step 2", want2, 1) == EOS);
    sieve_matcher_free(m);
    sieve_grammar_free(g);
}

/* A host executor that runs the items one after the other (an RTOS would post them to its
 * worker tasks and wait for them). */
static void run_inline(void *ctx, size_t n, sieve_run_item_fn run_item, void *job) {
    size_t *calls = ctx;
    for (size_t i = 0; i < n; i++) {
        run_item(job, i);
        (*calls)++;
    }
}

/* The batch calls: without std, sieve_compute_masks runs on the calling thread. */
static void batch(const sieve_tokenizer *tok) {
    const sieve_grammar *g = compile(tok, SIEVE_GRAMMAR_KIND_REGEX, "(12|x)}");
    sieve_matcher *ms[3] = {NULL, NULL, NULL};
    for (size_t i = 0; i < 3; i++) {
        CHECK_OK(sieve_matcher_new(g, &ms[i]));
    }
    CHECK_OK(sieve_matcher_consume_token(ms[1], 5));
    CHECK_OK(sieve_matcher_consume_token(ms[2], 8));
    uint32_t masks[3 * MASK_WORDS];
    uint32_t statuses[3];
    CHECK_OK(sieve_compute_masks(ms, 3, masks, MASK_WORDS, statuses));
    static const uint32_t want0[] = {4, 5, 8}; /* "1" (a prefix of "12"), "12", "x" */
    static const uint32_t want12[] = {2};
    expect_mask(&masks[0], want0, 3);
    expect_mask(&masks[MASK_WORDS], want12, 1);
    expect_mask(&masks[2 * MASK_WORDS], want12, 1);
    memset(masks, 0, sizeof masks);
    size_t calls = 0;
    CHECK_OK(sieve_compute_masks_with_executor(ms, 3, masks, MASK_WORDS, statuses, run_inline,
                                               &calls));
    CHECK(calls == 3);
    for (size_t i = 0; i < 3; i++) {
        CHECK(statuses[i] == SIEVE_STATUS_OK);
        sieve_matcher_free(ms[i]);
    }
    expect_mask(&masks[0], want0, 3);
    expect_mask(&masks[2 * MASK_WORDS], want12, 1);
    printf("batch: 3 masks on the calling thread, 3 through the host executor\n");
    sieve_grammar_free(g);
}

int main(void) {
    printf("%s on Cortex-M4F (no_std C ABI)\n", sieve_version());
    struct mallinfo before = mallinfo();
    const sieve_tokenizer *tok = new_tokenizer();
    lark(tok);
    regex(tok);
    json_schema(tok);
    batch(tok);
    sieve_tokenizer_free(tok);
    struct mallinfo after = mallinfo();
    printf("heap: %d bytes in use before, %d after; arena %d bytes\n", before.uordblks,
           after.uordblks, after.arena);
    printf("embedded-c: PASS\n");
    return 0;
}
