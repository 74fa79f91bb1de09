/* sieve_matcher_fill_draft_tree: masks for every node of a draft token tree, checked against
 * a sequential reference (a clone of the matcher consuming the node's path one token at a
 * time, then sieve_matcher_compute_mask; a zero row when a token is refused) on random
 * trees over the small byte-table tokenizer; the matcher ends where it started; bad
 * arguments write nothing; a matcher in error gives SIEVE_STATUS_MATCHER_ERROR. The batch
 * sieve_fill_draft_trees equals one call per matcher. */
#include <stdbool.h>

#include "common.h"

#define MAX_NODES 24

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint32_t below(uint32_t n) {
    rng_state = rng_state * 6364136223846793005u + 1442695040888963407u;
    return (uint32_t)((rng_state >> 33) % n);
}

static bool bit(const uint32_t *mask, uint32_t t) { return (mask[t / 32] >> (t % 32)) & 1u; }

/* The reference row of node `node`: a clone of `m` consumes the path's tokens. */
static void reference(const sieve_matcher *m, const uint32_t *tokens, const int32_t *parents,
                      int32_t node, uint32_t *row, size_t words) {
    uint32_t path[MAX_NODES];
    size_t len = 0;
    for (int32_t i = node; i >= 0; i = parents[i]) {
        path[len++] = tokens[i];
    }
    sieve_matcher *c = NULL;
    CHECK_OK(sieve_matcher_clone(m, &c));
    memset(row, 0, words * sizeof row[0]);
    bool ok = true;
    for (size_t k = len; k-- > 0 && ok;) {
        ok = sieve_matcher_consume_token(c, path[k]) == SIEVE_STATUS_OK;
    }
    if (ok) {
        CHECK_OK(sieve_matcher_compute_mask(c, row, words));
    }
    sieve_matcher_free(c);
}

/* An allowed token of `row`, picked at random; `fallback` if none. */
static uint32_t pick(const uint32_t *row, size_t words, uint32_t fallback) {
    uint32_t allowed[4096];
    size_t n = 0;
    for (uint32_t t = 0; t < words * 32 && n < 4096; t++) {
        if (bit(row, t)) {
            allowed[n++] = t;
        }
    }
    return n == 0 ? fallback : allowed[below((uint32_t)n)];
}

