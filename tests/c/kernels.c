/* The mask kernels through the C ABI: a batch of real masks (sieve_compute_masks) applied
 * with sieve_apply_mask_f32_batch and checked row by row against sieve_apply_mask_f32 and
 * against the mask bits; sparse masking (sieve_apply_mask_sparse_f32) over candidate lists
 * with ids inside, at the end of and past the mask; NULL and overflow arguments. */
#include <math.h>
#include <stdint.h>

#include "common.h"

static int bit(const uint32_t *mask, size_t words, uint32_t id) {
    return id / 32 < words && ((mask[id / 32] >> (id % 32)) & 1u);
}

static float logit_of(size_t row, size_t i) {
    return (float)(row * 7 + i % 97) * 0.25f - 3.0f;
}

static void batch(const sieve_tokenizer *tok, uint32_t eos) {
    enum { N = 4 };
    size_t words = sieve_tokenizer_mask_words(tok);
    size_t vocab = sieve_tokenizer_vocab_size(tok);
    const char *src = "start: WORD (\",\" WORD)*\nWORD: /[a-z]{1,4}/\n";
    const sieve_grammar *grammar = NULL;
    CHECK_OK(sieve_grammar_new(tok, SIEVE_GRAMMAR_KIND_LARK, (const uint8_t *)src, strlen(src),
                               NULL, &grammar, NULL));
    sieve_matcher *ms[N];
    for (size_t i = 0; i < N; i++) {
        ms[i] = NULL;
        CHECK_OK(sieve_matcher_new(grammar, &ms[i]));
        /* Row i has consumed i letters: different masks per row. */
        for (size_t k = 0; k < i; k++) {
            CHECK_OK(sieve_matcher_consume_token(ms[i], (uint32_t)'a' - 32));
        }
    }
    uint32_t *masks = calloc(N * words, sizeof *masks);
    float *logits = malloc(N * vocab * sizeof *logits);
    float *row = malloc(vocab * sizeof *row);
    uint32_t statuses[N];
    CHECK(masks != NULL && logits != NULL && row != NULL);
    CHECK_OK(sieve_compute_masks(ms, N, masks, words, statuses));
    for (size_t r = 0; r < N; r++) {
        for (size_t i = 0; i < vocab; i++) {
            logits[r * vocab + i] = logit_of(r, i);
        }
    }
    CHECK_OK(sieve_apply_mask_f32_batch(logits, N, vocab, masks, words));
    size_t allowed = 0;
    for (size_t r = 0; r < N; r++) {
        for (size_t i = 0; i < vocab; i++) {
            row[i] = logit_of(r, i);
        }
        CHECK_OK(sieve_apply_mask_f32(row, vocab, masks + r * words, words));
        CHECK(memcmp(row, logits + r * vocab, vocab * sizeof *row) == 0);
        for (size_t i = 0; i < vocab; i++) {
            float want = bit(masks + r * words, words, (uint32_t)i) ? logit_of(r, i) : -INFINITY;
            CHECK(logits[r * vocab + i] == want);
            allowed += want != -INFINITY;
        }
    }
    CHECK(allowed > 0);
    (void)eos;

    /* Sparse: candidates of row 1 spread over the vocabulary, plus ids past it. */
    enum { K = 37 };
    uint32_t ids[K];
    float sparse[K + 3];
    for (size_t i = 0; i < K; i++) {
        ids[i] = i + 2 < K ? (uint32_t)((i * 131 + 5) % vocab) : (uint32_t)(vocab + 40 * i);
        sparse[i] = (float)i;
    }
    for (size_t i = K; i < K + 3; i++) {
        sparse[i] = 1.0f;
    }
    const uint32_t *m1 = masks + 1 * words;
    CHECK_OK(sieve_apply_mask_sparse_f32(sparse, K + 3, ids, K, m1, words));
    for (size_t i = 0; i < K; i++) {
        CHECK(sparse[i] == (bit(m1, words, ids[i]) ? (float)i : -INFINITY));
    }
    for (size_t i = K; i < K + 3; i++) {
        CHECK(sparse[i] == -INFINITY); /* no candidate id */
    }

    for (size_t i = 0; i < N; i++) {
        sieve_matcher_free(ms[i]);
    }
    free(masks);
    free(logits);
    free(row);
    sieve_grammar_free(grammar);
    printf("kernels: batch of %d rows and sparse candidates match the masks\n", N);
}

static void bad_arguments(void) {
    float logits[40];
    uint32_t ids[2] = {0, 33};
    uint32_t mask[2] = {0x1u, 0x2u};
    for (int i = 0; i < 40; i++) {
        logits[i] = 1.0f;
    }
    CHECK_STATUS(sieve_apply_mask_sparse_f32(NULL, 2, ids, 2, mask, 2),
                 SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_apply_mask_sparse_f32(logits, 2, NULL, 2, mask, 2),
                 SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_apply_mask_sparse_f32(logits, 2, ids, 2, NULL, 2),
                 SIEVE_STATUS_NULL_ARGUMENT);
    CHECK(logits[0] == 1.0f);
    CHECK_OK(sieve_apply_mask_sparse_f32(NULL, 0, NULL, 0, NULL, 0));
    CHECK_OK(sieve_apply_mask_sparse_f32(logits, 2, ids, 2, mask, 2));
    CHECK(logits[0] == 1.0f && logits[1] == 1.0f);
    CHECK_OK(sieve_apply_mask_sparse_f32(logits, 2, ids, 2, NULL, 0));
    CHECK(logits[0] == -INFINITY && logits[1] == -INFINITY);

    CHECK_STATUS(sieve_apply_mask_f32_batch(NULL, 2, 20, mask, 1), SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_apply_mask_f32_batch(logits, 2, 20, NULL, 1),
                 SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_apply_mask_f32_batch(logits, SIZE_MAX, 2, mask, 1),
                 SIEVE_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(sieve_apply_mask_f32_batch(logits, 2, 20, mask, SIZE_MAX),
                 SIEVE_STATUS_INVALID_ARGUMENT);
    CHECK_OK(sieve_apply_mask_f32_batch(NULL, 0, 20, NULL, 1));
    CHECK_OK(sieve_apply_mask_f32_batch(NULL, 2, 0, mask, 1));
    for (int i = 0; i < 40; i++) {
        logits[i] = 1.0f;
    }
    /* Two rows of 20, one mask word each: row 0 keeps token 0, row 1 keeps token 1. */
    CHECK_OK(sieve_apply_mask_f32_batch(logits, 2, 20, mask, 1));
    for (int i = 0; i < 40; i++) {
        CHECK(logits[i] == ((i == 0 || i == 21) ? 1.0f : -INFINITY));
    }
    printf("kernels: bad arguments rejected\n");
}

int main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    uint32_t eos;
    const sieve_tokenizer *tok = small_tokenizer(&eos);
    batch(tok, eos);
    bad_arguments();
    sieve_tokenizer_free(tok);
    CHECK_OK(sieve_shutdown_threads()); /* sieve_compute_masks started the pool */
    printf("kernels: ok\n");
    return 0;
}
