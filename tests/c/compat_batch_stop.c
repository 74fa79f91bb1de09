/* The LLGuidance-compatible calls a serving loop uses around the per-sequence ones:
 *   - llg_par_compute_mask, synchronous and with a completion callback (the host overlaps
 *     the masks with its forward pass and waits on a condition variable), checked row by row
 *     against llg_compute_mask on clones, then malformed batches;
 *   - LlgParserLimits mapped onto sieve's budgets (tiny limits fail with the budget named,
 *     zeroed limits mean the defaults) for constraints and matchers;
 *   - the stop controller (stop regex with held-back text, stop tokens, special tokens,
 *     UTF-8 split over tokens, clones, errors);
 *   - llg_decode_tokens, llg_stringify_tokens, llg_tokenize_bytes_marker, llg_get_version;
 *   - sieve.h's pool calls around llg_par_compute_mask: a pool of one thread still runs the
 *     callback on a library thread, sieve_shutdown_threads waits for a pending callback and
 *     is refused inside one, and the program ends with no library thread left (valgrind).
 * The tokenizer is a v2 byte table with 0xFF-marked specials and two EOS ids. */
#include <pthread.h>
#include <stdatomic.h>

#include "compat_common.h"
#include "sieve.h" /* sieve_set_num_threads, sieve_shutdown_threads */

static const char *WORDS[] = {"Hello", " world", "ST", "OP", "\n", "{\"", "\":", "\",\"",
                              "\"}", "name", "age", "42", "\xC3", "\xA9"};
#define N_ASCII 95
#define N_WORDS (sizeof WORDS / sizeof WORDS[0])
#define N_TOK (N_ASCII + N_WORDS + 3)
#define ROW_WORDS 8 /* rows are wider than the mask (a padded model vocabulary) */

static char ascii_text[N_ASCII][2];
static const char *texts[N_TOK];
static unsigned char specials[N_TOK];
static token_table table = {N_TOK, texts, specials};
static uint32_t END, EOT, TOOL; /* EOS, extra EOS, a special that is not EOS */
static size_t WORDS_NEEDED;

static uint32_t id_of(const char *text) {
    for (size_t i = 0; i < N_TOK; i++) {
        if (strcmp(texts[i], text) == 0) {
            return (uint32_t)i;
        }
    }
    CHECK(!"no such token");
    return 0;
}

static LlgTokenizer *make_tokenizer(void) {
    for (int b = 0x20; b < 0x7f; b++) {
        ascii_text[b - 0x20][0] = (char)b;
        texts[b - 0x20] = ascii_text[b - 0x20];
    }
    for (size_t w = 0; w < N_WORDS; w++) {
        texts[N_ASCII + w] = WORDS[w];
    }
    END = N_ASCII + N_WORDS;
    EOT = END + 1;
    TOOL = END + 2;
    texts[END] = "<|end|>";
    texts[EOT] = "<|eot|>";
    texts[TOOL] = "<|tool|>";
    specials[END] = specials[EOT] = specials[TOOL] = 1;
    uint8_t bytes[1024];
    uint32_t lens[N_TOK];
    size_t at = 0;
    for (size_t i = 0; i < N_TOK; i++) {
        size_t l = strlen(texts[i]);
        if (specials[i]) {
            bytes[at++] = 0xFF;
        }
        memcpy(bytes + at, texts[i], l);
        at += l;
        lens[i] = (uint32_t)(l + specials[i]);
    }
    LlgTokenizerInitV2 init;
    memset(&init, 0, sizeof init);
    init.struct_size = sizeof init;
    init.vocab_size = N_TOK;
    init.tok_eos = END;
    init.token_lens = lens;
    init.token_bytes = bytes;
    init.tok_eos_extra = &EOT;
    init.tok_eos_extra_count = 1;
    char err[256];
    LlgTokenizer *tok = llg_new_tokenizer_v2(&init, err, sizeof err);
    if (tok == NULL) {
        fprintf(stderr, "llg_new_tokenizer_v2: %s\n", err);
        exit(1);
    }
    WORDS_NEEDED = (N_TOK + 31) / 32;
    CHECK(WORDS_NEEDED < ROW_WORDS);
    return tok;
}