int main(void) {
    uint32_t eos = 0;
    const sieve_tokenizer *tok = small_tokenizer(&eos);
    const char *schema = "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
                         "\"age\":{\"type\":\"integer\"}},\"required\":[\"name\"]}";
    const sieve_grammar *g = NULL;
    CHECK_OK(sieve_grammar_new(tok, SIEVE_GRAMMAR_KIND_JSON_SCHEMA, (const uint8_t *)schema,
                               strlen(schema), NULL, &g, NULL));
    sieve_matcher *m = NULL;
    CHECK_OK(sieve_matcher_new(g, &m));
    size_t words = sieve_matcher_mask_words(m);
    uint32_t vocab = (uint32_t)(words * 32);
    uint32_t *rows = calloc((MAX_NODES + 1) * words, sizeof(uint32_t));
    uint32_t *want = calloc((MAX_NODES + 1) * words, sizeof(uint32_t));
    uint32_t *before = calloc(words, sizeof(uint32_t));
    uint32_t *after = calloc(words, sizeof(uint32_t));
    CHECK(rows && want && before && after);

    size_t nodes_total = 0, filled_total = 0;
    for (int tree = 0; tree < 200; tree++) {
        /* Start a few tokens into the output, sometimes. */
        CHECK_OK(sieve_matcher_reset(m));
        size_t prefix = below(4);
        for (size_t k = 0; k < prefix; k++) {
            CHECK_OK(sieve_matcher_compute_mask(m, before, words));
            uint32_t t = pick(before, words, eos);
            if (t == eos) {
                break;
            }
            CHECK_OK(sieve_matcher_consume_token(m, t));
        }
        uint32_t tokens[MAX_NODES];
        int32_t parents[MAX_NODES];
        size_t n = 1 + below(MAX_NODES);
        reference(m, tokens, parents, -1, want, words);
        for (size_t i = 0; i < n; i++) {
            parents[i] = below(3) == 0 ? (int32_t)below((uint32_t)i + 1) - 1 : (int32_t)i - 1;
            const uint32_t *parent_row = want + (size_t)(parents[i] + 1) * words;
            tokens[i] = below(8) == 0 ? below(vocab) : pick(parent_row, words, eos);
            reference(m, tokens, parents, (int32_t)i, want + (i + 1) * words, words);
        }
        CHECK_OK(sieve_matcher_compute_mask(m, before, words));
        size_t filled = 0;
        CHECK_OK(sieve_matcher_fill_draft_tree(m, tokens, parents, n, rows, words, &filled));
        CHECK(memcmp(rows, want, (n + 1) * words * sizeof(uint32_t)) == 0);
        CHECK_OK(sieve_matcher_compute_mask(m, after, words));
        CHECK(memcmp(before, after, words * sizeof(uint32_t)) == 0);
        nodes_total += n;
        filled_total += filled - 1;
    }
    printf("draft_tree: 200 trees, %zu nodes, %zu accepted\n", nodes_total, filled_total);
    CHECK(filled_total * 2 > nodes_total);

    /* Bad arguments write nothing. */
    uint32_t tokens[2] = {0, 0};
    int32_t bad_parents[2] = {-1, 1};
    int32_t parents[2] = {-1, 0};
    size_t filled = 99;
    memset(rows, 0xab, 3 * words * sizeof(uint32_t));
    CHECK_STATUS(sieve_matcher_fill_draft_tree(m, tokens, bad_parents, 2, rows, words, &filled),
                 SIEVE_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(sieve_matcher_fill_draft_tree(m, tokens, parents, 2, rows, words - 1, &filled),
                 SIEVE_STATUS_INSUFFICIENT_SIZE);
    CHECK_STATUS(sieve_matcher_fill_draft_tree(m, NULL, parents, 2, rows, words, &filled),
                 SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_matcher_fill_draft_tree(m, tokens, parents, 2, rows, words, NULL),
                 SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_matcher_fill_draft_tree(m, tokens, parents, SIZE_MAX, rows, words, &filled),
                 SIEVE_STATUS_INVALID_ARGUMENT);
    CHECK(filled == 99 && rows[0] == 0xabababab && rows[3 * words - 1] == 0xabababab);
    /* An empty tree: row 0 only. */
    CHECK_OK(sieve_matcher_fill_draft_tree(m, NULL, NULL, 0, rows, words, &filled));
    CHECK(filled == 1);

    /* A matcher in error: the status, zero rows, still in error. */
    CHECK_OK(sieve_matcher_reset(m));
    CHECK_OK(sieve_matcher_compute_mask(m, before, words));
    uint32_t refused = 0;
    while (bit(before, refused)) {
        refused++;
    }
    CHECK_STATUS(sieve_matcher_consume_token(m, refused), SIEVE_STATUS_TOKEN_REJECTED);
    CHECK_STATUS(sieve_matcher_fill_draft_tree(m, tokens, parents, 2, rows, words, &filled),
                 SIEVE_STATUS_MATCHER_ERROR);
    for (size_t k = 0; k < 3 * words; k++) {
        CHECK(rows[k] == 0);
    }
    CHECK(sieve_matcher_error_status(m) != SIEVE_STATUS_OK);

    /* Batches: three matchers at different positions, trees of 5, 0 and 7 nodes, equal to
     * one call per matcher; then a matcher listed twice, a bad parent, decreasing offsets. */
    {
        sieve_matcher *ms[3] = {NULL, NULL, NULL};
        const size_t sizes[3] = {5, 0, 7};
        size_t offsets[4] = {0, 5, 5, 12};
        uint32_t btokens[12];
        int32_t bparents[12];
        for (int i = 0; i < 3; i++) {
            CHECK_OK(sieve_matcher_new(g, &ms[i]));
            for (int k = 0; k < i * 2; k++) {
                CHECK_OK(sieve_matcher_compute_mask(ms[i], before, words));
                CHECK_OK(sieve_matcher_consume_token(ms[i], pick(before, words, eos)));
            }
            CHECK_OK(sieve_matcher_compute_mask(ms[i], before, words));
            for (size_t k = 0; k < sizes[i]; k++) {
                size_t at = offsets[i] + k;
                bparents[at] = (int32_t)below((uint32_t)k + 1) - 1;
                btokens[at] = pick(before, words, eos);
            }
        }
        size_t total_rows = 12 + 3;
        uint32_t *batch = calloc(total_rows * words, sizeof(uint32_t));
        CHECK(batch != NULL);
        size_t bfilled[3] = {99, 99, 99};
        uint32_t statuses[3] = {99, 99, 99};
        CHECK_OK(sieve_fill_draft_trees(ms, 3, btokens, bparents, offsets, batch, words,
                                        bfilled, statuses));
        for (int i = 0; i < 3; i++) {
            size_t one = 0;
            CHECK_OK(sieve_matcher_fill_draft_tree(ms[i], btokens + offsets[i],
                                                   bparents + offsets[i], sizes[i], rows, words,
                                                   &one));
            CHECK(statuses[i] == SIEVE_STATUS_OK && bfilled[i] == one);
            CHECK(memcmp(batch + (offsets[i] + (size_t)i) * words, rows,
                         (sizes[i] + 1) * words * sizeof(uint32_t)) == 0);
        }
        sieve_matcher *twice[2] = {ms[0], ms[0]};
        size_t offsets2[3] = {0, 1, 2};
        CHECK_STATUS(sieve_fill_draft_trees(twice, 2, btokens, bparents, offsets2, batch, words,
                                            bfilled, statuses),
                     SIEVE_STATUS_INVALID_ARGUMENT);
        int32_t saved = bparents[6];
        bparents[6] = 1; /* node 1 of the third request: not before itself */
        memset(batch, 0xab, total_rows * words * sizeof(uint32_t));
        bfilled[0] = bfilled[1] = bfilled[2] = 77;
        statuses[0] = statuses[1] = statuses[2] = 77;
        CHECK_STATUS(sieve_fill_draft_trees(ms, 3, btokens, bparents, offsets, batch, words,
                                            bfilled, statuses),
                     SIEVE_STATUS_INVALID_ARGUMENT);
        CHECK(batch[0] == 0xabababab && batch[total_rows * words - 1] == 0xabababab);
        CHECK(bfilled[0] == 77 && bfilled[2] == 77 && statuses[0] == 77 && statuses[2] == 77);
        bparents[6] = saved;
        size_t decreasing[4] = {0, 5, 4, 12};
        CHECK_STATUS(sieve_fill_draft_trees(ms, 3, btokens, bparents, decreasing, batch, words,
                                            bfilled, statuses),
                     SIEVE_STATUS_INVALID_ARGUMENT);
        CHECK(batch[0] == 0xabababab);
        /* A matcher in error: its status and zero rows; the others are filled. */
        uint32_t refused_b = 0;
        CHECK_OK(sieve_matcher_compute_mask(ms[1], before, words));
        while (bit(before, refused_b)) {
            refused_b++;
        }
        CHECK_STATUS(sieve_matcher_consume_token(ms[1], refused_b), SIEVE_STATUS_TOKEN_REJECTED);
        CHECK_STATUS(sieve_fill_draft_trees(ms, 3, btokens, bparents, offsets, batch, words,
                                            bfilled, statuses),
                     SIEVE_STATUS_MATCHER_ERROR);
        CHECK(statuses[0] == SIEVE_STATUS_OK && statuses[2] == SIEVE_STATUS_OK);
        CHECK(statuses[1] == SIEVE_STATUS_MATCHER_ERROR && bfilled[1] == 0);
        for (size_t k = 0; k < words; k++) {
            CHECK(batch[(offsets[1] + 1) * words + k] == 0);
        }
        free(batch);
        for (int i = 0; i < 3; i++) {
            sieve_matcher_free(ms[i]);
        }
        printf("draft_tree: batch ok\n");
    }

    free(rows);
    free(want);
    free(before);
    free(after);
    sieve_matcher_free(m);
    sieve_grammar_free(g);
    sieve_tokenizer_free(tok);
    /* No pool thread left when main returns (valgrind's leak check). */
    CHECK_OK(sieve_shutdown_threads());
    printf("draft_tree: ok\n");
    return 0;
}
