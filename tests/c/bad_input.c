/* Bad input: NULL pointers, short buffers, out-of-range token ids, invalid UTF-8, bad struct
 * sizes, misbehaving callbacks and use after an error. Every call must return its status;
 * nothing may crash or leak (run under valgrind). */
#include "common.h"

static size_t cb_calls;

/* A tokenize callback: one id (0) per byte. */
static size_t one_per_byte(void *user_data, const uint8_t *bytes, size_t len, uint32_t *out,
                           size_t cap) {
    (void)bytes;
    cb_calls += user_data == &cb_calls;
    for (size_t i = 0; i < len && i < cap; i++) {
        out[i] = 0;
    }
    return len;
}

/* A broken callback: claims an absurd count. */
static size_t liar(void *user_data, const uint8_t *bytes, size_t len, uint32_t *out, size_t cap) {
    (void)user_data;
    (void)bytes;
    (void)len;
    (void)out;
    (void)cap;
    return (size_t)1 << 40;
}

static void statuses_and_errors(void) {
    CHECK(strcmp(sieve_status_name(SIEVE_STATUS_OK), "SIEVE_STATUS_OK") == 0);
    CHECK(strcmp(sieve_status_name(SIEVE_STATUS_PANIC), "SIEVE_STATUS_PANIC") == 0);
    CHECK(strcmp(sieve_status_name(9999), "SIEVE_STATUS_UNKNOWN") == 0);
    CHECK(SIEVE_STATUS_OK == 0 && SIEVE_STATUS_NULL_ARGUMENT == 1 && SIEVE_STATUS_PANIC == 11);
    CHECK(sieve_error_status(NULL) == SIEVE_STATUS_NULL_ARGUMENT);
    CHECK(strcmp(sieve_error_message(NULL), "") == 0);
    CHECK(sieve_error_line(NULL) == 0 && sieve_error_column(NULL) == 0);
    CHECK(sieve_error_json_pointer(NULL) == NULL);
    sieve_error_free(NULL);
    sieve_tokenizer_free(NULL);
    sieve_grammar_free(NULL);
    sieve_matcher_free(NULL);
}

