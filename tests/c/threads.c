/* Threads: N pthreads compute masks on distinct matchers of one shared grammar (and one
 * shared tokenizer) and must see exactly the masks of a single-threaded run; then the batch
 * API on the library's pool (at several sizes, shut down and started again) and on a host
 * executor (a small pthread pool), the most expensive item first, plus executor misbehaviour.
 * Ends with sieve_shutdown_threads, so that no library thread is left when main returns (the
 * program runs under valgrind). Tokenizer: argv[1] (tokenizer.json) if readable, else a small
 * byte table. */
#include <pthread.h>
#include <stdatomic.h>

#include "common.h"

#define N_THREADS 4
#define MAX_STEPS 48

static const sieve_tokenizer *tok;
static const sieve_grammar *grammar;
static size_t words;
static const uint32_t *eos;
static size_t n_eos;
static uint32_t script[MAX_STEPS];
static size_t n_script;
static uint32_t *expected; /* (n_script + 1) masks: before each token and after the last */

/* Whether token t is allowed by the mask and not an EOS id. */
static int usable(const uint32_t *mask, size_t t) {
    if (!mask_bit(mask, (uint32_t)t)) {
        return 0;
    }
    for (size_t e = 0; e < n_eos; e++) {
        if (eos[e] == t) {
            return 0;
        }
    }
    return 1;
}

/* The `k % count`-th usable token, or -1 if there is none. */
static long nth_allowed(const uint32_t *mask, size_t k) {
    size_t vocab = sieve_tokenizer_vocab_size(tok), count = 0;
    for (size_t t = 0; t < vocab; t++) {
        count += (size_t)usable(mask, t);
    }
    if (count == 0) {
        return -1;
    }
    size_t target = k % count;
    for (size_t t = 0; t < vocab; t++) {
        if (usable(mask, t) && target-- == 0) {
            return (long)t;
        }
    }
    return -1;
}

/* Single-threaded reference: a deterministic varied path (the (7 * step)-th allowed token)
 * and the mask before every step. */
static void reference(void) {
    sieve_matcher *m = NULL;
    CHECK_OK(sieve_matcher_new(grammar, &m));
    expected = calloc((MAX_STEPS + 1) * words, sizeof *expected);
    CHECK(expected != NULL);
    n_script = 0;
    for (;;) {
        uint32_t *row = expected + n_script * words;
        CHECK_OK(sieve_matcher_compute_mask(m, row, words));
        if (n_script == MAX_STEPS) {
            break;
        }
        long t = nth_allowed(row, 7 * n_script);
        if (t < 0) {
            break;
        }
        script[n_script++] = (uint32_t)t;
        CHECK_OK(sieve_matcher_consume_token(m, (uint32_t)t));
    }
    sieve_matcher_free(m);
    printf("reference: %zu steps\n", n_script);
}

static void *worker(void *arg) {
    size_t id = (size_t)arg;
    uint32_t *mask = calloc(words, sizeof *mask);
    CHECK(mask != NULL);
    for (int round = 0; round < 3; round++) {
        sieve_matcher *m = NULL;
        CHECK_OK(sieve_matcher_new(grammar, &m));
        for (size_t step = 0; step <= n_script; step++) {
            CHECK_OK(sieve_matcher_compute_mask(m, mask, words));
            if (memcmp(mask, expected + step * words, words * sizeof *mask) != 0) {
                fprintf(stderr, "thread %zu: mask differs at step %zu\n", id, step);
                exit(1);
            }
            if (step < n_script) {
                CHECK_OK(sieve_matcher_consume_token(m, script[step]));
            }
        }
        sieve_matcher_free(m);
    }
    free(mask);
    return NULL;
}

/* A host executor: a pool of pthreads that pull item indices from an atomic counter. */
typedef struct {
    atomic_size_t next;
    size_t n_items;
    sieve_run_item_fn run_item;
    void *job;
    atomic_int calls;
} pool_t;

static void *pool_worker(void *arg) {
    pool_t *p = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n_items) {
            return NULL;
        }
        p->run_item(p->job, i);
    }
}

static void pool_executor(void *ctx, size_t n_items, sieve_run_item_fn run_item, void *job) {
    pool_t *p = ctx;
    atomic_store(&p->next, 0);
    p->n_items = n_items;
    p->run_item = run_item;
    p->job = job;
    atomic_fetch_add(&p->calls, 1);
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        CHECK(pthread_create(&th[i], NULL, pool_worker, p) == 0);
    }
    for (int i = 0; i < 3; i++) {
        CHECK(pthread_join(th[i], NULL) == 0);
    }
}

/* Runs item 0 only: the most expensive matcher. */
static void first_only_executor(void *ctx, size_t n_items, sieve_run_item_fn run_item,
                                void *job) {
    (void)ctx;
    if (n_items > 0) {
        run_item(job, 0);
    }
}

