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
 * Threads: a tokenizer may be used from any thread at once (it is immutable and reference
 * counted). A constraint, matcher or stop controller is used by one thread at a time; distinct
 * ones may run on different threads at once. The tokenize callback must be thread-safe.
 * llg_par_compute_mask() runs its steps on the calling thread and the library's thread pool
 * (the pool sieve_compute_masks uses: started on first use, its threads idle between
 * calls, the most expensive masks first); with a done_cb it returns at once, the work and
 * the callback run on a pool thread, and the constraints and mask rows belong to the library
 * until done_cb is called. sieve_set_num_threads() and sieve_shutdown_threads() from sieve.h
 * (a sieve extension, both headers may be included together) size the pool and join all its
 * threads, e.g. before the process exits under a leak checker.
 *
 * Limits: LlgParserLimits is honoured by mapping each field onto sieve's budget of the same
 * kind (see the struct). Exceeding a budget is an error like any other (sticky, with a
 * message naming the budget).
 *
 * Differences from LLGuidance (documented, not silent):
 *   - LlgParserLimits fields are read relative to LLGuidance's defaults (the units differ);
 *     precompute_large_lexemes and verbose_errors have no effect.
 *   - No log buffer: llg_flush_logs() returns "". Compile errors go to stderr when
 *     log_stderr_level >= 1.
 *   - llg_get_temperature() is always 0 (sieve grammars do not set a temperature).
 *   - llg_new_constraint() / type "llguidance" accept a JSON object with exactly one grammar:
 *     {"grammars":[{"lark_grammar":"..."}]}, {"grammars":[{"json_schema":{...}}]}, the same
 *     objects without the "grammars" wrapper, or Lark text not starting with '{'.
 *   - GBNF (an extension): type "gbnf" (or "ebnf", "grammar") compiles llama.cpp's GBNF with
 *     start rule `root`. llama.cpp passes every grammar it routes here as type "lark"
 *     (llama_sampler_init_llg(vocab, "lark", text)), so "lark" text that is GBNF compiles as
 *     GBNF too. The test is conservative: the text has no `%llguidance` header and its first
 *     line that is not blank or a comment (`#` or `//`) defines a rule with `::=`
 *     (`root ::= ...`), which is never valid Lark.
 *   - llg_par_compute_mask(): a row shorter than the vocabulary's mask, a constraint listed
 *     twice or overlapping rows put the constraints involved in error (zeroed rows) instead
 *     of writing a truncated mask or racing.
 *   - Stop controller: a stop_rx matching the empty string is rejected; matches longer than
 *     1024 bytes are not detected (at most that much text is held back); clones are deep.
 */
#ifndef SIEVE_LLGUIDANCE_COMPAT_H
#define SIEVE_LLGUIDANCE_COMPAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* LLGuidance's own header marks nothing as must-use, and its clients ignore some results
 * (llama.cpp's sampler drops llg_matcher_consume_token's): warnings here would break their
 * -Werror builds, so they are opt-in (define SIEVE_LLG_NODISCARD before including). */
#if !defined(SIEVE_LLG_NODISCARD)
#define LLGUIDANCE_NODISCARD
#elif defined(__cplusplus) && __cplusplus >= 201703L
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

/* Parser budgets. Each field is read relative to LLGuidance's default (the value
 * llg_constraint_init_set_defaults() writes, in parentheses) and scales the sieve budget
 * named after the arrow: at the LLGuidance default sieve uses its own default, at half of
 * it half of sieve's, at ten times it ten times sieve's. 0 means the default. */
typedef struct LlgParserLimits {
    size_t max_items_in_row;           /* (2000) -> Earley items per row */
    uint64_t initial_lexer_fuel;       /* (1000000) -> regex work while compiling */
    uint64_t step_lexer_fuel;          /* (200000) -> regex work per mask or token */
    size_t step_max_items;             /* (50000) -> Earley items per mask */
    size_t max_lexer_states;           /* (250000) -> lexer DFA states */
    size_t max_grammar_size;           /* (500000) -> grammar symbols */
    bool precompute_large_lexemes;     /* no effect (sieve's slicer is always on) */
    bool verbose_errors;               /* no effect */
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
    uint32_t n_tokens;                 /* 0 when committed after a stop mask */
    bool is_stop;                      /* committed after a stop mask (as in LLGuidance, a */
                                       /* committed EOS shows as a stop from the next mask) */
} LlgCommitResult;

/* One item of llg_par_compute_mask(). */
typedef struct LlgConstraintStep {
    LlgConstraint *constraint;         /* NULL steps are skipped */
    uint32_t *mask_dest;               /* the row the mask goes to */
    size_t mask_byte_len;              /* bytes of mask_dest: a multiple of 4, >= the mask */
} LlgConstraintStep;

/* Completion callback of llg_par_compute_mask(); called once, on a library thread. */
typedef void (*LlgCallback)(const void *user_data);

/* Stop-sequence detector (one sequence, one thread at a time). */
typedef struct LlgStopController LlgStopController;

/* llg_decode_tokens() flags. */
#define LLG_DECODE_NONE 0            /* skip special tokens, keep invalid UTF-8 as is */
#define LLG_DECODE_INCLUDE_SPECIAL 1 /* special tokens by name, "<[id]>" without a name */
#define LLG_DECODE_VALID_UTF8 2      /* replace invalid UTF-8 with U+FFFD */

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
/* As llg_tokenize_bytes(), but 0xFF<name> (e.g. "\xFF<|eot_id|>") and 0xFF[id] in the text
 * are special tokens. 0 if some part cannot be tokenized. */
