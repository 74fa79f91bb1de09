/*
 * llguidance_compat.h: sieve's drop-in replacement for the LLGuidance C API.
 *
 * Hand-written for sieve (not generated). A runtime written against LLGuidance's
 * `llguidance.h` (llama.cpp, onnxruntime-genai, Chromium, LiteRT-LM) can include this
 * header instead and link `libsieve`. Type names, field order, field types and function
 * signatures match LLGuidance so positional initializers and existing call sites compile
 * unchanged. Do not include this header and LLGuidance's own in one translation unit.
 *
 * Error model
 *   - Constraint and matcher constructors never return NULL for valid arguments: a grammar
 *     that fails to compile gives a handle in the error state. Check llg_get_error() /
 *     llg_matcher_get_error(). (Only a panic inside the library yields NULL.)
 *   - Errors are sticky. After the first error every fallible call on the handle returns -1,
 *     and the error string pointer stays the same until the handle is freed.
 *     llg_matcher_reset() cannot clear an error.
 *   - llg_new_tokenizer*() return NULL on failure and write a NUL-terminated message,
 *     truncated to fit, into the caller's buffer.
 *
 * Pointer lifetimes
 *   - LlgMaskResult.sample_mask, LlgCommitResult.tokens and llg_matcher_get_mask() point
 *     into memory owned by the handle; valid until the next llg_* call on that handle.
 *   - Error strings live until the handle is freed.
 *   - A tokenizer may be freed while constraints and matchers made from it are alive.
 *
 * Threads: a tokenizer may be used from any thread. A constraint or matcher is used by one
 * thread at a time. The tokenize callback must be thread-safe.
 *
 * Differences from LLGuidance (documented, not silent):
 *   - LlgParserLimits is accepted for layout compatibility; sieve enforces its own budgets.
 *   - No log buffer: llg_flush_logs() returns "". Compile errors go to stderr when
 *     log_stderr_level >= 1.
 *   - llg_get_temperature() is always 0 (sieve grammars do not set a temperature).
 *   - llg_new_constraint() / type "llguidance" accept a JSON object with exactly one grammar:
 *     {"grammars":[{"lark_grammar":"..."}]}, {"grammars":[{"json_schema":{...}}]}, the same
 *     objects without the "grammars" wrapper, or Lark text not starting with '{'.
 *   - Not provided: llg_par_compute_mask, the stop controller, llg_tokenize_bytes_marker,
 *     llg_stringify_tokens, llg_decode_tokens.
 */
#ifndef SIEVE_LLGUIDANCE_COMPAT_H
#define SIEVE_LLGUIDANCE_COMPAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__cplusplus) && __cplusplus >= 201703L
#define LLGUIDANCE_NODISCARD [[nodiscard]]
#elif defined(__GNUC__) || defined(__clang__)
#define LLGUIDANCE_NODISCARD __attribute__((warn_unused_result))
#else
#define LLGUIDANCE_NODISCARD
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Token ids are plain 32-bit unsigned integers. */
typedef uint32_t LlgToken;

/* Opaque handles. */
typedef struct LlgTokenizer LlgTokenizer;   /* shared vocabulary, reference counted */
typedef struct LlgConstraint LlgConstraint; /* per-sequence: mask / commit interface */
typedef struct LlgMatcher LlgMatcher;       /* per-sequence: matcher interface */

/* Host tokenizer: tokenize `bytes_len` bytes, write at most `output_tokens_len` ids to
 * `output_tokens` and return the number of ids the whole text needs. Must be thread-safe. */
typedef size_t (*LlgTokenizeFn)(const void *user_data, const uint8_t *bytes, size_t bytes_len,
                                uint32_t *output_tokens, size_t output_tokens_len);

/* Tokenizer description, version 1. Zero-initialize before filling it in. The field order
 * is fixed: hosts initialize it positionally. */
typedef struct LlgTokenizerInit {
    uint32_t vocab_size;               /* number of token ids */
    LlgToken tok_eos;                  /* end of sequence (end of turn for chat) */
    const uint32_t *token_lens;        /* vocab_size byte lengths */
    const uint8_t *token_bytes;        /* concatenated token bytes; specials start with 0xFF */
    const char *tokenizer_json;        /* or: NUL-terminated HF tokenizer.json text */
    bool tokenize_assumes_string;      /* tokenize_fn takes only valid UTF-8 */
    LlgTokenizeFn tokenize_fn;         /* optional host tokenizer */
    bool use_approximate_greedy_tokenize_fn; /* ignore tokenize_fn, tokenize greedily */
    const void *tokenize_user_data;    /* first argument of tokenize_fn */
    const char *const *slices;         /* NULL-terminated regex list; NULL = defaults */
} LlgTokenizerInit;