/* Misbehaving executors: one skips item 0, one runs every item twice. */
static void skipping_executor(void *ctx, size_t n_items, sieve_run_item_fn run_item, void *job) {
    (void)ctx;
    for (size_t i = 1; i < n_items; i++) {
        run_item(job, i);
    }
}

static void twice_executor(void *ctx, size_t n_items, sieve_run_item_fn run_item, void *job) {
    (void)ctx;
    for (size_t i = 0; i < n_items; i++) {
        run_item(job, i);
        run_item(job, i);
    }
    run_item(job, n_items + 5); /* out of range: ignored */
}

/* Matcher i advanced by i * n_script / n tokens. */
static void batch_matchers(sieve_matcher **ms, size_t n, size_t *steps) {
    for (size_t i = 0; i < n; i++) {
        ms[i] = NULL;
        CHECK_OK(sieve_matcher_new(grammar, &ms[i]));
        steps[i] = i * n_script / n;
        CHECK_OK(sieve_matcher_consume_tokens(ms[i], script, steps[i]));
    }
}

static void check_rows(const uint32_t *masks, const uint32_t *statuses, size_t n,
                       const size_t *steps) {
    for (size_t i = 0; i < n; i++) {
        CHECK(statuses[i] == SIEVE_STATUS_OK);
        CHECK(memcmp(masks + i * words, expected + steps[i] * words, words * sizeof *masks) == 0);
    }
}

/* The batch on pools of several sizes (8 oversubscribes), shut down and started again. */
static void pool_sizes(sieve_matcher **ms, size_t n, const size_t *steps, uint32_t *masks,
                       uint32_t *statuses) {
    CHECK(sieve_num_threads() >= 1);
    CHECK_STATUS(sieve_set_num_threads(0), SIEVE_STATUS_INVALID_ARGUMENT);
    static const size_t sizes[] = {1, 2, 3, 8, 2};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        CHECK_OK(sieve_set_num_threads(sizes[k]));
        CHECK(sieve_num_threads() == sizes[k]);
        for (int round = 0; round < 3; round++) {
            memset(masks, 0xAB, n * words * sizeof *masks);
            CHECK_OK(sieve_compute_masks(ms, n, masks, words, statuses));
            check_rows(masks, statuses, n, steps);
        }
        if (k == 2) {
            CHECK_OK(sieve_shutdown_threads());
            CHECK_OK(sieve_shutdown_threads());
        }
    }
    printf("batch: pools of 1, 2, 3, 8 threads, and after a shutdown: ok\n");
}

/* After a skipping executor: exactly one matcher (item 0's) failed, with a zero row. */
static void check_one_skipped(const uint32_t *masks, const uint32_t *statuses, size_t n,
                              const size_t *steps) {
    size_t skipped = n;
    for (size_t i = 0; i < n; i++) {
        if (statuses[i] == SIEVE_STATUS_CALLBACK_ERROR) {
            CHECK(skipped == n);
            skipped = i;
            CHECK(popcount_mask(masks + i * words, words) == 0);
        } else {
            CHECK(statuses[i] == SIEVE_STATUS_OK);
            CHECK(memcmp(masks + i * words, expected + steps[i] * words,
                         words * sizeof *masks) == 0);
        }
    }
    CHECK(skipped < n);
}

/* Every matcher's mask is made the copy of its last one, except the last matcher's, which
 * moves on a token: the host executor's item 0 (the most expensive) is that matcher. */
static void most_expensive_first(sieve_matcher **ms, size_t n, size_t *steps, uint32_t *masks,
                                 uint32_t *statuses) {
    CHECK_OK(sieve_compute_masks(ms, n, masks, words, statuses));
    if (steps[n - 1] < n_script) {
        CHECK_OK(sieve_matcher_consume_token(ms[n - 1], script[steps[n - 1]]));
        steps[n - 1]++;
        CHECK_STATUS(sieve_compute_masks_with_executor(ms, n, masks, words, statuses,
                                                       first_only_executor, NULL),
                     SIEVE_STATUS_CALLBACK_ERROR);
        CHECK(statuses[n - 1] == SIEVE_STATUS_OK);
        CHECK(memcmp(masks + (n - 1) * words, expected + steps[n - 1] * words,
                     words * sizeof *masks) == 0);
        for (size_t i = 0; i + 1 < n; i++) {
            CHECK(statuses[i] == SIEVE_STATUS_CALLBACK_ERROR);
        }
        CHECK_OK(sieve_compute_masks(ms, n, masks, words, statuses));
        check_rows(masks, statuses, n, steps);
        printf("batch: the host executor's item 0 is the most expensive matcher\n");
    }
}

