/* Replays onnxruntime-genai's guidance logits processor (src/constrained_logits_processor.cpp)
 * against sieve's LLGuidance-compatible layer: a tokenizer from tokenizer.json text plus a
 * tokenize callback, llg_constraint_init_set_defaults with ff_tokens_ok = false,
 * llg_new_constraint_json / _regex / _lark (and llg_new_constraint), then per step
 * llg_compute_mask (sample_mask, or an EOS-only mask when is_stop) + sample +
 * llg_commit_token for every row including finished ones, llg_get_error on failure, and
 * llg_free_*. */
#include "compat_common.h"

/* A small byte-level BPE tokenizer.json, built at run time. Byte-level spelling: printable
 * ASCII is itself, space is U+0120 "Ġ". Ids: 0..93 are '!'..'~', then words, then the
 * special end-of-text token. */
static const char *WORDS[] = {" ", "{\"", "\":", "\",\"", "\"}", "name", "age", "true", "12", "no"};
#define N_ASCII 94
#define N_WORDS (sizeof WORDS / sizeof WORDS[0])
#define N_TOK (N_ASCII + N_WORDS + 1)
#define VOCAB_SIZE (N_TOK + 3) /* models often pad their vocabulary */

static char ascii_text[N_ASCII][2];
static const char *texts[N_TOK];
static unsigned char specials[N_TOK];
static token_table table = {N_TOK, texts, specials};
static uint32_t EOS;

static void append_piece(char *json, size_t *at, const char *text) {
    for (const char *p = text; *p; p++) {
        if (*p == ' ') {
            json[(*at)++] = (char)0xC4; /* U+0120 */
            json[(*at)++] = (char)0xA0;
        } else if (*p == '"' || *p == '\\') {
            json[(*at)++] = '\\';
            json[(*at)++] = *p;
        } else {
            json[(*at)++] = *p;
        }
    }
}

static char *make_tokenizer_json(void) {
    char *json = malloc(16384);
    CHECK(json != NULL);
    size_t at = 0;
    at += (size_t)sprintf(json, "{\"pre_tokenizer\":{\"type\":\"ByteLevel\"},"
                                "\"model\":{\"type\":\"BPE\",\"merges\":[],\"vocab\":{");
    for (size_t i = 0; i < N_TOK; i++) {
        if (i > 0) {
            json[at++] = ',';
        }
        json[at++] = '"';
        append_piece(json, &at, texts[i]);
        at += (size_t)sprintf(json + at, "\":%zu", i);
    }
    at += (size_t)sprintf(json + at,
                          "}},\"added_tokens\":[{\"id\":%u,\"content\":\"%s\",\"special\":true}]}",
                          EOS, texts[EOS]);
    return json;
}

static int tokenize_calls = 0;

/* onnxruntime-genai's tokenize_partial: the model tokenizer behind a thread-safe callback. */
static size_t tokenize_partial(const void *user_data, const uint8_t *bytes, size_t len,
                               uint32_t *out, size_t cap) {
    tokenize_calls++;
    return greedy_tokenize((const token_table *)user_data, bytes, len, out, cap);
}

/* ConstrainedLogitsProcessor: ComputeMask + CommitTokens until the constraint stops, with
 * LLGuidance's stop semantics: a committed EOS comes back as the token with is_stop false; the
 * next mask is the stop (is_stop, NULL mask); the host still commits a token for the finished
 * row (onnxruntime-genai commits every row of the batch at every step), which appends nothing
 * and reports the stop; a further mask fails with "compute_mask() called after stop".
 * `want_stop_mask`: the grammar must end by itself (a stop mask before any EOS is sampled). */