/* Tokenizer description, version 2: set struct_size = sizeof(LlgTokenizerInitV2). Only
 * struct_size bytes are read (at least up to and including tok_eos). */
typedef struct LlgTokenizerInitV2 {
    size_t struct_size;
    uint32_t vocab_size;
    LlgToken tok_eos;
    const uint32_t *token_lens;
    const uint8_t *token_bytes;
    const char *tokenizer_json;
    bool tokenize_assumes_string;
    LlgTokenizeFn tokenize_fn;
    bool use_approximate_greedy_tokenize_fn;
    const void *tokenize_user_data;
    const char *const *slices;
    const LlgToken *tok_eos_extra;     /* more end-of-sequence ids, or NULL */
    uint32_t tok_eos_extra_count;      /* how many */
} LlgTokenizerInitV2;

/* Parser budgets (LLGuidance's fields; sieve keeps its own budgets, see above). */
typedef struct LlgParserLimits {
    size_t max_items_in_row;
    uint64_t initial_lexer_fuel;
    uint64_t step_lexer_fuel;
    size_t step_max_items;
    size_t max_lexer_states;
    size_t max_grammar_size;
    bool precompute_large_lexemes;
    bool verbose_errors;
} LlgParserLimits;

/* Settings for constraints and matchers. No struct_size: zero-initialize it, then call
 * llg_constraint_init_set_defaults() and change what you need. */
typedef struct LlgConstraintInit {
    const LlgTokenizer *tokenizer;     /* not consumed */
    uint32_t log_buffer_level;         /* 0 none, 1 warnings, 2 info */
    uint32_t log_stderr_level;         /* same scale, for stderr */
    bool ff_tokens_ok;                 /* commit may return forced tokens too */
    bool backtrack_ok;                 /* sieve never backtracks */
    LlgParserLimits limits;            /* embedded by value */
} LlgConstraintInit;

/* What llg_compute_mask() produced. */
typedef struct LlgMaskResult {
    const uint32_t *sample_mask;       /* bit t%32 of word t/32 = token t; NULL if is_stop */
    float temperature;                 /* always 0 with sieve */
    bool is_stop;                      /* only the end of sequence may follow */
} LlgMaskResult;

/* What llg_commit_token() produced. */
typedef struct LlgCommitResult {
    const uint32_t *tokens;            /* tokens to append: the sampled one, then forced */
    uint32_t n_tokens;
    bool is_stop;                      /* an end of sequence was committed */
} LlgCommitResult;

/* ---- Tokenizer ---- */

/* NULL on failure; the message goes to error_string (may be NULL). */
LlgTokenizer *llg_new_tokenizer(const LlgTokenizerInit *tok_init, char *error_string,
                                size_t error_string_len);
LlgTokenizer *llg_new_tokenizer_v2(const LlgTokenizerInitV2 *tok_init, char *error_string,
                                   size_t error_string_len);
/* Adds a reference; free every handle once. */
LlgTokenizer *llg_clone_tokenizer(const LlgTokenizer *tok);
/* NULL is a no-op. */
void llg_free_tokenizer(LlgTokenizer *tok);
/* Returns the number of ids needed, writes at most output_tokens_len. Uses tokenize_fn if
 * given, else greedy longest match. */
size_t llg_tokenize_bytes(const LlgTokenizer *tok, const uint8_t *bytes, size_t bytes_len,
                          uint32_t *output_tokens, size_t output_tokens_len);

/* ---- Constraint ---- */

/* Fills *init: the tokenizer, no forced tokens, no backtracking, warnings to stderr. */
void llg_constraint_init_set_defaults(LlgConstraintInit *init, const LlgTokenizer *tokenizer);
/* Constructors: never NULL; check llg_get_error(). */
LlgConstraint *llg_new_constraint(const LlgConstraintInit *init, const char *llguidance);
LlgConstraint *llg_new_constraint_regex(const LlgConstraintInit *init, const char *regex);
LlgConstraint *llg_new_constraint_json(const LlgConstraintInit *init, const char *json_schema);
LlgConstraint *llg_new_constraint_lark(const LlgConstraintInit *init, const char *lark);
/* constraint_type: "regex", "json", "json_schema", "json_object", "lark", "llguidance",
 * "guidance". */
