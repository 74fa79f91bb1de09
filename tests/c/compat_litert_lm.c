/* Replays LiteRT-LM's llguidance constraint provider (runtime/components/logits_processor/
 * constrained_decoding/llg_constraint*.cc) against sieve's LLGuidance-compatible layer:
 *   - a tokenizer from its own token strings, the configured special tokens prefixed with
 *     0xFF, and a tokenize callback;
 *   - the functional constraint: each decoding state owns a constraint, ComputeNext clones the
 *     state (llg_clone_constraint) and commits the token on the clone (llg_commit_token),
 *     ComputeMask is llg_compute_mask on the state, expanded to one flag per token;
 *   - the tool-call grammars its generator writes (function calling with escaped strings
 *     between two <escape> tokens, any text as a (.|\n)-star terminal, `%ignore`, `(?:...)`
 *     groups in regexes, an empty alternative, a `TEXT? block` start) and its text-only
 *     grammar (any text `&` the complement of FORBIDDEN_CALL). The grammar texts are
 *     written here in the generator's shape. */
#include "compat_common.h"

static const char *WORDS[] = {"Sure", ".", "call", ":", "get_weather", "get_time", "{", "}",
                              "city", "Paris", " ", "\n", "12"};
#define N_ASCII 95
#define N_WORDS (sizeof WORDS / sizeof WORDS[0])
static const char *SPECIALS[] = {"<escape>", "<start_function_call>", "<end_function_call>",
                                 "<start_function_response>", "<eos>"};
#define N_SPECIAL (sizeof SPECIALS / sizeof SPECIALS[0])
#define N_TOK (N_ASCII + N_WORDS + N_SPECIAL)

static char ascii_text[N_ASCII][2];
static const char *texts[N_TOK];
static unsigned char specials[N_TOK];
static token_table table = {N_TOK, texts, specials};
#define ESC (N_ASCII + N_WORDS)
#define FC_START (ESC + 1)
#define FC_END (ESC + 2)
#define FC_RESP (ESC + 3)
#define EOS (ESC + 4)

static size_t tokenize_cb(const void *user_data, const uint8_t *bytes, size_t len, uint32_t *out,
                          size_t cap) {
    return greedy_tokenize((const token_table *)user_data, bytes, len, out, cap);
}

/* LlgConstraint::ComputeNext: a new state owning a clone with the token committed. */
static LlgConstraint *compute_next(const LlgConstraint *state, uint32_t token) {
    LlgConstraint *next = llg_clone_constraint(state);
    LlgCommitResult cr;
    CHECK(llg_commit_token(next, token, &cr) == 0);
    CHECK(cr.n_tokens == 1 && cr.tokens[0] == token);
    return next;
}

/* LlgConstraint::ComputeMask, expanded to one flag per token as LiteRT-LM does. */
static void compute_mask(LlgConstraint *state, unsigned char *allowed, int *is_stop) {
    LlgMaskResult mr;
    CHECK(llg_compute_mask(state, &mr) == 0);
    *is_stop = mr.is_stop;
    for (uint32_t t = 0; t < N_TOK; t++) {
        allowed[t] = mr.is_stop ? (t == EOS) : (unsigned char)bit_set(mr.sample_mask, t);
    }
}

/* Decodes `pieces` (text, or "\xFF" followed by a special token's index in SPECIALS) from
 * `start`, checking every step's mask, then expects a stop (`must_stop`) or takes EOS.
 * Every intermediate state is kept until the end, as a decoder keeping history would. */
