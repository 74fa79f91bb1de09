/* GBNF through the LLGuidance-compatible layer, in llama.cpp's call order (as
 * compat_llama_cpp.c replays it): llama.cpp hands LLGuidance its grammars as type "lark"
 * (llama_sampler_init_llg(vocab, "lark", text)); GBNF text there (no `%llguidance` header,
 * first definition with `::=`) compiles as GBNF, and types "gbnf" / "ebnf" / "grammar" name
 * it explicitly. Masks are checked at every step by a target-driven sampler. */
#include "compat_common.h"

static const char *WORDS[] = {"The", " answer", " is", " ", "42", "ing", "\n"};
#define N_ASCII 95
#define N_WORDS (sizeof WORDS / sizeof WORDS[0])
#define N_TOK (N_ASCII + N_WORDS + 1)
#define ID(c) ((uint32_t)((c) - 0x20))

static char ascii_text[N_ASCII][2];
static const char *texts[N_TOK];
static unsigned char specials[N_TOK];
static token_table table = {N_TOK, texts, specials};

static size_t tokenize_cb(const void *user_data, const uint8_t *bytes, size_t len, uint32_t *out,
                          size_t cap) {
    return greedy_tokenize((const token_table *)user_data, bytes, len, out, cap);
}

/* llama_sampler_llg_apply: the saved mask, computed only when it is NULL. */
static const uint32_t *llg_apply(LlgMatcher *m) {
    const uint32_t *mask = llg_matcher_get_mask(m);
    if (mask == NULL) {
        CHECK(llg_matcher_compute_mask(m) == 0);
        mask = llg_matcher_get_mask(m);
    }
    CHECK(mask != NULL);
    return mask;
}

/* The sampling loop: `target`, then EOS; every step's pick must be allowed. */
static void generate(LlgMatcher *m, uint32_t eos, const char *target) {
    size_t at = 0, tlen = strlen(target);
    for (int step = 0; step < 100; step++) {
        const uint32_t *mask = llg_apply(m);
        long tok;
        if (at < tlen) {
            tok = pick_token(&table, mask, target + at);
            CHECK(tok >= 0);
            at += strlen(texts[tok]);
        } else {
            CHECK(bit_set(mask, eos));
            tok = (long)eos;
        }
        (void)llg_matcher_consume_token(m, (uint32_t)tok);
        CHECK(llg_matcher_get_error(m) == NULL);
        if (llg_matcher_is_stopped(m)) {
            CHECK(at == tlen);
            return;
        }
    }
    CHECK(!"no stop within 100 steps");
}

static const char *ANSWER_GBNF = "# llama.cpp's format\n"
                                 "root ::= \"The answer is \" num\n"
                                 "num ::= [0-9]+\n";

/* After "The answer is ": digits (and "42") only; after "4": digits and EOS. */
static void check_answer(LlgMatcher *m, uint32_t eos) {
    CHECK(m != NULL && llg_matcher_get_error(m) == NULL);
    CHECK(llg_matcher_consume_token(m, N_ASCII) == 0);     /* "The" */
    CHECK(llg_matcher_consume_token(m, N_ASCII + 1) == 0); /* " answer" */
    CHECK(llg_matcher_consume_token(m, N_ASCII + 2) == 0); /* " is" */
    CHECK(llg_matcher_consume_token(m, N_ASCII + 3) == 0); /* " " */
    const uint32_t *mask = llg_apply(m);
    for (uint32_t t = 0; t < N_TOK; t++) {
        int digit = t >= ID('0') && t <= ID('9');
        CHECK(bit_set(mask, t) == (digit || t == N_ASCII + 4 /* "42" */));
    }
    CHECK(llg_matcher_consume_token(m, ID('4')) == 0);
    mask = llg_apply(m);
    CHECK(bit_set(mask, eos) && bit_set(mask, ID('2')) && !bit_set(mask, ID('a')));
    CHECK(llg_matcher_is_accepting(m));
    CHECK(llg_matcher_reset(m) == 0);
    generate(m, eos, "The answer is 42");
}

int main(void) {
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
    LlgTokenizer *tok = llg_new_tokenizer(&tinit, err, sizeof err);
    CHECK(tok != NULL);

    /* llama_sampler_init_llg: clone the tokenizer, defaults, new matcher with type "lark". */
    LlgTokenizer *tok2 = llg_clone_tokenizer(tok);
    LlgConstraintInit cinit;
    memset(&cinit, 0, sizeof cinit);
    llg_constraint_init_set_defaults(&cinit, tok2);
    cinit.log_stderr_level = 0;
    LlgMatcher *m = llg_new_matcher(&cinit, "lark", ANSWER_GBNF);
    CHECK(m != NULL);
    if (llg_matcher_get_error(m) != NULL) {
        fprintf(stderr, "GBNF as \"lark\": %s\n", llg_matcher_get_error(m));
    }
    check_answer(m, eos);
    llg_free_matcher(m);
    llg_free_tokenizer(tok2);
    cinit.tokenizer = tok;

    /* The explicit types. */
    const char *kinds[] = {"gbnf", "ebnf", "grammar"};
    for (size_t k = 0; k < 3; k++) {
        m = llg_new_matcher(&cinit, kinds[k], ANSWER_GBNF);
        check_answer(m, eos);
        llg_free_matcher(m);
    }
    /* A constraint too (llg_new_constraint_any). */
    LlgConstraint *cc = llg_new_constraint_any(&cinit, "gbnf", ANSWER_GBNF);
    CHECK(cc != NULL && llg_get_error(cc) == NULL);
    llg_free_constraint(cc);
    printf("compat_gbnf: masks checked (\"lark\", \"gbnf\", \"ebnf\", \"grammar\")\n");

    /* Lark stays Lark: a `%llguidance` header, or a first definition with `:`, even when a
     * later line has `::=` inside a string. */
    const char *lark = "%llguidance {}\nstart: \"The\" X\nX: \" ::= \"\n";
    m = llg_new_matcher(&cinit, "lark", lark);
    CHECK(llg_matcher_get_error(m) == NULL);
    generate(m, eos, "The ::= ");
    llg_free_matcher(m);
    const char *lark2 = "start: \"The\" x\nx: \"::=\"\n";
    m = llg_new_matcher(&cinit, "lark", lark2);
    CHECK(llg_matcher_get_error(m) == NULL);
    generate(m, eos, "The::=");
    llg_free_matcher(m);

    /* GBNF errors: the matcher is in the error state; validate writes "line:col: ...". */
    const char *bad = "root ::= \"a\" x\nx ::= \"b\" @ \"c\"\n";
    m = llg_new_matcher(&cinit, "lark", bad);
    CHECK(m != NULL && llg_matcher_get_error(m) != NULL);
    CHECK(llg_matcher_compute_mask(m) == -1);
    llg_free_matcher(m);
    CHECK(llg_validate_grammar(&cinit, "gbnf", bad, err, sizeof err) == -1);
    printf("compat_gbnf: error: %s\n", err);
    CHECK(strncmp(err, "2:", 2) == 0);
    CHECK(llg_validate_grammar(&cinit, "gbnf", ANSWER_GBNF, err, sizeof err) == 0 && err[0] == 0);

    llg_free_tokenizer(tok);
    printf("compat_gbnf: ok\n");
    return 0;
}