size_t llg_tokenize_bytes_marker(const LlgTokenizer *tok, const uint8_t *bytes,
                                 size_t bytes_len, uint32_t *output_tokens,
                                 size_t output_tokens_len);
/* Text of the tokens (flags: LLG_DECODE_*), NUL-terminated and truncated to output_len.
 * Returns the size needed for all of it, NUL included (0 for bad arguments). */
size_t llg_decode_tokens(const LlgTokenizer *tok, const uint32_t *tokens, size_t n_tokens,
                         char *output, size_t output_len, uint32_t flags);
/* A debugging rendering of the tokens; sizes as for llg_decode_tokens(). */
size_t llg_stringify_tokens(const LlgTokenizer *tok, const uint32_t *tokens, size_t n_tokens,
                            char *output, size_t output_len);
/* "sieve@X (llguidance-compatible)": static, never free it. */
const char *llg_get_version(void);

/* ---- Constraint ---- */

/* Fills *init: the tokenizer, no forced tokens, no backtracking, warnings to stderr. */
void llg_constraint_init_set_defaults(LlgConstraintInit *init, const LlgTokenizer *tokenizer);
/* Constructors: never NULL; check llg_get_error(). */
LlgConstraint *llg_new_constraint(const LlgConstraintInit *init, const char *llguidance);
LlgConstraint *llg_new_constraint_regex(const LlgConstraintInit *init, const char *regex);
LlgConstraint *llg_new_constraint_json(const LlgConstraintInit *init, const char *json_schema);
LlgConstraint *llg_new_constraint_lark(const LlgConstraintInit *init, const char *lark);
/* constraint_type: "regex", "json", "json_schema", "json_object", "lark", "llguidance",
 * "guidance"; and "gbnf", "ebnf", "grammar" (llama.cpp's GBNF, start rule `root`). */
LlgConstraint *llg_new_constraint_any(const LlgConstraintInit *init, const char *constraint_type,
                                      const char *data);
/* NULL, or the first error (same pointer until free). */
const char *llg_get_error(const LlgConstraint *cc);
float llg_get_temperature(const LlgConstraint *cc);
/* True once a mask was a stop (the sequence can only end), or after an error. */
bool llg_is_stopped(const LlgConstraint *cc);
/* 0: *res_p filled. -1: see llg_get_error(). Asked again after a stop result, it fails with
 * LLGuidance's "compute_mask() called after stop" (sticky, like every error). */
LLGUIDANCE_NODISCARD int32_t llg_compute_mask(LlgConstraint *cc, LlgMaskResult *res_p);
/* 0: *res_p filled. -1: see llg_get_error(). After a stop mask: no tokens, is_stop true. */
LLGUIDANCE_NODISCARD int32_t llg_commit_token(LlgConstraint *cc, LlgToken token,
                                              LlgCommitResult *res_p);
/* Independent copy (state and error). */
LlgConstraint *llg_clone_constraint(const LlgConstraint *cc);
/* NULL is a no-op. */
void llg_free_constraint(LlgConstraint *cc);
/* Always "" (static). */
const char *llg_flush_logs(LlgConstraint *cc);
/* Computes the masks of several constraints on library threads. Each row gets the mask, or
 * only the EOS bit when the grammar can only end (is_stop), or zeros when the constraint is
 * (or gets) in error; a malformed step (NULL or unaligned mask_dest, a bad mask_byte_len, a
 * constraint listed twice, overlapping rows) puts its constraint in error. done_cb NULL:
 * returns when every row is written. Otherwise returns at once and calls
 * done_cb(user_data) exactly once, on a library thread, when every row is written; until
 * then do not touch the constraints or rows. steps NULL with n_steps > 0: no work (done_cb
 * is still called). The steps array is copied. */
void llg_par_compute_mask(const LlgConstraintStep *steps, size_t n_steps, const void *user_data,
                          LlgCallback done_cb);

/* ---- Stop controller ---- */

/* Stops at any of stop_tokens (NULL if stop_tokens_len is 0) or when the text ends with a
 * match of the regex stop_rx (NULL or "" for none). NULL on failure, with the message in
 * error_string (NUL-terminated, truncated). */
LlgStopController *llg_new_stop_controller(const LlgTokenizer *tokenizer,
                                           const uint32_t *stop_tokens, size_t stop_tokens_len,
                                           const char *stop_rx, char *error_string,
                                           size_t error_string_len);
/* Commits a token. Returns the text now safe to show (UTF-8, NUL-terminated, may be empty;
 * valid until the next call on this controller), its length in *output_len_p, and whether
 * the sequence must end in *is_stopped_p. Text that may begin a stop match is held back; a
 * stop match itself is never returned. NULL if any pointer is NULL. */
const char *llg_stop_commit_token(LlgStopController *stop_ctrl, uint32_t token,
                                  size_t *output_len_p, bool *is_stopped_p);
/* An independent copy. */
LlgStopController *llg_clone_stop_controller(const LlgStopController *stop_ctrl);
/* NULL is a no-op. */
void llg_free_stop_controller(LlgStopController *stop_ctrl);

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