static void tokenizers(void) {
    const sieve_tokenizer *tok = NULL;
    sieve_error *err = NULL;
    const uint8_t bytes[] = "abc<eos>";
    uint32_t lens[] = {1, 1, 1, 5};
    uint8_t flags[] = {0, 0, 0, 1};
    uint32_t eos = 3, bad_eos = 4;

    CHECK_STATUS(sieve_tokenizer_new(NULL, 8, lens, 4, flags, &eos, 1, NULL, NULL, &tok, &err),
                 SIEVE_STATUS_NULL_ARGUMENT);
    CHECK(tok == NULL && err != NULL);
    CHECK(sieve_error_status(err) == SIEVE_STATUS_NULL_ARGUMENT);
    sieve_error_free(err);
    err = NULL;
    CHECK_STATUS(sieve_tokenizer_new(bytes, 8, lens, 4, flags, &eos, 1, NULL, NULL, NULL, NULL),
                 SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_tokenizer_new(bytes, 7, lens, 4, flags, &eos, 1, NULL, NULL, &tok, &err),
                 SIEVE_STATUS_INVALID_ARGUMENT);
    printf("lengths mismatch: %s\n", sieve_error_message(err));
    sieve_error_free(err);
    err = NULL;
    CHECK_STATUS(sieve_tokenizer_new(bytes, 8, lens, 4, flags, &bad_eos, 1, NULL, NULL, &tok, &err),
                 SIEVE_STATUS_TOKENIZER_ERROR);
    CHECK(strstr(sieve_error_message(err), "EOS") != NULL);
    sieve_error_free(err);
    CHECK(tok == NULL);

    /* tokenizer.json: not JSON (line and column), not UTF-8, unsupported. */
    const char *json = "{\n  \"model\": ]";
    err = NULL;
    CHECK_STATUS(sieve_tokenizer_from_json((const uint8_t *)json, strlen(json), &tok, &err),
                 SIEVE_STATUS_TOKENIZER_ERROR);
    CHECK(sieve_error_line(err) == 2 && sieve_error_column(err) > 0);
    sieve_error_free(err);
    const uint8_t latin1[] = {'{', 0xE9, '}'};
    CHECK_STATUS(sieve_tokenizer_from_json(latin1, 3, &tok, NULL), SIEVE_STATUS_INVALID_UTF8);
    const char *wordpiece = "{\"model\":{\"type\":\"WordPiece\",\"vocab\":{\"a\":0}}}";
    CHECK_STATUS(sieve_tokenizer_from_json((const uint8_t *)wordpiece, strlen(wordpiece), &tok,
                                           NULL),
                 SIEVE_STATUS_TOKENIZER_ERROR);
    CHECK_STATUS(sieve_tokenizer_from_json(NULL, 0, &tok, NULL), SIEVE_STATUS_TOKENIZER_ERROR);
    CHECK_STATUS(sieve_tokenizer_from_json(NULL, 3, &tok, NULL), SIEVE_STATUS_NULL_ARGUMENT);
    CHECK(tok == NULL);

    /* Getters on NULL. */
    CHECK(sieve_tokenizer_vocab_size(NULL) == 0 && sieve_tokenizer_mask_words(NULL) == 0);
    const uint32_t *ids = NULL;
    size_t n = 0;
    CHECK_STATUS(sieve_tokenizer_eos_tokens(NULL, &ids, &n), SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_tokenizer_clone(NULL, &tok), SIEVE_STATUS_NULL_ARGUMENT);

    /* Tokenize callbacks: a good one (thread-safe, with user data) and a liar. */
    CHECK_OK(sieve_tokenizer_new(bytes, 8, lens, 4, flags, &eos, 1, one_per_byte, &cb_calls, &tok,
                                 NULL));
    uint32_t out[8];
    CHECK_STATUS(sieve_tokenizer_tokenize(tok, bytes, 3, out, 2, &n),
                 SIEVE_STATUS_INSUFFICIENT_SIZE);
    CHECK(n == 3);
    CHECK_OK(sieve_tokenizer_tokenize(tok, bytes, 3, out, 8, &n));
    CHECK(n == 3 && out[0] == 0 && cb_calls == 2);
    CHECK_STATUS(sieve_tokenizer_tokenize(tok, bytes, 3, out, 8, NULL), SIEVE_STATUS_NULL_ARGUMENT);
    const uint8_t *tb = NULL;
    CHECK_STATUS(sieve_tokenizer_token_bytes(tok, 4, &tb, &n), SIEVE_STATUS_TOKEN_OUT_OF_RANGE);
    CHECK_OK(sieve_tokenizer_token_bytes(tok, 3, &tb, &n));
    CHECK(n == 5 && memcmp(tb, "<eos>", 5) == 0);
    sieve_tokenizer_free(tok);
    tok = NULL;
    CHECK_OK(sieve_tokenizer_new(bytes, 8, lens, 4, flags, &eos, 1, liar, NULL, &tok, NULL));
    CHECK_STATUS(sieve_tokenizer_tokenize(tok, bytes, 3, out, 8, &n), SIEVE_STATUS_CALLBACK_ERROR);
    sieve_tokenizer_free(tok);
    printf("tokenizers: ok\n");
}

