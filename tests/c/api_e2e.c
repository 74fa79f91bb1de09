/* The native C API end to end with a real tokenizer (tokenizer.json path in argv[1]; a small
 * byte table if it cannot be read): compile a Lark grammar and a JSON Schema, generate by
 * taking the lowest allowed token each step, exercise rollback, validate, fast-forward,
 * clone, is_allowed and the mask kernels, compile through the tokenizer's compile cache, and
 * free everything. */
#include <math.h>

#include "common.h"

typedef struct {
    const sieve_tokenizer *tok;
    size_t words;
    const uint32_t *eos;
    size_t n_eos;
} ctx_t;

static int is_eos(const ctx_t *c, uint32_t t) {
    for (size_t i = 0; i < c->n_eos; i++) {
        if (c->eos[i] == t) {
            return 1;
        }
    }
    return 0;
}

/* Appends the bytes of `t` to `out` (NUL-terminated, `cap` bytes). */
static void append_token(const ctx_t *c, uint32_t t, char *out, size_t cap) {
    const uint8_t *bytes = NULL;
    size_t len = 0;
    CHECK_OK(sieve_tokenizer_token_bytes(c->tok, t, &bytes, &len));
    size_t at = strlen(out);
    CHECK(at + len < cap);
    memcpy(out + at, bytes, len);
    out[at + len] = '\0';
}

/* Generates greedily (lowest allowed id) until accepting, then consumes an EOS. Records the
 * tokens in `toks` (without the EOS) and returns how many. */
static size_t generate(const ctx_t *c, sieve_matcher *m, uint32_t *toks, size_t cap, char *text,
                       size_t text_cap) {
    uint32_t *mask = calloc(c->words, sizeof *mask);
    float *logits = malloc(sieve_tokenizer_vocab_size(c->tok) * sizeof *logits);
    CHECK(mask != NULL && logits != NULL);
    size_t n = 0;
    text[0] = '\0';
    for (;;) {
        if (n >= cap) {
            fprintf(stderr, "no end after %zu tokens: %s\n", n, text);
            exit(1);
        }
        CHECK_OK(sieve_matcher_compute_mask(m, mask, c->words));
        CHECK(popcount_mask(mask, c->words) > 0);
        if (sieve_matcher_is_accepting(m)) {
            CHECK(mask_bit(mask, c->eos[0]));
            CHECK_OK(sieve_matcher_consume_token(m, c->eos[0]));
            CHECK(sieve_matcher_is_stopped(m));
            break;
        }
        /* Sample through the f32 kernel: all-zero logits, masked; the first finite logit is
         * the lowest allowed id. */
        size_t vocab = sieve_tokenizer_vocab_size(c->tok);
        for (size_t i = 0; i < vocab; i++) {
            logits[i] = 0.0f;
        }
        CHECK_OK(sieve_apply_mask_f32(logits, vocab, mask, c->words));
        long pick = -1;
        size_t finite = 0;
        for (size_t i = 0; i < vocab; i++) {
            if (!isinf(logits[i])) {
                if (pick < 0) {
                    pick = (long)i;
                }
                finite++;
            }
        }
        CHECK(pick == lowest_allowed(mask, c->words));
        CHECK(finite == popcount_mask(mask, c->words));
        uint32_t t = (uint32_t)pick;
        CHECK(!is_eos(c, t));
        bool allowed = false;
        CHECK_OK(sieve_matcher_is_allowed(m, t, &allowed));
        CHECK(allowed);
        CHECK_OK(sieve_matcher_consume_token(m, t));
        toks[n++] = t;
        append_token(c, t, text, text_cap);
    }
    free(mask);
    free(logits);
    return n;
}