static void decode(LlgConstraint *start, const char *const *pieces, int must_stop) {
    LlgConstraint *states[256];
    int n = 0;
    states[n++] = llg_clone_constraint(start);
    unsigned char allowed[N_TOK];
    int stop = 0;
    for (int p = 0; pieces[p] != NULL; p++) {
        const char *rest = pieces[p];
        if ((unsigned char)rest[0] == 0xFF) {
            uint32_t tok = ESC + (uint32_t)(rest[1] - '0');
            compute_mask(states[n - 1], allowed, &stop);
            CHECK(!stop && allowed[tok]);
            states[n] = compute_next(states[n - 1], tok);
            n++;
            continue;
        }
        while (*rest) {
            compute_mask(states[n - 1], allowed, &stop);
            CHECK(!stop);
            long best = -1;
            size_t best_len = 0;
            for (uint32_t t = 0; t < N_TOK; t++) {
                size_t l = specials[t] ? 0 : strlen(texts[t]);
                if (allowed[t] && l > best_len && strncmp(rest, texts[t], l) == 0) {
                    best = t;
                    best_len = l;
                }
            }
            CHECK(best >= 0);
            states[n] = compute_next(states[n - 1], (uint32_t)best);
            n++;
            rest += best_len;
            CHECK(n < 250);
        }
    }
    compute_mask(states[n - 1], allowed, &stop);
    if (must_stop) {
        CHECK(stop);
    } else {
        CHECK(!stop && allowed[EOS]);
        states[n] = compute_next(states[n - 1], EOS);
        n++;
        compute_mask(states[n - 1], allowed, &stop);
        CHECK(stop);
    }
    for (int i = 0; i < n; i++) {
        llg_free_constraint(states[i]);
    }
}

/* Whether the text (no specials) is accepted whole from `start`: commit greedy tokens on a
 * clone, then EOS must be allowed. */
static int accepts_text(const LlgConstraint *start, const char *text) {
    LlgConstraint *c = llg_clone_constraint(start);
    uint32_t ids[64];
    size_t n = greedy_tokenize(&table, (const uint8_t *)text, strlen(text), ids, 64);
    int ok = 1;
    LlgMaskResult mr;
    LlgCommitResult cr;
    for (size_t i = 0; i < n && ok; i++) {
        ok = llg_compute_mask(c, &mr) == 0 && !mr.is_stop && bit_set(mr.sample_mask, ids[i]) &&
             llg_commit_token(c, ids[i], &cr) == 0;
    }
    ok = ok && llg_compute_mask(c, &mr) == 0 && (mr.is_stop || bit_set(mr.sample_mask, EOS));
    llg_free_constraint(c);
    return ok;
}

static const char *FC_GRAMMAR =
    "TOOL_UNION: /get_weather|get_time/\n"
    "\n"
    "fc_esc_open: <escape>\n"
    "fc_esc_close: <escape>\n"
    "\n"
    "key: IDENTIFIER\n"
    "IDENTIFIER: /[a-zA-Z_][a-zA-Z0-9_]*/\n"
    "json_value: custom_string | NUMBER | BOOLEAN | NULL | object | array\n"
    "\n"
    "custom_string: fc_esc_open /(.|\\n)*/ fc_esc_close\n"
    "array: \"[\" [json_value (\",\" json_value)*] \"]\"\n"
    "object: \"{\" [pair (\",\" pair)*] \"}\"\n"
    "pair: key \":\" json_value\n"
    "\n"
    "// Primitives (Standard JSON)\n"
    "NUMBER: /-?(?:0|[1-9]\\d*)(?:\\.\\d+)?(?:[eE][+-]?\\d+)?/\n"
    "BOOLEAN: \"true\" | \"false\"\n"
    "NULL: \"null\"\n"
    "%ignore /[ \\t\\r\\n]+/\n"
    "\n"
    "start: TEXT_CONTENT? function_block_opt\n"
    "TEXT_CONTENT: /(.|\\n)+/\n"
    "function_block_opt: function_block |\n"
    "function_block: (fc_start \"call:\" TOOL_UNION object fc_end)+ fc_resp\n"
    "fc_start: <start_function_call>\n"
    "fc_end: <end_function_call>\n"
    "fc_resp: <start_function_response>\n";

static const char *TEXT_ONLY_GRAMMAR = "\n"
                                       "FORBIDDEN_CALL : /.*<start_function_call>.*/\n"
                                       "SAFE_TEXT : /(.|\\n)*/ & ~FORBIDDEN_CALL\n"
                                       "start : SAFE_TEXT\n";