/* ---- llg_par_compute_mask ---- */

#define N_SEQ 3
static const char *SCHEMA =
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
    "\"age\":{\"type\":\"integer\"}},\"required\":[\"name\",\"age\"],"
    "\"additionalProperties\":false}";
static const char *TARGETS[N_SEQ] = {"{\"name\":\"Hello\",\"age\":42}", "Hello world world.",
                                     "Hello!"};

static void new_constraints(const LlgConstraintInit *init, LlgConstraint **cc) {
    cc[0] = llg_new_constraint_json(init, SCHEMA);
    cc[1] = llg_new_constraint_regex(init, "Hello( world)+\\.");
    cc[2] = llg_new_constraint_lark(init, "start: greeting \"!\"\ngreeting: \"Hello\" | \"Hi\"\n");
    for (int i = 0; i < N_SEQ; i++) {
        if (llg_get_error(cc[i]) != NULL) {
            fprintf(stderr, "constraint %d: %s\n", i, llg_get_error(cc[i]));
            exit(1);
        }
    }
}

/* Row i must equal what llg_compute_mask gives on the reference clone: the mask, or only
 * the primary EOS bit when is_stop; the padding words are zero. Returns is_stop. */
static int check_row(const uint32_t *row, LlgConstraint *ref) {
    LlgMaskResult r;
    CHECK(llg_compute_mask(ref, &r) == 0);
    for (size_t w = 0; w < ROW_WORDS; w++) {
        uint32_t want = 0;
        if (w < WORDS_NEEDED) {
            want = r.is_stop ? (w == END / 32 ? 1u << (END % 32) : 0) : r.sample_mask[w];
        }
        CHECK(row[w] == want);
    }
    return r.is_stop;
}

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    atomic_int calls;
    pthread_t main_thread;
    int on_other_thread;
} done_state;

static void on_done(const void *user_data) {
    done_state *d = (done_state *)user_data;
    pthread_mutex_lock(&d->lock);
    d->on_other_thread = !pthread_equal(pthread_self(), d->main_thread);
    atomic_fetch_add(&d->calls, 1);
    pthread_cond_signal(&d->cond);
    pthread_mutex_unlock(&d->lock);
}

static void wait_done(done_state *d, int calls) {
    pthread_mutex_lock(&d->lock);
    while (atomic_load(&d->calls) < calls) {
        pthread_cond_wait(&d->cond, &d->lock);
    }
    pthread_mutex_unlock(&d->lock);
}

/* Decodes all N_SEQ sequences in lockstep: one llg_par_compute_mask per step (sync, or
 * async with a callback the "forward pass" waits for), each row checked against the
 * reference clone, then a target-driven sample committed to both. */
