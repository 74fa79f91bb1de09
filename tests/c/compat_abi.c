/* LLGuidance's own declarations, compiled against sieve's `llguidance.h`, so that the
 * compatible layer cannot drift from the ABI its clients were built for (issue 16, item 3).
 *
 * - Structs: each of LLGuidance's public structs is restated below with LLGuidance's field
 *   names, order and types (`Ref*`), and its size, alignment and every field offset must equal
 *   those of sieve's struct of the same name. A client compiled against LLGuidance's header
 *   then passes and reads the same bytes.
 * - Functions: each of LLGuidance's 46 `llg_*` functions is assigned to a pointer of the type
 *   LLGuidance declares it with. Any difference in a parameter or return type is an
 *   incompatible-pointer-types diagnostic, which -Werror turns into a build failure.
 * - Constants: the LLG_DECODE_* flags have LLGuidance's values.
 *
 * It runs too (under valgrind, like the other C tests), to call a few of the functions through
 * those pointers and print a line the test looks for.
 */
#include <stddef.h>
#include <stdio.h>

#include "llguidance.h"

#define SAME_LAYOUT(T, R)                                                                  \
    _Static_assert(sizeof(T) == sizeof(R), #T ": size differs from LLGuidance's");         \
    _Static_assert(_Alignof(T) == _Alignof(R), #T ": alignment differs from LLGuidance's")
#define SAME_FIELD(T, R, f)                                                                \
    _Static_assert(offsetof(T, f) == offsetof(R, f), #T "." #f ": offset differs");        \
    _Static_assert(sizeof(((T *)0)->f) == sizeof(((R *)0)->f), #T "." #f ": size differs")

/* ---- LLGuidance's structs, as its header declares them ---- */

typedef size_t (*RefTokenizeFn)(const void *user_data, const uint8_t *bytes, size_t bytes_len,
                                uint32_t *output_tokens, size_t output_tokens_len);

struct RefParserLimits {
    size_t max_items_in_row;
    uint64_t initial_lexer_fuel;
    uint64_t step_lexer_fuel;
    size_t step_max_items;
    size_t max_lexer_states;
    size_t max_grammar_size;
    bool precompute_large_lexemes;
    bool verbose_errors;
};

struct RefConstraintInit {
    const struct LlgTokenizer *tokenizer;
    uint32_t log_buffer_level;
    uint32_t log_stderr_level;
    bool ff_tokens_ok;
    bool backtrack_ok;
    struct RefParserLimits limits;
};

struct RefMaskResult {
    const uint32_t *sample_mask;
    float temperature;
    bool is_stop;
};

struct RefCommitResult {
    const uint32_t *tokens;
    uint32_t n_tokens;
    bool is_stop;
};

struct RefConstraintStep {
    struct LlgConstraint *constraint;
    uint32_t *mask_dest;
    size_t mask_byte_len;
};

struct RefTokenizerInit {
    uint32_t vocab_size;
    uint32_t tok_eos;
    const uint32_t *token_lens;
    const uint8_t *token_bytes;
    const char *tokenizer_json;
    bool tokenize_assumes_string;
    RefTokenizeFn tokenize_fn;
    bool use_approximate_greedy_tokenize_fn;
    const void *tokenize_user_data;
    const char *const *slices;
};

struct RefTokenizerInitV2 {
    size_t struct_size;
    uint32_t vocab_size;
    uint32_t tok_eos;
    const uint32_t *token_lens;
    const uint8_t *token_bytes;
    const char *tokenizer_json;
    bool tokenize_assumes_string;
    RefTokenizeFn tokenize_fn;
    bool use_approximate_greedy_tokenize_fn;
    const void *tokenize_user_data;
    const char *const *slices;
    const uint32_t *tok_eos_extra;
    uint32_t tok_eos_extra_count;
};

SAME_LAYOUT(LlgParserLimits, struct RefParserLimits);
SAME_FIELD(LlgParserLimits, struct RefParserLimits, max_items_in_row);
SAME_FIELD(LlgParserLimits, struct RefParserLimits, initial_lexer_fuel);
SAME_FIELD(LlgParserLimits, struct RefParserLimits, step_lexer_fuel);
SAME_FIELD(LlgParserLimits, struct RefParserLimits, step_max_items);
SAME_FIELD(LlgParserLimits, struct RefParserLimits, max_lexer_states);
SAME_FIELD(LlgParserLimits, struct RefParserLimits, max_grammar_size);
SAME_FIELD(LlgParserLimits, struct RefParserLimits, precompute_large_lexemes);
SAME_FIELD(LlgParserLimits, struct RefParserLimits, verbose_errors);

SAME_LAYOUT(LlgConstraintInit, struct RefConstraintInit);
SAME_FIELD(LlgConstraintInit, struct RefConstraintInit, tokenizer);
SAME_FIELD(LlgConstraintInit, struct RefConstraintInit, log_buffer_level);
SAME_FIELD(LlgConstraintInit, struct RefConstraintInit, log_stderr_level);
SAME_FIELD(LlgConstraintInit, struct RefConstraintInit, ff_tokens_ok);
SAME_FIELD(LlgConstraintInit, struct RefConstraintInit, backtrack_ok);
SAME_FIELD(LlgConstraintInit, struct RefConstraintInit, limits);

SAME_LAYOUT(LlgMaskResult, struct RefMaskResult);
SAME_FIELD(LlgMaskResult, struct RefMaskResult, sample_mask);
SAME_FIELD(LlgMaskResult, struct RefMaskResult, temperature);
SAME_FIELD(LlgMaskResult, struct RefMaskResult, is_stop);

SAME_LAYOUT(LlgCommitResult, struct RefCommitResult);
SAME_FIELD(LlgCommitResult, struct RefCommitResult, tokens);
SAME_FIELD(LlgCommitResult, struct RefCommitResult, n_tokens);
SAME_FIELD(LlgCommitResult, struct RefCommitResult, is_stop);

SAME_LAYOUT(LlgConstraintStep, struct RefConstraintStep);
SAME_FIELD(LlgConstraintStep, struct RefConstraintStep, constraint);
SAME_FIELD(LlgConstraintStep, struct RefConstraintStep, mask_dest);
SAME_FIELD(LlgConstraintStep, struct RefConstraintStep, mask_byte_len);

/* The fields V1 and V2 share, in the same order (V2 puts struct_size before them). */
#define SAME_TOKENIZER_INIT_FIELDS(T, R)                                                   \
    SAME_FIELD(T, R, vocab_size);                                                          \
    SAME_FIELD(T, R, tok_eos);                                                             \
    SAME_FIELD(T, R, token_lens);                                                          \
    SAME_FIELD(T, R, token_bytes);                                                         \
    SAME_FIELD(T, R, tokenizer_json);                                                      \
    SAME_FIELD(T, R, tokenize_assumes_string);                                             \
    SAME_FIELD(T, R, tokenize_fn);                                                         \
    SAME_FIELD(T, R, use_approximate_greedy_tokenize_fn);                                  \
    SAME_FIELD(T, R, tokenize_user_data);                                                  \
    SAME_FIELD(T, R, slices)

SAME_LAYOUT(LlgTokenizerInit, struct RefTokenizerInit);
SAME_TOKENIZER_INIT_FIELDS(LlgTokenizerInit, struct RefTokenizerInit);

SAME_LAYOUT(LlgTokenizerInitV2, struct RefTokenizerInitV2);
SAME_FIELD(LlgTokenizerInitV2, struct RefTokenizerInitV2, struct_size);
SAME_TOKENIZER_INIT_FIELDS(LlgTokenizerInitV2, struct RefTokenizerInitV2);
SAME_FIELD(LlgTokenizerInitV2, struct RefTokenizerInitV2, tok_eos_extra);
SAME_FIELD(LlgTokenizerInitV2, struct RefTokenizerInitV2, tok_eos_extra_count);

_Static_assert(sizeof(LlgToken) == sizeof(uint32_t), "LlgToken is uint32_t");
_Static_assert(LLG_DECODE_NONE == 0, "LLG_DECODE_NONE");
_Static_assert(LLG_DECODE_INCLUDE_SPECIAL == 1, "LLG_DECODE_INCLUDE_SPECIAL");
_Static_assert(LLG_DECODE_VALID_UTF8 == 2, "LLG_DECODE_VALID_UTF8");

/* ---- LLGuidance's functions, with the types its header declares ---- */

#define S struct
static struct {
    void (*constraint_init_set_defaults)(S LlgConstraintInit *, const S LlgTokenizer *);
    S LlgConstraint *(*new_constraint)(const S LlgConstraintInit *, const char *);
    S LlgConstraint *(*new_constraint_regex)(const S LlgConstraintInit *, const char *);
    S LlgConstraint *(*new_constraint_json)(const S LlgConstraintInit *, const char *);
    S LlgConstraint *(*new_constraint_lark)(const S LlgConstraintInit *, const char *);
    S LlgConstraint *(*new_constraint_any)(const S LlgConstraintInit *, const char *,
                                           const char *);
    const char *(*get_error)(const S LlgConstraint *);
    float (*get_temperature)(const S LlgConstraint *);
    bool (*is_stopped)(const S LlgConstraint *);
    int32_t (*compute_mask)(S LlgConstraint *, S LlgMaskResult *);
    int32_t (*commit_token)(S LlgConstraint *, LlgToken, S LlgCommitResult *);
    void (*par_compute_mask)(const S LlgConstraintStep *, size_t, const void *, LlgCallback);
    S LlgConstraint *(*clone_constraint)(const S LlgConstraint *);
    S LlgTokenizer *(*new_tokenizer)(const S LlgTokenizerInit *, char *, size_t);
    S LlgTokenizer *(*new_tokenizer_v2)(const S LlgTokenizerInitV2 *, char *, size_t);
    S LlgTokenizer *(*clone_tokenizer)(const S LlgTokenizer *);
    size_t (*tokenize_bytes)(const S LlgTokenizer *, const uint8_t *, size_t, uint32_t *,
                             size_t);
    size_t (*tokenize_bytes_marker)(const S LlgTokenizer *, const uint8_t *, size_t,
                                    uint32_t *, size_t);
    size_t (*stringify_tokens)(const S LlgTokenizer *, const uint32_t *, size_t, char *,
                               size_t);
    size_t (*decode_tokens)(const S LlgTokenizer *, const uint32_t *, size_t, char *, size_t,
                            uint32_t);
    void (*free_tokenizer)(S LlgTokenizer *);
    void (*free_constraint)(S LlgConstraint *);
    const char *(*flush_logs)(S LlgConstraint *);
    S LlgStopController *(*new_stop_controller)(const S LlgTokenizer *, const uint32_t *,
                                                size_t, const char *, char *, size_t);
    const char *(*stop_commit_token)(S LlgStopController *, uint32_t, size_t *, bool *);
    S LlgStopController *(*clone_stop_controller)(const S LlgStopController *);
    void (*free_stop_controller)(S LlgStopController *);
    S LlgMatcher *(*new_matcher)(const S LlgConstraintInit *, const char *, const char *);
    int32_t (*validate_grammar)(const S LlgConstraintInit *, const char *, const char *, char *,
                                size_t);
    int32_t (*matcher_compute_mask_into)(S LlgMatcher *, uint32_t *, size_t);
    int32_t (*matcher_compute_mask)(S LlgMatcher *);
    const uint32_t *(*matcher_get_mask)(S LlgMatcher *);
    size_t (*matcher_get_mask_byte_size)(const S LlgMatcher *);
    int32_t (*matcher_consume_token)(S LlgMatcher *, uint32_t);
    int32_t (*matcher_consume_tokens)(S LlgMatcher *, const uint32_t *, size_t);
    const char *(*matcher_get_error)(S LlgMatcher *);
    bool (*matcher_is_error)(const S LlgMatcher *);
    void (*free_matcher)(S LlgMatcher *);
    int32_t (*matcher_rollback)(S LlgMatcher *, size_t);
    int32_t (*matcher_reset)(S LlgMatcher *);
    bool (*matcher_is_accepting)(S LlgMatcher *);
    bool (*matcher_is_stopped)(const S LlgMatcher *);
    int32_t (*matcher_validate_tokens)(S LlgMatcher *, const uint32_t *, size_t);
    int32_t (*matcher_compute_ff_tokens)(S LlgMatcher *, uint32_t *, size_t);
    S LlgMatcher *(*clone_matcher)(const S LlgMatcher *);
    const char *(*get_version)(void);
} llg = {
    llg_constraint_init_set_defaults,
    llg_new_constraint,
    llg_new_constraint_regex,
    llg_new_constraint_json,
    llg_new_constraint_lark,
    llg_new_constraint_any,
    llg_get_error,
    llg_get_temperature,
    llg_is_stopped,
    llg_compute_mask,
    llg_commit_token,
    llg_par_compute_mask,
    llg_clone_constraint,
    llg_new_tokenizer,
    llg_new_tokenizer_v2,
    llg_clone_tokenizer,
    llg_tokenize_bytes,
    llg_tokenize_bytes_marker,
    llg_stringify_tokens,
    llg_decode_tokens,
    llg_free_tokenizer,
    llg_free_constraint,
    llg_flush_logs,
    llg_new_stop_controller,
    llg_stop_commit_token,
    llg_clone_stop_controller,
    llg_free_stop_controller,
    llg_new_matcher,
    llg_validate_grammar,
    llg_matcher_compute_mask_into,
    llg_matcher_compute_mask,
    llg_matcher_get_mask,
    llg_matcher_get_mask_byte_size,
    llg_matcher_consume_token,
    llg_matcher_consume_tokens,
    llg_matcher_get_error,
    llg_matcher_is_error,
    llg_free_matcher,
    llg_matcher_rollback,
    llg_matcher_reset,
    llg_matcher_is_accepting,
    llg_matcher_is_stopped,
    llg_matcher_validate_tokens,
    llg_matcher_compute_ff_tokens,
    llg_clone_matcher,
    llg_get_version,
};
#undef S

int main(void) {
    /* Every entry is set (a missing one would be NULL here and a warning above). */
    void (*const *first)(void) = (void (*const *)(void))&llg;
    size_t n = sizeof llg / sizeof(void (*)(void));
    for (size_t i = 0; i < n; i++) {
        if (first[i] == NULL) {
            fprintf(stderr, "entry %zu is NULL\n", i);
            return 1;
        }
    }
    /* A few calls through LLGuidance's pointer types: a regex matcher over the byte table
     * {"a", "b", "ab", <|eos|>} (a special token's bytes start with 0xFF). */
    const uint8_t bytes[] = "abab\xff<|eos|>";
    const uint32_t lens[] = {1, 1, 2, 8};
    LlgTokenizerInit ti = {0};
    ti.vocab_size = 4;
    ti.tok_eos = 3;
    ti.token_lens = lens;
    ti.token_bytes = bytes;
    ti.use_approximate_greedy_tokenize_fn = true;
    char err[256];
    LlgTokenizer *tok = llg.new_tokenizer(&ti, err, sizeof err);
    if (tok == NULL) {
        fprintf(stderr, "llg_new_tokenizer: %s\n", err);
        return 1;
    }
    LlgConstraintInit init;
    llg.constraint_init_set_defaults(&init, tok);
    LlgMatcher *m = llg.new_matcher(&init, "regex", "(ab)+");
    if (llg.matcher_get_error(m) != NULL || llg.matcher_compute_mask(m) != 0) {
        fprintf(stderr, "matcher: %s\n", llg.matcher_get_error(m));
        return 1;
    }
    const uint32_t *mask = llg.matcher_get_mask(m);
    /* "a" and "ab" start (ab)+, but the grammar forces the text "ab": as in LLGuidance, the
     * mask holds only its canonical token, "ab" (bit 2). */
    printf("%zu functions with LLGuidance's types; mask 0x%x\n", n, (unsigned)mask[0]);
    llg.free_matcher(m);
    llg.free_tokenizer(tok);
    return n == 46 ? 0 : 1;
}