static void lark(const ctx_t *c) {
    const char *src = "start: \"The answer is \" NUMBER \".\"\nNUMBER: /[0-9]{1,3}/\n";
    const sieve_grammar *g = NULL;
    sieve_limits limits = SIEVE_LIMITS_INIT;
    CHECK_OK(sieve_limits_default(&limits));
    CHECK(limits.max_lexer_states > 0 && limits.struct_size == sizeof limits);
    CHECK_OK(sieve_grammar_new(c->tok, SIEVE_GRAMMAR_KIND_LARK, (const uint8_t *)src, strlen(src),
                               &limits, &g, NULL));
    CHECK(sieve_grammar_coverage_len(g) == 0);
    sieve_matcher *m = NULL;
    CHECK_OK(sieve_matcher_new(g, &m));

    /* Fast-forward at the start: the forced prefix "The answer is " minus its last token. */
    size_t need = 0;
    sieve_status s = sieve_matcher_compute_ff_tokens(m, NULL, 0, &need);
    CHECK(s == SIEVE_STATUS_OK || s == SIEVE_STATUS_INSUFFICIENT_SIZE);
    uint32_t ff[64];
    size_t n_ff = 0;
    CHECK(need < 64);
    CHECK_OK(sieve_matcher_compute_ff_tokens(m, ff, 64, &n_ff));
    CHECK(n_ff == need);
    char forced[256] = "";
    for (size_t i = 0; i < n_ff; i++) {
        append_token(c, ff[i], forced, sizeof forced);
    }
    CHECK(strncmp(forced, "The answer is ", strlen(forced)) == 0);
    printf("lark: %zu fast-forward tokens: \"%s\"\n", n_ff, forced);

    uint32_t toks[128];
    char text[512];
    size_t n = generate(c, m, toks, 128, text, sizeof text);
    printf("lark: generated %zu tokens: \"%s\"\n", n, text);
    CHECK(strcmp(text, "The answer is 0.") == 0);

    /* After EOS: only EOS ids; another token is STOPPED and sticky. */
    uint32_t *mask = calloc(c->words, sizeof *mask);
    uint32_t *mask2 = calloc(c->words, sizeof *mask2);
    CHECK(mask != NULL && mask2 != NULL);
    CHECK_OK(sieve_matcher_compute_mask(m, mask, c->words));
    CHECK(popcount_mask(mask, c->words) == c->n_eos);

    /* Rollback: undo the EOS and the last two tokens, the mask equals a fresh replay's. */
    CHECK_OK(sieve_matcher_rollback(m, 3));
    CHECK(!sieve_matcher_is_stopped(m));
    CHECK_OK(sieve_matcher_compute_mask(m, mask, c->words));
    sieve_matcher *replay = NULL;
    CHECK_OK(sieve_matcher_new(g, &replay));
    CHECK_OK(sieve_matcher_consume_tokens(replay, toks, n - 2));
    CHECK_OK(sieve_matcher_compute_mask(replay, mask2, c->words));
    CHECK(memcmp(mask, mask2, c->words * sizeof *mask) == 0);
    CHECK_STATUS(sieve_matcher_rollback(m, 1000), SIEVE_STATUS_ROLLBACK_TOO_FAR);

    /* Clone: same state, independent afterwards. */
    sieve_matcher *copy = NULL;
    CHECK_OK(sieve_matcher_clone(m, &copy));
    CHECK_OK(sieve_matcher_compute_mask(copy, mask2, c->words));
    CHECK(memcmp(mask, mask2, c->words * sizeof *mask) == 0);
    CHECK_OK(sieve_matcher_consume_tokens(copy, toks + n - 2, 2));
    CHECK(sieve_matcher_is_accepting(copy) && !sieve_matcher_is_accepting(m));

    /* Validate a draft without masks: a tokenization of a valid text, then a bad token. */
    CHECK_OK(sieve_matcher_reset(replay));
    const char *draft_text = "The answer is 42.";
    uint32_t draft[64];
    size_t n_draft = 0;
    CHECK_OK(sieve_tokenizer_tokenize(c->tok, (const uint8_t *)draft_text, strlen(draft_text),
                                      draft, 63, &n_draft));
    size_t n_valid = 0;
    CHECK_OK(sieve_matcher_validate_tokens(replay, draft, n_draft, &n_valid));
    CHECK(n_valid == n_draft);
    draft[n_draft] = draft[0]; /* "The..." cannot follow "." */
    CHECK_OK(sieve_matcher_validate_tokens(replay, draft, n_draft + 1, &n_valid));
    CHECK(n_valid == n_draft);
    CHECK(sieve_matcher_error_status(replay) == SIEVE_STATUS_OK);
    printf("lark: draft of %zu tokens validated\n", n_draft);

    sieve_matcher_free(copy);
    sieve_matcher_free(replay);
    sieve_matcher_free(m);
    sieve_grammar_free(g);
    free(mask);
    free(mask2);
}