static void batch(void) {
    enum { N = 6 };
    sieve_matcher *ms[N];
    size_t steps[N];
    batch_matchers(ms, N, steps);
    uint32_t *masks = calloc(N * words, sizeof *masks);
    uint32_t statuses[N];
    CHECK(masks != NULL);

    CHECK_OK(sieve_compute_masks(ms, N, masks, words, statuses));
    check_rows(masks, statuses, N, steps);
    printf("batch: %d matchers on library threads: ok\n", N);

    pool_sizes(ms, N, steps, masks, statuses);

    pool_t pool;
    atomic_init(&pool.next, 0);
    atomic_init(&pool.calls, 0);
    memset(masks, 0xAB, N * words * sizeof *masks);
    CHECK_OK(sieve_compute_masks_with_executor(ms, N, masks, words, statuses, pool_executor, &pool));
    check_rows(masks, statuses, N, steps);
    CHECK(atomic_load(&pool.calls) == 1);
    printf("batch: %d matchers on a host executor: ok\n", N);

    memset(masks, 0xAB, N * words * sizeof *masks);
    CHECK_OK(sieve_compute_masks_with_executor(ms, N, masks, words, statuses, twice_executor, NULL));
    check_rows(masks, statuses, N, steps);

    memset(masks, 0xAB, N * words * sizeof *masks);
    CHECK_STATUS(sieve_compute_masks_with_executor(ms, N, masks, words, statuses,
                                                   skipping_executor, NULL),
                 SIEVE_STATUS_CALLBACK_ERROR);
    check_one_skipped(masks, statuses, N, steps);
    most_expensive_first(ms, N, steps, masks, statuses);

    /* Argument errors write nothing. */
    sieve_matcher *dup[2] = {ms[0], ms[0]};
    statuses[0] = 12345;
    CHECK_STATUS(sieve_compute_masks(dup, 2, masks, words, statuses),
                 SIEVE_STATUS_INVALID_ARGUMENT);
    CHECK(statuses[0] == 12345);
    sieve_matcher *holes[2] = {ms[0], NULL};
    CHECK_STATUS(sieve_compute_masks(holes, 2, masks, words, statuses),
                 SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_compute_masks(ms, N, NULL, words, statuses), SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_compute_masks_with_executor(ms, N, masks, words, statuses, NULL, NULL),
                 SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_compute_masks(ms, N, masks, (size_t)-1, statuses),
                 SIEVE_STATUS_INVALID_ARGUMENT);
    CHECK_OK(sieve_compute_masks(NULL, 0, NULL, 0, NULL));

    /* A short row is that item's INSUFFICIENT_SIZE; one matcher in error is MATCHER_ERROR. */
    if (words > 1) {
        CHECK_STATUS(sieve_compute_masks(ms, N, masks, words - 1, statuses),
                     SIEVE_STATUS_INSUFFICIENT_SIZE);
        CHECK(statuses[0] == SIEVE_STATUS_INSUFFICIENT_SIZE);
    }
    uint32_t vocab = (uint32_t)sieve_tokenizer_vocab_size(tok);
    CHECK_STATUS(sieve_matcher_consume_token(ms[2], vocab), SIEVE_STATUS_TOKEN_OUT_OF_RANGE);
    CHECK_STATUS(sieve_compute_masks(ms, N, masks, words, statuses), SIEVE_STATUS_MATCHER_ERROR);
    CHECK(statuses[2] == SIEVE_STATUS_MATCHER_ERROR && statuses[1] == SIEVE_STATUS_OK);
    CHECK(popcount_mask(masks + 2 * words, words) == 0);

    for (size_t i = 0; i < N; i++) {
        sieve_matcher_free(ms[i]);
    }
    free(masks);
}

int main(int argc, char **argv) {
    tok = load_tokenizer(argc > 1 ? argv[1] : NULL);
    words = sieve_tokenizer_mask_words(tok);
    CHECK_OK(sieve_tokenizer_eos_tokens(tok, &eos, &n_eos));
    const char *src =
        "start: item (\",\" item)*\n"
        "item: WORD | NUMBER | \"[\" start \"]\"\n"
        "WORD: /[a-z]{2,6}/\n"
        "NUMBER: /[0-9]+(\\.[0-9]+)?/\n";
    CHECK_OK(sieve_grammar_new(tok, SIEVE_GRAMMAR_KIND_LARK, (const uint8_t *)src, strlen(src),
                               NULL, &grammar, NULL));
    reference();

    pthread_t th[N_THREADS];
    for (size_t i = 0; i < N_THREADS; i++) {
        CHECK(pthread_create(&th[i], NULL, worker, (void *)i) == 0);
    }
    for (size_t i = 0; i < N_THREADS; i++) {
        CHECK(pthread_join(th[i], NULL) == 0);
    }
    printf("threads: %d threads x 3 rounds match the single-threaded masks\n", N_THREADS);

    batch();
    sieve_grammar_free(grammar);
    sieve_tokenizer_free(tok);
    free(expected);
    /* Joins every library thread: none runs (or holds thread-local memory) after this. */
    CHECK_OK(sieve_shutdown_threads());
    printf("threads: ok\n");
    return 0;
}