static void batch_decode(const LlgConstraintInit *init, int async) {
    LlgConstraint *cc[N_SEQ], *ref[N_SEQ];
    new_constraints(init, cc);
    for (int i = 0; i < N_SEQ; i++) {
        ref[i] = llg_clone_constraint(cc[i]);
        CHECK(ref[i] != NULL);
    }
    uint32_t rows[N_SEQ][ROW_WORDS];
    size_t at[N_SEQ] = {0};
    int done[N_SEQ] = {0}, n_done = 0, batches = 0;
    done_state d = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    d.main_thread = pthread_self();
    atomic_init(&d.calls, 0);
    while (n_done < N_SEQ) {
        CHECK(batches < 64);
        LlgConstraintStep steps[N_SEQ];
        int idx[N_SEQ], n = 0;
        for (int i = 0; i < N_SEQ; i++) {
            if (!done[i]) {
                memset(rows[i], 0xAB, sizeof rows[i]); /* must all be overwritten */
                steps[n] = (LlgConstraintStep){cc[i], rows[i], sizeof rows[i]};
                idx[n++] = i;
            }
        }
        if (async) {
            llg_par_compute_mask(steps, (size_t)n, &d, on_done);
            /* ... the host's forward pass would run here ... */
            wait_done(&d, batches + 1);
            CHECK(d.on_other_thread);
        } else {
            llg_par_compute_mask(steps, (size_t)n, NULL, NULL);
        }
        batches++;
        for (int k = 0; k < n; k++) {
            int i = idx[k];
            CHECK(llg_get_error(cc[i]) == NULL);
            if (check_row(rows[i], ref[i])) {
                CHECK(at[i] == strlen(TARGETS[i]));
                CHECK(llg_is_stopped(cc[i]));
                done[i] = 1;
                n_done++;
                continue;
            }
            long t = pick_token(&table, rows[i], TARGETS[i] + at[i]);
            CHECK(t >= 0);
            LlgCommitResult a, b;
            CHECK(llg_commit_token(cc[i], (uint32_t)t, &a) == 0);
            CHECK(llg_commit_token(ref[i], (uint32_t)t, &b) == 0);
            CHECK(a.n_tokens == 1 && b.n_tokens == 1 && a.tokens[0] == (uint32_t)t);
            at[i] += strlen(texts[t]);
        }
    }
    CHECK(atomic_load(&d.calls) == (async ? batches : 0));
    printf("par_compute_mask %s: %d batches, all %d sequences done\n", async ? "async" : "sync",
           batches, N_SEQ);
    for (int i = 0; i < N_SEQ; i++) {
        llg_free_constraint(cc[i]);
        llg_free_constraint(ref[i]);
    }
}

static void expect_error(LlgConstraint *c, const char *needle) {
    const char *e = llg_get_error(c);
    if (e == NULL || strstr(e, needle) == NULL) {
        fprintf(stderr, "expected an error containing \"%s\", got %s\n", needle,
                e ? e : "(none)");
        exit(1);
    }
    LlgMaskResult r;
    CHECK(llg_compute_mask(c, &r) == -1); /* sticky */
}

static int row_is(const uint32_t *row, size_t words, uint32_t value) {
    for (size_t w = 0; w < words; w++) {
        if (row[w] != value) {
            return 0;
        }
    }
    return 1;
}

static void bad_batches(const LlgConstraintInit *init) {
    LlgConstraint *cc[N_SEQ];
    uint32_t rows[4][ROW_WORDS];
    done_state d = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    d.main_thread = pthread_self();
    atomic_init(&d.calls, 0);

    /* NULL steps with n > 0: no work, but the callback still comes (so no host deadlocks). */
    llg_par_compute_mask(NULL, 3, &d, on_done);
    wait_done(&d, 1);
    llg_par_compute_mask(NULL, 0, NULL, NULL);

    /* Sizes: not a multiple of 4; shorter than the mask; NULL row. A NULL constraint is
     * skipped and its row left alone. */
    new_constraints(init, cc);
    memset(rows, 0xAB, sizeof rows);
    LlgConstraintStep steps[4] = {
        {cc[0], rows[0], WORDS_NEEDED * 4 + 2},
        {cc[1], rows[1], (WORDS_NEEDED - 1) * 4},
        {cc[2], NULL, WORDS_NEEDED * 4},
        {NULL, rows[3], sizeof rows[3]},
    };
    llg_par_compute_mask(steps, 4, NULL, NULL);
    expect_error(cc[0], "multiple of 4");
    expect_error(cc[1], "mask_byte_len");
    expect_error(cc[2], "mask_dest is NULL");
    CHECK(row_is(rows[0], WORDS_NEEDED, 0));
    CHECK(row_is(rows[1], WORDS_NEEDED - 1, 0));
    CHECK(row_is(rows[3], ROW_WORDS, 0xABABABABu));
    /* A constraint in error gets a zeroed row and stays in error. */
    memset(rows[0], 0xAB, sizeof rows[0]);
    LlgConstraintStep again = {cc[0], rows[0], sizeof rows[0]};
    llg_par_compute_mask(&again, 1, &d, on_done);
    wait_done(&d, 2);
    CHECK(row_is(rows[0], ROW_WORDS, 0));
    expect_error(cc[0], "multiple of 4");
    for (int i = 0; i < N_SEQ; i++) {
        llg_free_constraint(cc[i]);
    }

    /* A constraint listed twice, and two constraints whose rows overlap. */
    new_constraints(init, cc);
    memset(rows, 0xAB, sizeof rows);
    LlgConstraintStep dup[4] = {
        {cc[0], rows[0], sizeof rows[0]},
        {cc[0], rows[1], sizeof rows[1]},
        {cc[1], rows[2], sizeof rows[2]},
        {cc[2], rows[2] + 1, sizeof rows[2]},
    };
    llg_par_compute_mask(dup, 4, NULL, NULL);
    expect_error(cc[0], "listed twice");
    expect_error(cc[1], "overlap");
    expect_error(cc[2], "overlap");
    CHECK(row_is(rows[0], ROW_WORDS, 0) && row_is(rows[1], ROW_WORDS, 0));
    for (int i = 0; i < N_SEQ; i++) {
        llg_free_constraint(cc[i]);
    }
    printf("malformed batches: each constraint involved is in error, rows zeroed\n");
}