LlgConstraint *llg_new_constraint_any(const LlgConstraintInit *init, const char *constraint_type,
                                      const char *data);
/* NULL, or the first error (same pointer until free). */
const char *llg_get_error(const LlgConstraint *cc);
float llg_get_temperature(const LlgConstraint *cc);
/* True once the sequence can only end (or after an error). */
bool llg_is_stopped(const LlgConstraint *cc);
/* 0: *res_p filled. -1: see llg_get_error(). */
LLGUIDANCE_NODISCARD int32_t llg_compute_mask(LlgConstraint *cc, LlgMaskResult *res_p);
/* 0: *res_p filled. -1: see llg_get_error(). */
LLGUIDANCE_NODISCARD int32_t llg_commit_token(LlgConstraint *cc, LlgToken token,
                                              LlgCommitResult *res_p);
/* Independent copy (state and error). */
LlgConstraint *llg_clone_constraint(const LlgConstraint *cc);
/* NULL is a no-op. */
void llg_free_constraint(LlgConstraint *cc);
/* Always "" (static). */
const char *llg_flush_logs(LlgConstraint *cc);

/* ---- Matcher ---- */

/* Never NULL; check llg_matcher_get_error(). Types as for llg_new_constraint_any();
 * ff_tokens_ok and backtrack_ok are ignored. */
LlgMatcher *llg_new_matcher(const LlgConstraintInit *init, const char *constraint_type,
                            const char *data);
/* 0 valid, -1 invalid (message written, NUL-terminated); sieve never returns 1. */
LLGUIDANCE_NODISCARD int32_t llg_validate_grammar(const LlgConstraintInit *init,
                                                  const char *constraint_type, const char *data,
                                                  char *message, size_t message_len);
/* Computes into the matcher's own buffer; fetch with llg_matcher_get_mask(). 0 or -1. */
LLGUIDANCE_NODISCARD int32_t llg_matcher_compute_mask(LlgMatcher *matcher);
/* mask_byte_len must equal llg_matcher_get_mask_byte_size(). 0 or -1. */
LLGUIDANCE_NODISCARD int32_t llg_matcher_compute_mask_into(LlgMatcher *matcher,
                                                           uint32_t *mask_dest,
                                                           size_t mask_byte_len);
/* NULL until a mask was computed. A stopped matcher's mask has only the EOS bits. */
const uint32_t *llg_matcher_get_mask(LlgMatcher *matcher);
/* ceil(vocab_size / 32) * 4. */
size_t llg_matcher_get_mask_byte_size(const LlgMatcher *matcher);
LLGUIDANCE_NODISCARD int32_t llg_matcher_consume_token(LlgMatcher *matcher, uint32_t token);
LLGUIDANCE_NODISCARD int32_t llg_matcher_consume_tokens(LlgMatcher *matcher,
                                                        const uint32_t *tokens, size_t n_tokens);
const char *llg_matcher_get_error(LlgMatcher *matcher);
bool llg_matcher_is_error(const LlgMatcher *matcher);
void llg_free_matcher(LlgMatcher *matcher);
/* Undo the last num_tokens tokens; too many is an (sticky) error. */
LLGUIDANCE_NODISCARD int32_t llg_matcher_rollback(LlgMatcher *matcher, size_t num_tokens);
/* -1 if the matcher is in error (errors cannot be reset). */
LLGUIDANCE_NODISCARD int32_t llg_matcher_reset(LlgMatcher *matcher);
bool llg_matcher_is_accepting(LlgMatcher *matcher);
/* True after EOS was consumed, and in the error state. */
bool llg_matcher_is_stopped(const LlgMatcher *matcher);
/* Number of leading tokens accepted (state unchanged), or -1. */
LLGUIDANCE_NODISCARD int32_t llg_matcher_validate_tokens(LlgMatcher *matcher,
                                                         const uint32_t *tokens, size_t n_tokens);
/* Forced tokens written (at most output_len), or -1. Nothing consumed. */
LLGUIDANCE_NODISCARD int32_t llg_matcher_compute_ff_tokens(LlgMatcher *matcher, uint32_t *output,
                                                           size_t output_len);
LlgMatcher *llg_clone_matcher(const LlgMatcher *matcher);

#ifdef __cplusplus
}
#endif

#endif /* SIEVE_LLGUIDANCE_COMPAT_H */