static void json_schema(const ctx_t *c) {
    const char *schema =
        "{\"type\":\"object\",\"properties\":{"
        "\"name\":{\"type\":\"string\",\"maxLength\":8},"
        "\"age\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":120},"
        "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"maxLength\":3},\"maxItems\":2,"
        "\"uniqueItems\":true}},"
        "\"required\":[\"name\",\"age\"],\"additionalProperties\":false}";
    sieve_json_options opts = SIEVE_JSON_OPTIONS_INIT;
    CHECK_OK(sieve_json_options_default(&opts));
    opts.whitespace = SIEVE_JSON_WHITESPACE_COMPACT;
    opts.property_order = SIEVE_JSON_PROPERTY_ORDER_SCHEMA; /* optional keys at most once */
    const sieve_grammar *g = NULL;
    sieve_error *err = NULL;
    CHECK_OK(sieve_grammar_new_json_schema(c->tok, (const uint8_t *)schema, strlen(schema), &opts,
                                           NULL, &g, &err));
    CHECK(err == NULL);
    size_t n_cov = sieve_grammar_coverage_len(g);
    int saw_unique = 0;
    for (size_t i = 0; i < n_cov; i++) {
        sieve_coverage_entry e;
        CHECK_OK(sieve_grammar_coverage_entry(g, i, &e));
        printf("json: coverage %s/%s status %u %s\n", e.pointer, e.keyword, e.status, e.detail);
        saw_unique |= strcmp(e.keyword, "uniqueItems") == 0;
    }
    CHECK(saw_unique);

    sieve_matcher *m = NULL;
    CHECK_OK(sieve_matcher_new(g, &m));
    uint32_t toks[512];
    char text[2048];
    size_t n = generate(c, m, toks, 512, text, sizeof text);
    printf("json: generated %zu tokens: %s\n", n, text);
    CHECK(text[0] == '{' && text[strlen(text) - 1] == '}');
    /* Keys may be written in any JSON spelling (the picker here takes `\u` escapes). */
    CHECK(strstr(text, "\"name\":") != NULL ||
          strstr(text, "\"\\u006E\\u0061\\u006D\\u0065\":") != NULL);
    CHECK(strstr(text, "\"age\":") != NULL ||
          strstr(text, "\"\\u0061\\u0067\\u0065\":") != NULL);

    /* The f16/bf16 kernels agree with the f32 one on which logits survive. */
    size_t vocab = sieve_tokenizer_vocab_size(c->tok);
    uint32_t *mask = calloc(c->words, sizeof *mask);
    uint16_t *h = malloc(vocab * sizeof *h);
    uint16_t *bf = malloc(vocab * sizeof *bf);
    CHECK(mask != NULL && h != NULL && bf != NULL);
    CHECK_OK(sieve_matcher_reset(m));
    CHECK_OK(sieve_matcher_compute_mask(m, mask, c->words));
    for (size_t i = 0; i < vocab; i++) {
        h[i] = 0x3C00;  /* 1.0 */
        bf[i] = 0x3F80; /* 1.0 */
    }
    CHECK_OK(sieve_apply_mask_f16(h, vocab, mask, c->words));
    CHECK_OK(sieve_apply_mask_bf16(bf, vocab, mask, c->words));
    for (size_t i = 0; i < vocab; i++) {
        int keep = mask_bit(mask, (uint32_t)i);
        CHECK(h[i] == (keep ? 0x3C00 : 0xFC00));
        CHECK(bf[i] == (keep ? 0x3F80 : 0xFF80));
    }
    free(mask);
    free(h);
    free(bf);

    /* A schema error carries the JSON pointer of the offending object. */
    const char *bad = "{\"properties\":{\"a\":{\"$ref\":\"https://example.invalid/s.json\"}}}";
    const sieve_grammar *none = NULL;
    CHECK_STATUS(sieve_grammar_new(c->tok, SIEVE_GRAMMAR_KIND_JSON_SCHEMA, (const uint8_t *)bad,
                                   strlen(bad), NULL, &none, &err),
                 SIEVE_STATUS_GRAMMAR_ERROR);
    CHECK(none == NULL && err != NULL);
    CHECK(sieve_error_status(err) == SIEVE_STATUS_GRAMMAR_ERROR);
    const char *ptr = sieve_error_json_pointer(err);
    printf("json: error at pointer \"%s\": %s\n", ptr ? ptr : "(none)", sieve_error_message(err));
    CHECK(ptr != NULL && strcmp(ptr, "/properties/a") == 0);
    sieve_error_free(err);

    /* A JSON syntax error carries its line and column. */
    const char *broken = "{\n  \"type\": }";
    err = NULL;
    CHECK_STATUS(sieve_grammar_new(c->tok, SIEVE_GRAMMAR_KIND_JSON_SCHEMA,
                                   (const uint8_t *)broken, strlen(broken), NULL, &none, &err),
                 SIEVE_STATUS_GRAMMAR_ERROR);
    CHECK(sieve_error_line(err) == 2 && sieve_error_column(err) > 0);
    sieve_error_free(err);

    sieve_matcher_free(m);
    sieve_grammar_free(g);
}