/* A completion callback that tries to shut the pool down (or resize it) from the pool's own
 * thread: both are refused. */
static atomic_int shutdown_in_cb = -1, resize_in_cb = -1;

static void on_done_shutdown(const void *user_data) {
    atomic_store(&shutdown_in_cb, (int)sieve_shutdown_threads());
    atomic_store(&resize_in_cb, (int)sieve_set_num_threads(3));
    on_done(user_data);
}

/* The pool around llg_par_compute_mask: a callback still pending when the host shuts the
 * pool down has run when sieve_shutdown_threads returns. */
static void pool_calls(const LlgConstraintInit *init) {
    LlgConstraint *cc[N_SEQ];
    uint32_t rows[N_SEQ][ROW_WORDS];
    done_state d = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    d.main_thread = pthread_self();
    atomic_init(&d.calls, 0);
    new_constraints(init, cc);
    LlgConstraintStep steps[N_SEQ];
    for (int i = 0; i < N_SEQ; i++) {
        steps[i] = (LlgConstraintStep){cc[i], rows[i], sizeof rows[i]};
    }
    llg_par_compute_mask(steps, N_SEQ, &d, on_done_shutdown);
    CHECK(sieve_shutdown_threads() == SIEVE_STATUS_OK);
    CHECK(atomic_load(&d.calls) == 1 && d.on_other_thread);
    CHECK(atomic_load(&shutdown_in_cb) == SIEVE_STATUS_INVALID_ARGUMENT);
    CHECK(atomic_load(&resize_in_cb) == SIEVE_STATUS_INVALID_ARGUMENT);
    for (int i = 0; i < N_SEQ; i++) {
        CHECK(llg_get_error(cc[i]) == NULL);
        CHECK(!row_is(rows[i], WORDS_NEEDED, 0));
        llg_free_constraint(cc[i]);
    }
    printf("pool: shutdown waited for the pending callback; refused inside it\n");
}

/* ---- LlgParserLimits ---- */

