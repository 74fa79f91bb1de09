/* Uses libsieve through the CMake package: prints the version, then the mask of a regex
 * "ab|b" over the tokenizer {"a", "b", "ab", <|eos|>} at the start (a, b, ab allowed).
 * It also includes `llguidance.h` as LLGuidance's clients do, so the package (in the source
 * tree and installed) is checked to put it on the include path. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sieve.h"
#include <llguidance.h>

#define TRY(call)                                                                         \
    do {                                                                                  \
        sieve_status s_ = (call);                                                         \
        if (s_ != SIEVE_STATUS_OK) {                                                      \
            fprintf(stderr, "%s failed: %s\n", #call, sieve_status_name(s_));            \
            return 1;                                                                     \
        }                                                                                 \
    } while (0)

int main(void) {
    printf("version: %s\n", sieve_version());
    LlgConstraintInit init;
    llg_constraint_init_set_defaults(&init, NULL);
    printf("llguidance.h: ff_tokens_ok %d\n", (int)init.ff_tokens_ok);

    const uint8_t bytes[] = "abab<|eos|>";
    const uint32_t lens[] = {1, 1, 2, 7};
    const uint8_t special[] = {0, 0, 0, 1};
    const uint32_t eos = 3;
    const sieve_tokenizer *tok = NULL;
    TRY(sieve_tokenizer_new(bytes, sizeof bytes - 1, lens, 4, special, &eos, 1, NULL, NULL,
                            &tok, NULL));

    const char *regex = "ab|b";
    const sieve_grammar *grammar = NULL;
    TRY(sieve_grammar_new(tok, SIEVE_GRAMMAR_KIND_REGEX, (const uint8_t *)regex, strlen(regex),
                          NULL, &grammar, NULL));
    sieve_matcher *m = NULL;
    TRY(sieve_matcher_new(grammar, &m));

    uint32_t mask[1] = {0};
    TRY(sieve_matcher_compute_mask(m, mask, 1));
    printf("mask: 0x%x\n", (unsigned)mask[0]);

    sieve_matcher_free(m);
    sieve_grammar_free(grammar);
    sieve_tokenizer_free(tok);
    return mask[0] == 0x7u ? 0 : 1;
}