int main(void) {
    /* The provider's tokenizer: its token strings, specials marked with 0xFF. */
    uint8_t bytes[4096];
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
    for (size_t s = 0; s < N_SPECIAL; s++) {
        texts[id] = SPECIALS[s];
        specials[id++] = 1;
    }
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
    LlgTokenizerInit tinit;
    memset(&tinit, 0, sizeof tinit);
    tinit.vocab_size = N_TOK;
    tinit.tok_eos = EOS;
    tinit.token_lens = lens;
    tinit.token_bytes = bytes;
    tinit.tokenize_fn = tokenize_cb;
    tinit.tokenize_user_data = &table;
    char err[512];
    LlgTokenizer *tok = llg_new_tokenizer(&tinit, err, sizeof err);
    CHECK(tok != NULL);
    LlgConstraintInit init;
    memset(&init, 0, sizeof init);
    llg_constraint_init_set_defaults(&init, tok);
    init.log_stderr_level = 0;

    /* Text, then two calls with an escaped string argument and a number, then the response
     * marker (after which only %ignore whitespace or the end may come). */
    LlgConstraint *fc = llg_new_constraint_lark(&init, FC_GRAMMAR);
    if (llg_get_error(fc) != NULL) {
        fprintf(stderr, "fc grammar: %s\n", llg_get_error(fc));
    }
    CHECK(llg_get_error(fc) == NULL);
    const char *call[] = {"Sure.\n",
                          "\xFF" "1",
                          "call:get_weather{city:",
                          "\xFF" "0",
                          "Paris {not json}\n:",
                          "\xFF" "0",
                          "}",
                          "\xFF" "2",
                          "\xFF" "1",
                          "call:get_time{ city : 12 }",
                          "\xFF" "2",
                          "\xFF" "3",
                          NULL};
    decode(fc, call, 0); /* %ignore whitespace may still follow: EOS, not a stop */
    /* Text alone is a whole answer; a call directly, too. */
    const char *text_only[] = {"Sure.", NULL};
    decode(fc, text_only, 0);
    const char *direct[] = {"\xFF" "1", "call:get_time{}", "\xFF" "2", "\xFF" "3", NULL};
    decode(fc, direct, 0);
    /* Inside a call: only the tools by name; inside an escaped string any text, and only
     * <escape> ends it. */
    LlgConstraint *s = compute_next(fc, FC_START);
    CHECK(!accepts_text(s, "call:get_wind{}"));
    unsigned char allowed[N_TOK];
    int stop;
    LlgConstraint *s2 = compute_next(s, N_ASCII + 2); /* "call" */
    LlgConstraint *s3 = compute_next(s2, N_ASCII + 3); /* ":" */
    compute_mask(s3, allowed, &stop);
    CHECK(allowed[N_ASCII + 4] && allowed[N_ASCII + 5] && !allowed[N_ASCII + 8] && !allowed[EOS]);
    llg_free_constraint(s3);
    llg_free_constraint(s2);
    llg_free_constraint(s);
    llg_free_constraint(fc);

    /* Text only: anything but a line holding the call marker as text. */
    LlgConstraint *t = llg_new_constraint_lark(&init, TEXT_ONLY_GRAMMAR);
    CHECK(llg_get_error(t) == NULL);
    CHECK(accepts_text(t, "Sure. 12"));
    CHECK(accepts_text(t, "call:get_time{}"));
    CHECK(!accepts_text(t, "a <start_function_call> b"));
    CHECK(accepts_text(t, "a <start_function_call>\nb")); /* `.` stops at a newline */
    compute_mask(t, allowed, &stop);
    CHECK(!stop && !allowed[FC_START] && !allowed[ESC]); /* specials are never text */
    llg_free_constraint(t);

    llg_free_tokenizer(tok);
    printf("compat_litert_lm: ok\n");
    return 0;
}