static void limits(const LlgTokenizer *tok) {
    LlgConstraintInit init;
    llg_constraint_init_set_defaults(&init, tok);
    init.log_stderr_level = 0;
    CHECK(init.limits.max_items_in_row == 2000 && init.limits.step_lexer_fuel == 200000);

    /* A tiny grammar-size budget: the schema no longer compiles. */
    LlgConstraintInit small = init;
    small.limits.max_grammar_size = 1;
    LlgConstraint *c = llg_new_constraint_json(&small, SCHEMA);
    expect_error(c, "max_grammar_size");
    llg_free_constraint(c);
    LlgMatcher *m = llg_new_matcher(&small, "json", SCHEMA);
    CHECK(llg_matcher_is_error(m));
    CHECK(strstr(llg_matcher_get_error(m), "max_grammar_size") != NULL);
    llg_free_matcher(m);

    /* A tiny lexer-state budget: compiling or the first mask fails, naming it. */
    small = init;
    small.limits.max_lexer_states = 1;
    c = llg_new_constraint_json(&small, SCHEMA);
    LlgMaskResult r;
    if (llg_get_error(c) == NULL) {
        CHECK(llg_compute_mask(c, &r) == -1);
    }
    expect_error(c, "max_lexer_states");
    printf("tiny lexer-state budget: %s\n", llg_get_error(c));
    llg_free_constraint(c);

    /* Tiny per-mask work: a mask of the JSON grammar runs out (the first few may fit; one
     * on the way through the first key does not). */
    small = init;
    small.limits.step_lexer_fuel = 1;
    small.limits.step_max_items = 1;
    c = llg_new_constraint_json(&small, SCHEMA);
    if (llg_get_error(c) == NULL) {
        const char *text = "{\"name\":\"ab\",\"age\":12}";
        int failed = 0;
        for (const char *p = text; *p != 0 && !failed; p++) {
            char one[2] = {*p, 0};
            LlgCommitResult cr;
            failed = llg_compute_mask(c, &r) == -1 || llg_commit_token(c, id_of(one), &cr) != 0;
        }
        CHECK(failed);
    }
    CHECK(llg_get_error(c) != NULL && strstr(llg_get_error(c), "limit") != NULL);
    printf("tiny per-mask budgets: %s\n", llg_get_error(c));
    llg_free_constraint(c);

    /* Zeroed limits mean the defaults; ten times the defaults work too. */
    LlgConstraintInit zero = init;
    memset(&zero.limits, 0, sizeof zero.limits);
    LlgConstraintInit big = init;
    big.limits.max_items_in_row *= 10;
    big.limits.initial_lexer_fuel *= 10;
    big.limits.step_lexer_fuel *= 10;
    big.limits.step_max_items *= 10;
    big.limits.max_lexer_states *= 10;
    big.limits.max_grammar_size *= 10;
    const LlgConstraintInit *ok[] = {&init, &zero, &big};
    for (int i = 0; i < 3; i++) {
        c = llg_new_constraint_json(ok[i], SCHEMA);
        CHECK(llg_get_error(c) == NULL);
        CHECK(llg_compute_mask(c, &r) == 0 && !r.is_stop);
        CHECK(bit_set(r.sample_mask, id_of("{\"")));
        llg_free_constraint(c);
    }
    printf("limits: max_grammar_size, max_lexer_states, per-mask work enforced; 0 = default\n");
}

/* ---- Stop controller ---- */

/* Commits `text` token by token (greedy over the table) and appends what comes out. */
static int commit_text(LlgStopController *sc, const char *text, char *out, size_t cap) {
    uint32_t ids[64];
    size_t n = greedy_tokenize(&table, (const uint8_t *)text, strlen(text), ids, 64);
    CHECK(n <= 64);
    int stopped = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = 12345;
        bool is_stopped = false;
        const char *piece = llg_stop_commit_token(sc, ids[i], &len, &is_stopped);
        CHECK(piece != NULL && strlen(piece) == len);
        CHECK(strlen(out) + len < cap);
        strcat(out, piece);
        stopped = is_stopped;
    }
    return stopped;
}