static void grammars(const sieve_tokenizer *tok) {
    const sieve_grammar *g = NULL;
    sieve_error *err = NULL;
    const char *ok = "start: \"ab\"+\n";
    const uint8_t *text = (const uint8_t *)ok;
    size_t len = strlen(ok);

    CHECK_STATUS(sieve_grammar_new(NULL, SIEVE_GRAMMAR_KIND_LARK, text, len, NULL, &g, NULL),
                 SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_grammar_new(tok, SIEVE_GRAMMAR_KIND_LARK, NULL, len, NULL, &g, NULL),
                 SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_grammar_new(tok, SIEVE_GRAMMAR_KIND_LARK, text, len, NULL, NULL, NULL),
                 SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_grammar_new(tok, 99, text, len, NULL, &g, &err),
                 SIEVE_STATUS_INVALID_ARGUMENT);
    CHECK(strstr(sieve_error_message(err), "99") != NULL);
    sieve_error_free(err);

    /* Invalid UTF-8 grammar text. */
    const uint8_t bad_utf8[] = {'s', 't', 'a', 'r', 't', ':', ' ', '"', 0xC3, 0x28, '"'};
    err = NULL;
    CHECK_STATUS(sieve_grammar_new(tok, SIEVE_GRAMMAR_KIND_LARK, bad_utf8, sizeof bad_utf8, NULL,
                                   &g, &err),
                 SIEVE_STATUS_INVALID_UTF8);
    CHECK(sieve_error_status(err) == SIEVE_STATUS_INVALID_UTF8);
    sieve_error_free(err);
    CHECK_STATUS(sieve_grammar_new(tok, SIEVE_GRAMMAR_KIND_REGEX, bad_utf8, sizeof bad_utf8, NULL,
                                   &g, NULL),
                 SIEVE_STATUS_INVALID_UTF8);

    /* Syntax and semantic errors with positions. */
    const char *undefined = "start: a\n  | missing\na: \"x\"\n";
    err = NULL;
    CHECK_STATUS(sieve_grammar_new(tok, SIEVE_GRAMMAR_KIND_LARK, (const uint8_t *)undefined,
                                   strlen(undefined), NULL, &g, &err),
                 SIEVE_STATUS_GRAMMAR_ERROR);
    printf("undefined rule: line %u column %u: %s\n", sieve_error_line(err),
           sieve_error_column(err), sieve_error_message(err));
    CHECK(sieve_error_line(err) == 2 && sieve_error_json_pointer(err) == NULL);
    sieve_error_free(err);
    const char *bad_re = "(ab";
    CHECK_STATUS(sieve_grammar_new(tok, SIEVE_GRAMMAR_KIND_REGEX, (const uint8_t *)bad_re,
                                   strlen(bad_re), NULL, &g, NULL),
                 SIEVE_STATUS_GRAMMAR_ERROR);

    /* Limits: a bad struct_size, a budget too small, and an older (shorter) struct. */
    sieve_limits limits = SIEVE_LIMITS_INIT;
    limits.struct_size = 0;
    CHECK_STATUS(sieve_limits_default(&limits), SIEVE_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(sieve_limits_default(NULL), SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_grammar_new(tok, SIEVE_GRAMMAR_KIND_LARK, text, len, &limits, &g, NULL),
                 SIEVE_STATUS_INVALID_ARGUMENT);
    limits.struct_size = sizeof limits;
    CHECK_OK(sieve_limits_default(&limits));
    limits.max_nesting_depth = 2;
    const char *deep = "((((a))))";
    err = NULL;
    CHECK_STATUS(sieve_grammar_new(tok, SIEVE_GRAMMAR_KIND_REGEX, (const uint8_t *)deep,
                                   strlen(deep), &limits, &g, &err),
                 SIEVE_STATUS_LIMIT_EXCEEDED);
    printf("limit: %s\n", sieve_error_message(err));
    sieve_error_free(err);
    limits.struct_size = offsetof(sieve_limits, max_expr_nodes); /* knows one field only */
    CHECK_OK(sieve_grammar_new(tok, SIEVE_GRAMMAR_KIND_REGEX, (const uint8_t *)deep, strlen(deep),
                               &limits, &g, NULL));
    sieve_grammar_free(g);
    g = NULL;

    /* JSON options: an unknown whitespace value. */
    sieve_json_options opts = SIEVE_JSON_OPTIONS_INIT;
    CHECK_OK(sieve_json_options_default(&opts));
    opts.whitespace = 77;
    const char *schema = "{\"type\":\"integer\"}";
    CHECK_STATUS(sieve_grammar_new_json_schema(tok, (const uint8_t *)schema, strlen(schema), &opts,
                                               NULL, &g, NULL),
                 SIEVE_STATUS_INVALID_ARGUMENT);
    CHECK(g == NULL);

    /* Coverage on NULL and out of range (a schema with an empty report: strings are exact
       in every spelling, while integers report a spelling restriction). */
    CHECK(sieve_grammar_coverage_len(NULL) == 0);
    const char *exact = "{\"type\":\"string\"}";
    CHECK_OK(sieve_grammar_new(tok, SIEVE_GRAMMAR_KIND_JSON_SCHEMA, (const uint8_t *)exact,
                               strlen(exact), NULL, &g, NULL));
    CHECK(sieve_grammar_coverage_len(g) == 0);
    sieve_coverage_entry entry;
    CHECK_STATUS(sieve_grammar_coverage_entry(g, 0, &entry), SIEVE_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(sieve_grammar_coverage_entry(g, 0, NULL), SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_grammar_clone(g, NULL), SIEVE_STATUS_NULL_ARGUMENT);
    sieve_grammar_free(g);
    printf("grammars: ok\n");
}

static void matchers(const sieve_tokenizer *tok) {
    const char *src = "start: \"ab\"+\n";
    const sieve_grammar *g = NULL;
    CHECK_OK(sieve_grammar_new(tok, SIEVE_GRAMMAR_KIND_LARK, (const uint8_t *)src, strlen(src),
                               NULL, &g, NULL));
    sieve_matcher *m = NULL;
    CHECK_STATUS(sieve_matcher_new(NULL, &m), SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_matcher_new(g, NULL), SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_OK(sieve_matcher_new(g, &m));
    sieve_grammar_free(g); /* the matcher keeps what it needs */

    uint32_t vocab = (uint32_t)sieve_tokenizer_vocab_size(tok);
    size_t words = sieve_tokenizer_mask_words(tok);
    CHECK(sieve_matcher_mask_words(m) == words && sieve_matcher_mask_words(NULL) == 0);
    uint32_t mask[64];
    CHECK(words < 64);

    /* NULL handle for every matcher call. */
    bool flag = true;
    size_t n = 0;
    uint32_t toks[4] = {0, 1, 2, 3};
    char buf[256];
    CHECK_STATUS(sieve_matcher_compute_mask(NULL, mask, words), SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_matcher_consume_token(NULL, 0), SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_matcher_consume_tokens(NULL, toks, 1), SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_matcher_rollback(NULL, 0), SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_matcher_validate_tokens(NULL, toks, 1, &n), SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_matcher_compute_ff_tokens(NULL, toks, 4, &n), SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_matcher_is_allowed(NULL, 0, &flag), SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_matcher_reset(NULL), SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_matcher_error_message(NULL, buf, sizeof buf, &n),
                 SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_matcher_clone(NULL, &m), SIEVE_STATUS_NULL_ARGUMENT);
    CHECK(sieve_matcher_error_status(NULL) == SIEVE_STATUS_NULL_ARGUMENT);
    CHECK(!sieve_matcher_is_accepting(NULL) && !sieve_matcher_is_stopped(NULL));
    /* NULL buffers with a length, NULL outputs. */
    CHECK_STATUS(sieve_matcher_compute_mask(m, NULL, words), SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_matcher_consume_tokens(m, NULL, 2), SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_matcher_validate_tokens(m, toks, 1, NULL), SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_matcher_is_allowed(m, 0, NULL), SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_matcher_compute_ff_tokens(m, NULL, 4, &n), SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_OK(sieve_matcher_consume_tokens(m, NULL, 0));

    /* Short mask buffers (not sticky). */
    CHECK_STATUS(sieve_matcher_compute_mask(m, mask, words - 1), SIEVE_STATUS_INSUFFICIENT_SIZE);
    CHECK_STATUS(sieve_matcher_compute_mask(m, NULL, 0), SIEVE_STATUS_INSUFFICIENT_SIZE);
    CHECK_OK(sieve_matcher_compute_mask(m, mask, 64)); /* longer is fine; the tail is zeroed */
    CHECK(mask[63] == 0);

    /* Fast-forward with a short buffer reports the size needed. */
    size_t need = 0;
    CHECK_STATUS(sieve_matcher_compute_ff_tokens(m, NULL, 0, &need),
                 SIEVE_STATUS_INSUFFICIENT_SIZE);
    CHECK(need >= 1);

    /* Out of range: is_allowed leaves the matcher usable; consume_token puts it in error. */
    CHECK_STATUS(sieve_matcher_is_allowed(m, vocab, &flag), SIEVE_STATUS_TOKEN_OUT_OF_RANGE);
    CHECK(flag == true); /* untouched */
    CHECK(sieve_matcher_error_status(m) == SIEVE_STATUS_OK);
    CHECK_STATUS(sieve_matcher_rollback(m, 1), SIEVE_STATUS_ROLLBACK_TOO_FAR); /* not sticky */
    CHECK_OK(sieve_matcher_compute_mask(m, mask, words));
    CHECK_STATUS(sieve_matcher_consume_token(m, vocab + 1000), SIEVE_STATUS_TOKEN_OUT_OF_RANGE);
    CHECK(sieve_matcher_error_status(m) == SIEVE_STATUS_TOKEN_OUT_OF_RANGE);

    /* Use after an error: every call says MATCHER_ERROR until reset. */
    for (size_t i = 0; i < words; i++) {
        mask[i] = 0xFFFFFFFFu;
    }
    CHECK_STATUS(sieve_matcher_compute_mask(m, mask, words), SIEVE_STATUS_MATCHER_ERROR);
    CHECK(popcount_mask(mask, words) == 0);
    CHECK_STATUS(sieve_matcher_consume_token(m, 0), SIEVE_STATUS_MATCHER_ERROR);
    CHECK_STATUS(sieve_matcher_rollback(m, 0), SIEVE_STATUS_MATCHER_ERROR);
    CHECK_STATUS(sieve_matcher_validate_tokens(m, toks, 1, &n), SIEVE_STATUS_MATCHER_ERROR);
    CHECK_STATUS(sieve_matcher_compute_ff_tokens(m, toks, 4, &n), SIEVE_STATUS_MATCHER_ERROR);
    CHECK_STATUS(sieve_matcher_is_allowed(m, 0, &flag), SIEVE_STATUS_MATCHER_ERROR);
    CHECK(!sieve_matcher_is_accepting(m));
    size_t msg_len = 0;
    CHECK_STATUS(sieve_matcher_error_message(m, buf, 4, &msg_len), SIEVE_STATUS_INSUFFICIENT_SIZE);
    CHECK(msg_len > 4);
    CHECK_OK(sieve_matcher_error_message(m, buf, sizeof buf, &msg_len));
    CHECK(strlen(buf) == msg_len);
    printf("sticky error: %s\n", buf);
    CHECK_OK(sieve_matcher_reset(m));
    CHECK(sieve_matcher_error_status(m) == SIEVE_STATUS_OK);
    CHECK_OK(sieve_matcher_error_message(m, buf, sizeof buf, NULL));
    CHECK(buf[0] == '\0');

    /* A rejected token, then EOS handling: "ab" then EOS, then a token after EOS. */
    long a = -1, b = -1, eos = -1;
    for (uint32_t t = 0; t < vocab; t++) {
        const uint8_t *tb = NULL;
        size_t tl = 0;
        CHECK_OK(sieve_tokenizer_token_bytes(tok, t, &tb, &tl));
        if (tl == 1 && tb[0] == 'a' && a < 0) a = t;
        if (tl == 1 && tb[0] == 'b' && b < 0) b = t;
    }
    const uint32_t *eos_ids = NULL;
    size_t n_eos = 0;
    CHECK_OK(sieve_tokenizer_eos_tokens(tok, &eos_ids, &n_eos));
    eos = eos_ids[0];
    CHECK(a >= 0 && b >= 0);
    CHECK_STATUS(sieve_matcher_consume_token(m, (uint32_t)b), SIEVE_STATUS_TOKEN_REJECTED);
    CHECK_STATUS(sieve_matcher_consume_token(m, (uint32_t)a), SIEVE_STATUS_MATCHER_ERROR);
    CHECK_OK(sieve_matcher_reset(m));
    CHECK_STATUS(sieve_matcher_consume_token(m, (uint32_t)eos), SIEVE_STATUS_TOKEN_REJECTED);
    CHECK_OK(sieve_matcher_reset(m));
    uint32_t ab_eos[3] = {(uint32_t)a, (uint32_t)b, (uint32_t)eos};
    CHECK_OK(sieve_matcher_consume_tokens(m, ab_eos, 3));
    CHECK(sieve_matcher_is_stopped(m) && sieve_matcher_is_accepting(m));
    CHECK_STATUS(sieve_matcher_consume_token(m, (uint32_t)a), SIEVE_STATUS_STOPPED);
    CHECK_STATUS(sieve_matcher_consume_token(m, (uint32_t)a), SIEVE_STATUS_MATCHER_ERROR);

    /* A clone of a matcher in error is in error too; freeing both is clean. */
    sieve_matcher *copy = NULL;
    CHECK_OK(sieve_matcher_clone(m, &copy));
    CHECK(sieve_matcher_error_status(copy) == SIEVE_STATUS_STOPPED);
    sieve_matcher_free(copy);
    sieve_matcher_free(m);
    printf("matchers: ok\n");
}

static void kernels(void) {
    float logits[40];
    uint32_t mask[2] = {0x5u, 0x1u};
    for (int i = 0; i < 40; i++) {
        logits[i] = 1.0f;
    }
    CHECK_STATUS(sieve_apply_mask_f32(NULL, 40, mask, 2), SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_apply_mask_f32(logits, 40, NULL, 2), SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_apply_mask_f16(NULL, 1, mask, 2), SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_apply_mask_bf16(NULL, 1, mask, 2), SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_OK(sieve_apply_mask_f32(NULL, 0, NULL, 0));
    /* A mask shorter than the logits: the rest become -inf. */
    CHECK_OK(sieve_apply_mask_f32(logits, 40, mask, 1));
    CHECK(logits[0] == 1.0f && logits[2] == 1.0f && logits[1] < -1e30f && logits[32] < -1e30f);
    printf("kernels: ok\n");
}

int main(void) {
    statuses_and_errors();
    tokenizers();
    uint32_t eos;
    const sieve_tokenizer *tok = small_tokenizer(&eos);
    grammars(tok);
    matchers(tok);
    kernels();
    sieve_tokenizer_free(tok);
    printf("bad_input: ok\n");
    return 0;
}