static void regex(const ctx_t *c) {
    const char *re = "(yes|no)";
    const sieve_grammar *g = NULL;
    CHECK_OK(sieve_grammar_new(c->tok, SIEVE_GRAMMAR_KIND_REGEX, (const uint8_t *)re, strlen(re),
                               NULL, &g, NULL));
    sieve_matcher *m = NULL;
    CHECK_OK(sieve_matcher_new(g, &m));
    uint32_t toks[16];
    char text[64];
    generate(c, m, toks, 16, text, sizeof text);
    printf("regex: generated \"%s\"\n", text);
    CHECK(strcmp(text, "no") == 0 || strcmp(text, "yes") == 0);
    sieve_matcher_free(m);
    sieve_grammar_free(g);
}

/* The compile cache: a schema compiled again (a fresh copy of its text) is a hit whose masks
 * are a cold compile's, a bad one fails again with the same error, and off compiles anew. */
static void compile_cache(const ctx_t *c) {
    const char *schema = "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"integer\"},"
                         "\"tag\":{\"enum\":[\"a\",\"bc\"]}},\"required\":[\"id\",\"tag\"]}";
    sieve_compile_cache_stats st;
    CHECK_OK(sieve_tokenizer_compile_cache_stats(c->tok, &st));
    CHECK(st.max_bytes == 0 && st.entries == 0); /* off until asked */
    const sieve_grammar *cold = NULL;
    CHECK_OK(sieve_grammar_new(c->tok, SIEVE_GRAMMAR_KIND_JSON_SCHEMA, (const uint8_t *)schema,
                               strlen(schema), NULL, &cold, NULL));
    CHECK_OK(sieve_tokenizer_set_compile_cache(c->tok, 64u << 20));
    const sieve_grammar *g[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++) {
        char *copy = malloc(strlen(schema) + 1);
        CHECK(copy != NULL);
        strcpy(copy, schema);
        CHECK_OK(sieve_grammar_new(c->tok, SIEVE_GRAMMAR_KIND_JSON_SCHEMA, (const uint8_t *)copy,
                                   strlen(copy), NULL, &g[i], NULL));
        free(copy);
    }
    CHECK_OK(sieve_tokenizer_compile_cache_stats(c->tok, &st));
    printf("cache: hits %llu misses %llu entries %zu bytes %zu\n", (unsigned long long)st.hits,
           (unsigned long long)st.misses, st.entries, st.bytes);
    CHECK(st.hits == 1 && st.misses == 1 && st.entries == 1);
    CHECK(st.bytes > 0 && st.bytes <= st.max_bytes);

    /* Walk one document with a matcher of each grammar: the masks agree at every step. */
    const char *doc = "{\"id\":42,\"tag\":\"bc\"}";
    sieve_matcher *m[3] = {NULL, NULL, NULL};
    CHECK_OK(sieve_matcher_new(cold, &m[0]));
    CHECK_OK(sieve_matcher_new(g[0], &m[1]));
    CHECK_OK(sieve_matcher_new(g[1], &m[2]));
    uint32_t ids[64];
    size_t n = 0;
    CHECK_OK(sieve_tokenizer_tokenize(c->tok, (const uint8_t *)doc, strlen(doc), ids, 64, &n));
    CHECK(n > 0 && n <= 64);
    uint32_t *mask[3];
    for (int k = 0; k < 3; k++) {
        mask[k] = calloc(c->words, sizeof(uint32_t));
        CHECK(mask[k] != NULL);
    }
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < 3; k++) {
            CHECK_OK(sieve_matcher_compute_mask(m[k], mask[k], c->words));
        }
        CHECK(memcmp(mask[0], mask[1], c->words * 4) == 0);
        CHECK(memcmp(mask[0], mask[2], c->words * 4) == 0);
        CHECK(mask_bit(mask[0], ids[i]));
        for (int k = 0; k < 3; k++) {
            CHECK_OK(sieve_matcher_consume_token(m[k], ids[i]));
        }
    }
    for (int k = 0; k < 3; k++) {
        CHECK(sieve_matcher_is_accepting(m[k]));
        sieve_matcher_free(m[k]);
        free(mask[k]);
    }

    /* An error comes back again from the cache, the same. */
    const char *bad = "{\"$ref\": \"https://example.invalid/s.json\"}";
    for (int i = 0; i < 2; i++) {
        const sieve_grammar *none = NULL;
        sieve_error *err = NULL;
        CHECK_STATUS(sieve_grammar_new(c->tok, SIEVE_GRAMMAR_KIND_JSON_SCHEMA, (const uint8_t *)bad,
                                       strlen(bad), NULL, &none, &err),
                     SIEVE_STATUS_GRAMMAR_ERROR);
        CHECK(none == NULL && err != NULL);
        printf("cache: error %d: %s\n", i, sieve_error_message(err));
        sieve_error_free(err);
    }
    CHECK_OK(sieve_tokenizer_compile_cache_stats(c->tok, &st));
    CHECK(st.hits == 2 && st.misses == 2);

    /* Off: drops the entries; the grammars handed out live on. */
    CHECK_OK(sieve_tokenizer_set_compile_cache(c->tok, 0));
    CHECK_OK(sieve_tokenizer_compile_cache_stats(c->tok, &st));
    CHECK(st.entries == 0 && st.bytes == 0 && st.max_bytes == 0);
    sieve_grammar_free(cold);
    sieve_grammar_free(g[0]);
    sieve_grammar_free(g[1]);
}

int main(int argc, char **argv) {
    printf("%s\n", sieve_version());
    CHECK(strncmp(sieve_version(), "sieve ", 6) == 0);
    ctx_t c;
    c.tok = load_tokenizer(argc > 1 ? argv[1] : NULL);
    c.words = sieve_tokenizer_mask_words(c.tok);
    CHECK(c.words == (sieve_tokenizer_vocab_size(c.tok) + 31) / 32);
    CHECK_OK(sieve_tokenizer_eos_tokens(c.tok, &c.eos, &c.n_eos));
    CHECK(c.n_eos > 0);
    printf("vocab %zu tokens, %zu mask words, %zu EOS ids (first %u)\n",
           sieve_tokenizer_vocab_size(c.tok), c.words, c.n_eos, c.eos[0]);

    /* A second reference outlives the first. */
    const sieve_tokenizer *again = NULL;
    CHECK_OK(sieve_tokenizer_clone(c.tok, &again));
    sieve_tokenizer_free(c.tok);
    c.tok = again;

    lark(&c);
    json_schema(&c);
    regex(&c);
    compile_cache(&c);
    sieve_tokenizer_free(c.tok);
    printf("api_e2e: ok\n");
    return 0;
}