static void stop_controller(const LlgTokenizer *tok) {
    char err[128], out[256] = "";
    uint32_t stops[] = {EOT};
    LlgStopController *sc = llg_new_stop_controller(tok, stops, 1, "STOP|\n\n", err, sizeof err);
    CHECK(sc != NULL);
    CHECK(!commit_text(sc, "Hello world", out, sizeof out));
    CHECK(strcmp(out, "Hello world") == 0);
    /* "ST" may begin "STOP": held back until "x" rules it out. */
    CHECK(!commit_text(sc, " ST", out, sizeof out));
    CHECK(strcmp(out, "Hello world ") == 0);
    CHECK(!commit_text(sc, "x", out, sizeof out));
    CHECK(strcmp(out, "Hello world STx") == 0);
    CHECK(!commit_text(sc, "ST", out, sizeof out));
    LlgStopController *branch = llg_clone_stop_controller(sc);
    CHECK(branch != NULL);
    /* "OP" completes the stop sequence: it is never shown and the sequence ends. */
    CHECK(commit_text(sc, "OP", out, sizeof out));
    CHECK(strcmp(out, "Hello world STx") == 0);
    size_t len = 1;
    bool is_stopped = false;
    const char *piece = llg_stop_commit_token(sc, id_of("H"), &len, &is_stopped);
    CHECK(piece != NULL && len == 0 && piece[0] == '\0' && is_stopped);

    /* The clone kept "ST" pending; "!" releases it; then "\n\n" stops. */
    char out2[256] = "";
    CHECK(!commit_text(branch, "!\n", out2, sizeof out2));
    CHECK(strcmp(out2, "ST!") == 0);
    CHECK(commit_text(branch, "\n", out2, sizeof out2));
    CHECK(strcmp(out2, "ST!") == 0);
    llg_free_stop_controller(branch);
    llg_free_stop_controller(sc);

    /* A stop token releases what was held back; a special token that is not one is shown by
     * name; a character split over two tokens comes out whole. */
    sc = llg_new_stop_controller(tok, stops, 1, "STOP", err, sizeof err);
    CHECK(sc != NULL);
    out[0] = '\0';
    CHECK(!commit_text(sc, "\xC3", out, sizeof out));
    CHECK(out[0] == '\0');
    CHECK(!commit_text(sc, "\xA9", out, sizeof out));
    CHECK(strcmp(out, "\xC3\xA9") == 0);
    piece = llg_stop_commit_token(sc, TOOL, &len, &is_stopped);
    CHECK(piece != NULL && strcmp(piece, "<|tool|>") == 0 && len == 8 && !is_stopped);
    CHECK(!commit_text(sc, "ST", out, sizeof out));
    CHECK(strcmp(out, "\xC3\xA9") == 0);
    piece = llg_stop_commit_token(sc, EOT, &len, &is_stopped);
    CHECK(piece != NULL && strcmp(piece, "ST") == 0 && len == 2 && is_stopped);
    /* NULL outputs: NULL back, nothing changes. */
    CHECK(llg_stop_commit_token(sc, EOT, NULL, &is_stopped) == NULL);
    CHECK(llg_stop_commit_token(NULL, EOT, &len, &is_stopped) == NULL);
    llg_free_stop_controller(sc);

    /* No regex, no stop tokens: everything passes through. */
    sc = llg_new_stop_controller(tok, NULL, 0, NULL, err, sizeof err);
    CHECK(sc != NULL);
    out[0] = '\0';
    CHECK(!commit_text(sc, "STOP\n\n", out, sizeof out));
    CHECK(strcmp(out, "STOP\n\n") == 0);
    llg_free_stop_controller(sc);

    /* Errors: NULL (and a message) back. */
    CHECK(llg_new_stop_controller(NULL, NULL, 0, NULL, err, sizeof err) == NULL);
    CHECK(strstr(err, "tokenizer is NULL") != NULL);
    CHECK(llg_new_stop_controller(tok, NULL, 0, "(", err, sizeof err) == NULL);
    CHECK(strstr(err, "stop_rx") != NULL);
    CHECK(llg_new_stop_controller(tok, NULL, 0, "x*", err, sizeof err) == NULL);
    CHECK(strstr(err, "empty string") != NULL);
    uint32_t bad = N_TOK + 5;
    CHECK(llg_new_stop_controller(tok, &bad, 1, NULL, err, sizeof err) == NULL);
    CHECK(strstr(err, "stop token") != NULL);
    CHECK(llg_new_stop_controller(tok, NULL, 2, NULL, NULL, 0) == NULL);
    llg_free_stop_controller(NULL);
    CHECK(llg_clone_stop_controller(NULL) == NULL);
    printf("stop controller: held-back text, stop regex, stop tokens, specials, UTF-8, clones\n");
}

/* ---- Decoding and marker tokenization ---- */