static void run(LlgConstraint *cc, const char *target, int want_stop_mask) {
    size_t words = (VOCAB_SIZE - 1) / 32 + 1;
    uint32_t *mask = calloc(words, sizeof *mask);
    CHECK(mask != NULL);
    size_t at = 0, tlen = strlen(target);
    int eos_committed = 0, ended_by_itself = 0;
    for (int step = 0; step < 200; step++) {
        LlgMaskResult mr;
        if (llg_compute_mask(cc, &mr) != 0) {
            fprintf(stderr, "llg_compute_mask: %s\n", llg_get_error(cc));
            exit(1);
        }
        if (mr.is_stop) {
            /* onnxruntime-genai: an EOS-only mask. */
            CHECK(mr.sample_mask == NULL && llg_is_stopped(cc));
            memset(mask, 0, words * sizeof *mask);
            mask[EOS / 32] = 1u << (EOS % 32);
            ended_by_itself = !eos_committed;
        } else {
            CHECK(mr.sample_mask != NULL && !llg_is_stopped(cc) && !eos_committed);
            memcpy(mask, mr.sample_mask, words * sizeof *mask);
        }
        long tok;
        if (at < tlen) {
            CHECK(!mr.is_stop);
            tok = pick_token(&table, mask, target + at);
            CHECK(tok >= 0);
            at += strlen(texts[tok]);
        } else {
            CHECK(bit_set(mask, EOS));
            tok = (long)EOS;
        }
        LlgCommitResult cr;
        if (llg_commit_token(cc, (uint32_t)tok, &cr) != 0) {
            fprintf(stderr, "llg_commit_token: %s\n", llg_get_error(cc));
            exit(1);
        }
        if (mr.is_stop) {
            /* The finished row's commit: nothing appended, still stopped, no error. */
            CHECK(cr.n_tokens == 0 && cr.is_stop && llg_is_stopped(cc));
            CHECK(llg_get_error(cc) == NULL);
            CHECK(!want_stop_mask || ended_by_itself);
            /* A mask asked for after the stop is LLGuidance's error, and it is sticky. */
            CHECK(llg_compute_mask(cc, &mr) == -1);
            const char *err = llg_get_error(cc);
            CHECK(err != NULL && strcmp(err, "compute_mask() called after stop") == 0);
            CHECK(llg_commit_token(cc, EOS, &cr) == -1 && llg_get_error(cc) == err);
            free(mask);
            return;
        }
        /* ff_tokens_ok = false: exactly the sampled token comes back, EOS included. */
        CHECK(cr.n_tokens == 1 && cr.tokens[0] == (uint32_t)tok && !cr.is_stop);
        eos_committed = (uint32_t)tok == EOS;
    }
    CHECK(!"no stop within 200 steps");
}

/* The batch path of ConstrainedLogitsProcessor: one constraint per row; every step computes
 * every row's mask (an EOS-only mask for a stopped row), samples, and commits a token for
 * every row, finished rows included, so rows end at different steps. Before each commit the
 * processor checks a draft (speculative decoding) on clones: llg_clone_constraint per row,
 * commit the draft tokens on the clone, keep the original. */