static void decode(const LlgTokenizer *tok) {
    uint32_t ids[] = {id_of("Hello"), id_of(" world"), TOOL, id_of("\xC3")};
    char buf[64];
    /* Without specials; invalid UTF-8 kept as is. */
    size_t need = llg_decode_tokens(tok, ids, 4, buf, sizeof buf, LLG_DECODE_NONE);
    CHECK(need == strlen("Hello world\xC3") + 1 && strcmp(buf, "Hello world\xC3") == 0);
    need = llg_decode_tokens(tok, ids, 4, buf, sizeof buf,
                             LLG_DECODE_INCLUDE_SPECIAL | LLG_DECODE_VALID_UTF8);
    CHECK(strcmp(buf, "Hello world<|tool|>\xEF\xBF\xBD") == 0 && need == strlen(buf) + 1);
    /* Size query, then truncation (always NUL-terminated). */
    CHECK(llg_decode_tokens(tok, ids, 2, NULL, 0, 0) == 12);
    CHECK(llg_decode_tokens(tok, ids, 2, buf, 6, 0) == 12 && strcmp(buf, "Hello") == 0);
    CHECK(llg_decode_tokens(NULL, ids, 2, buf, sizeof buf, 0) == 0);
    CHECK(llg_decode_tokens(tok, NULL, 2, buf, sizeof buf, 0) == 0);
    CHECK(llg_decode_tokens(tok, NULL, 0, buf, sizeof buf, 0) == 1 && buf[0] == '\0');
    CHECK(llg_stringify_tokens(NULL, ids, 2, buf, sizeof buf) == 0);

    char s[128];
    need = llg_stringify_tokens(tok, ids, 3, s, sizeof s);
    CHECK(need == strlen(s) + 1);
    CHECK(strstr(s, "\"Hello\"") != NULL && strstr(s, "\" world\"") != NULL);
    CHECK(strstr(s, "<|tool|>") != NULL);

    /* 0xFF<name> and 0xFF[id] are special tokens; other text is tokenized as usual. */
    char text[64];
    snprintf(text, sizeof text, "Hello\xFF<|tool|> world\xFF[%u]", (unsigned)END);
    uint32_t got[8];
    size_t n = llg_tokenize_bytes_marker(tok, (const uint8_t *)text, strlen(text), got, 8);
    CHECK(n == 4);
    CHECK(got[0] == id_of("Hello") && got[1] == TOOL && got[2] == id_of(" world") &&
          got[3] == END);
    CHECK(llg_tokenize_bytes_marker(tok, (const uint8_t *)text, strlen(text), NULL, 0) == 4);
    CHECK(llg_tokenize_bytes_marker(NULL, (const uint8_t *)text, strlen(text), got, 8) == 0);
    CHECK(llg_tokenize_bytes_marker(tok, NULL, 3, got, 8) == 0);
    /* A marker naming no special token: the text cannot be tokenized. */
    CHECK(llg_tokenize_bytes_marker(tok, (const uint8_t *)"a\xFF<|nope|>", 10, got, 8) == 0);
    CHECK(strncmp(llg_get_version(), "sieve@", 6) == 0);
    printf("decode, stringify (%s), marker tokenize, version %s\n", s, llg_get_version());
}

int main(void) {
    LlgTokenizer *tok = make_tokenizer();
    LlgConstraintInit init;
    llg_constraint_init_set_defaults(&init, tok);
    batch_decode(&init, 0);
    batch_decode(&init, 1);
    /* One thread per batch: the async call still runs (and calls back) on a pool thread. */
    CHECK(sieve_set_num_threads(1) == SIEVE_STATUS_OK);
    batch_decode(&init, 0);
    batch_decode(&init, 1);
    CHECK(sieve_set_num_threads(2) == SIEVE_STATUS_OK);
    bad_batches(&init);
    pool_calls(&init);
    limits(tok);
    stop_controller(tok);
    decode(tok);
    llg_free_tokenizer(tok);
    /* No library thread is left when main returns. */
    CHECK(sieve_shutdown_threads() == SIEVE_STATUS_OK);
    printf("compat batch/stop ok\n");
    return 0;
}