#define N_ROWS 3
static void batch(const LlgConstraintInit *init) {
    const char *targets[N_ROWS] = {"12", "123-ab", "9-abcdef"};
    LlgConstraint *rows[N_ROWS];
    size_t at[N_ROWS] = {0};
    int stopped_at[N_ROWS] = {-1, -1, -1};
    size_t words = (VOCAB_SIZE - 1) / 32 + 1;
    uint32_t *mask = calloc(N_ROWS * words, sizeof *mask);
    CHECK(mask != NULL);
    for (int r = 0; r < N_ROWS; r++) {
        rows[r] = llg_new_constraint_regex(init, "[0-9]+(-[a-z]+)?");
        CHECK(llg_get_error(rows[r]) == NULL);
    }
    for (int step = 0; step < 40; step++) {
        int live = 0;
        for (int r = 0; r < N_ROWS; r++) {
            uint32_t *row = mask + r * words;
            LlgMaskResult mr;
            if (stopped_at[r] >= 0) {
                /* ComputeMask skips a finished row: its mask stays EOS-only. */
                continue;
            }
            CHECK(llg_compute_mask(rows[r], &mr) == 0);
            if (mr.is_stop) {
                stopped_at[r] = step;
                memset(row, 0, words * sizeof *row);
                row[EOS / 32] = 1u << (EOS % 32);
                continue;
            }
            live++;
            memcpy(row, mr.sample_mask, words * sizeof *row);
        }
        if (!live) {
            break;
        }
        for (int r = 0; r < N_ROWS; r++) {
            uint32_t *row = mask + r * words;
            size_t tlen = strlen(targets[r]);
            long tok = at[r] < tlen ? pick_token(&table, row, targets[r] + at[r]) : (long)EOS;
            CHECK(tok >= 0 && bit_set(row, (uint32_t)tok));
            if (stopped_at[r] < 0 && at[r] < tlen) {
                /* Speculative draft on a clone: the sampled token, then "!" (never valid here). */
                LlgConstraint *draft = llg_clone_constraint(rows[r]);
                LlgCommitResult dr;
                CHECK(llg_commit_token(draft, (uint32_t)tok, &dr) == 0);
                CHECK(llg_commit_token(draft, '!' - 0x21, &dr) == -1);
                CHECK(llg_get_error(draft) != NULL && llg_get_error(rows[r]) == NULL);
                llg_free_constraint(draft);
                at[r] += strlen(texts[tok]);
            }
            LlgCommitResult cr;
            CHECK(llg_commit_token(rows[r], (uint32_t)tok, &cr) == 0);
            if (stopped_at[r] >= 0) {
                CHECK(cr.n_tokens == 0 && cr.is_stop);
            }
        }
    }
    /* Rows end after their own lengths: "12" first, "9-abcdef" last. */
    for (int r = 0; r < N_ROWS; r++) {
        CHECK(stopped_at[r] > 0 && at[r] == strlen(targets[r]));
        CHECK(llg_is_stopped(rows[r]) && llg_get_error(rows[r]) == NULL);
        llg_free_constraint(rows[r]);
    }
    CHECK(stopped_at[0] < stopped_at[1] && stopped_at[1] < stopped_at[2]);
    free(mask);
}

int main(void) {
    size_t id = 0;
    for (int b = 0x21; b < 0x7f; b++, id++) {
        ascii_text[id][0] = (char)b;
        ascii_text[id][1] = 0;
        texts[id] = ascii_text[id];
    }
    for (size_t w = 0; w < N_WORDS; w++) {
        texts[id++] = WORDS[w];
    }
    EOS = (uint32_t)id;
    texts[id] = "<|endoftext|>";
    specials[id++] = 1;
    CHECK(id == N_TOK);
    char *json = make_tokenizer_json();

    /* ConstrainedLogitsProcessor constructor: positional init as in onnxruntime-genai. */
    LlgTokenizerInit tokenizer_init = {
        (uint32_t)VOCAB_SIZE, /* vocab_size */
        EOS,                  /* tok_eos */
        NULL,                 /* token_lens */
        NULL,                 /* token_bytes */
        json,                 /* tokenizer_json */
        false,                /* tokenize_assumes_string */
        tokenize_partial,     /* tokenize_fn */
        false,                /* use_approximate_greedy_tokenize_fn */
        &table,               /* tokenize_user_data */
        NULL,                 /* slices */
    };
    char error_buf[256];
    LlgTokenizer *tok = llg_new_tokenizer(&tokenizer_init, error_buf, sizeof error_buf);
    if (tok == NULL) {
        fprintf(stderr, "llg_new_tokenizer: %s\n", error_buf);
        return 1;
    }
    free(json); /* the tokenizer keeps nothing pointing into it */
    uint32_t ids[4];
    CHECK(llg_tokenize_bytes(tok, (const uint8_t *)"name", 4, ids, 4) == 1);
    CHECK(ids[0] == N_ASCII + 5 && tokenize_calls == 1);

    LlgConstraintInit constraint_init;
    memset(&constraint_init, 0, sizeof constraint_init);
    llg_constraint_init_set_defaults(&constraint_init, tok);
    constraint_init.ff_tokens_ok = false;
    constraint_init.log_stderr_level = 0;

    /* json_schema */
    const char *schema = "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
                         "\"age\":{\"type\":\"integer\"}},\"required\":[\"name\",\"age\"],"
                         "\"additionalProperties\":false}";
    LlgConstraint *cc = llg_new_constraint_json(&constraint_init, schema);
    CHECK(cc != NULL && llg_get_error(cc) == NULL);
    LlgConstraint *cc2 = llg_clone_constraint(cc);
    run(cc, "{\"name\":\"Al\",\"age\":12}", 0);
    run(cc2, "{\"name\":\"no\",\"age\":7}", 0);
    llg_free_constraint(cc);
    llg_free_constraint(cc2);

    /* regex */
    cc = llg_new_constraint_regex(&constraint_init, "[0-9]{3}-[a-z]+");
    CHECK(llg_get_error(cc) == NULL);
    run(cc, "123-abc", 0);
    llg_free_constraint(cc);

    batch(&constraint_init);

    /* lark: after "no" the grammar can only end, so compute_mask says is_stop. */
    cc = llg_new_constraint_lark(&constraint_init, "start: \"yes\" | \"no\"\n");
    CHECK(llg_get_error(cc) == NULL && !llg_is_stopped(cc));
    run(cc, "no", 1);
    llg_free_constraint(cc);

    /* llg_new_constraint with LLGuidance's grammar list (JSON Schema and Lark forms). */
    cc = llg_new_constraint(&constraint_init,
                            "{\"grammars\":[{\"json_schema\":{\"type\":\"boolean\"}}]}");
    CHECK(llg_get_error(cc) == NULL);
    run(cc, "true", 0);
    llg_free_constraint(cc);
    cc = llg_new_constraint_any(&constraint_init, "lark", "start: \"12\"\n");
    CHECK(llg_get_error(cc) == NULL);
    run(cc, "12", 1);
    llg_free_constraint(cc);

    /* ff_tokens_ok = true: commit also returns the forced tokens. */
    LlgConstraintInit ff_init = constraint_init;
    ff_init.ff_tokens_ok = true;
    cc = llg_new_constraint_lark(&ff_init, "start: \"name\" \"age\" \"name\" /[0-9]+/\n");
    LlgCommitResult cr;
    LlgMaskResult mr;
    CHECK(llg_compute_mask(cc, &mr) == 0);
    int calls_before = tokenize_calls;
    CHECK(llg_commit_token(cc, N_ASCII + 5, &cr) == 0); /* "name" */
    CHECK(cr.n_tokens >= 2 && cr.tokens[0] == N_ASCII + 5 && cr.tokens[1] == N_ASCII + 6);
    /* The forced text is tokenized by the host's tokenize_fn, as LLGuidance does. */
    CHECK(tokenize_calls > calls_before);
    llg_free_constraint(cc);

    /* Errors as onnxruntime-genai sees them: a bad schema gives a constraint with an error;
     * a disallowed token makes llg_commit_token fail, stickily, with a stable message. */
    cc = llg_new_constraint_json(&constraint_init, "{\"type\":");
    CHECK(cc != NULL && llg_get_error(cc) != NULL && llg_is_stopped(cc));
    CHECK(llg_compute_mask(cc, &mr) == -1);
    llg_free_constraint(cc);
    /* Several grammars: grammar 0 is the start, the others are reached by @name. */
    cc = llg_new_constraint(&constraint_init,
                            "{\"grammars\":[{\"lark_grammar\":\"start: \\\"12\\\" @b\"},"
                            "{\"name\":\"b\",\"json_schema\":{\"type\":\"boolean\"}}]}");
    CHECK(llg_get_error(cc) == NULL);
    run(cc, "12true", 0);
    llg_free_constraint(cc);
    cc = llg_new_constraint(&constraint_init,
                            "{\"grammars\":[{\"lark_grammar\":\"start: @missing\"}]}");
    CHECK(llg_get_error(cc) != NULL && strstr(llg_get_error(cc), "missing") != NULL);
    llg_free_constraint(cc);
    cc = llg_new_constraint_regex(&constraint_init, "[0-9]+");
    CHECK(llg_compute_mask(cc, &mr) == 0);
    CHECK(llg_commit_token(cc, N_ASCII + 5, &cr) == -1);
    const char *msg = llg_get_error(cc);
    CHECK(msg != NULL);
    CHECK(llg_compute_mask(cc, &mr) == -1 && llg_commit_token(cc, 0x31 - 0x21, &cr) == -1);
    CHECK(llg_get_error(cc) == msg);
    LlgConstraint *copy = llg_clone_constraint(cc);
    CHECK(llg_get_error(copy) != NULL);
    llg_free_constraint(copy);
    llg_free_constraint(cc);
    cc = llg_new_constraint_regex(&constraint_init, "[0-9]+");
    CHECK(llg_commit_token(cc, VOCAB_SIZE + 10, &cr) == -1); /* out of range */
    llg_free_constraint(cc);
    cc = llg_new_constraint_regex(NULL, "x");
    CHECK(cc != NULL && llg_get_error(cc) != NULL);
    llg_free_constraint(cc);
    cc = llg_new_constraint_regex(&constraint_init, NULL);
    CHECK(cc != NULL && llg_get_error(cc) != NULL);
    llg_free_constraint(cc);
    CHECK(llg_compute_mask(NULL, &mr) == -1);
    llg_free_constraint(NULL);

    /* V2 with extra EOS ids: both end the sequence. */
    json = make_tokenizer_json();
    uint32_t extra[1] = {N_ASCII + 9}; /* "no" doubles as an end marker */
    LlgTokenizerInitV2 v2;
    memset(&v2, 0, sizeof v2);
    v2.struct_size = sizeof v2;
    v2.vocab_size = VOCAB_SIZE;
    v2.tok_eos = EOS;
    v2.tokenizer_json = json;
    v2.tok_eos_extra = extra;
    v2.tok_eos_extra_count = 1;
    LlgTokenizer *tok_v2 = llg_new_tokenizer_v2(&v2, error_buf, sizeof error_buf);
    free(json);
    CHECK(tok_v2 != NULL);
    LlgConstraintInit init_v2;
    memset(&init_v2, 0, sizeof init_v2);
    llg_constraint_init_set_defaults(&init_v2, tok_v2);
    cc = llg_new_constraint_regex(&init_v2, "[0-9]+");
    CHECK(llg_commit_token(cc, 0x31 - 0x21, &cr) == 0); /* "1" */
    CHECK(llg_compute_mask(cc, &mr) == 0 && !mr.is_stop);
    CHECK(bit_set(mr.sample_mask, EOS) && bit_set(mr.sample_mask, N_ASCII + 9));
    /* The extra EOS ends the sequence like the primary one: appended, then a stop mask. */
    CHECK(llg_commit_token(cc, N_ASCII + 9, &cr) == 0 && !cr.is_stop && cr.n_tokens == 1);
    CHECK(llg_compute_mask(cc, &mr) == 0 && mr.is_stop && llg_is_stopped(cc));
    llg_free_constraint(cc);
    v2.struct_size = 4; /* too small to hold vocab_size and tok_eos */
    CHECK(llg_new_tokenizer_v2(&v2, error_buf, sizeof error_buf) == NULL);
    llg_free_tokenizer(tok_v2);

    llg_free_tokenizer(tok);
    printf("compat_ort_genai: ok\n");
    return 0;
}
