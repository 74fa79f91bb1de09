/* Helpers for the LLGuidance-compat replay tests: checks, and a target-driven "sampler" that
 * picks, among the allowed tokens, the longest one spelling the next bytes of a target text
 * (so every step checks the mask), or EOS once the target is done. */
#ifndef SIEVE_COMPAT_COMMON_H
#define SIEVE_COMPAT_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llguidance.h" /* the name the clients include */

#define CHECK(cond)                                                                       \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);      \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

static inline int bit_set(const uint32_t *mask, uint32_t tok) {
    return (mask[tok / 32] >> (tok % 32)) & 1u;
}

/* A token table: texts (specials without their 0xFF marker) and which are special. */
typedef struct {
    size_t n;
    const char **text;
    const unsigned char *special;
} token_table;

/* The longest allowed non-special token that is a prefix of `rest`; -1 if none. */
static inline long pick_token(const token_table *t, const uint32_t *mask, const char *rest) {
    long best = -1;
    size_t best_len = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (t->special[i] || !bit_set(mask, (uint32_t)i)) {
            continue;
        }
        size_t len = strlen(t->text[i]);
        if (len > best_len && strncmp(rest, t->text[i], len) == 0) {
            best = (long)i;
            best_len = len;
        }
    }
    return best;
}

/* Greedy longest-match tokenizer over the table (used as the host tokenize callback). */
static inline size_t greedy_tokenize(const token_table *t, const uint8_t *bytes, size_t len,
                                     uint32_t *out, size_t cap) {
    size_t n = 0, at = 0;
    while (at < len) {
        long best = -1;
        size_t best_len = 0;
        for (size_t i = 0; i < t->n; i++) {
            size_t l = strlen(t->text[i]);
            if (!t->special[i] && l > best_len && l <= len - at &&
                memcmp(bytes + at, t->text[i], l) == 0) {
                best = (long)i;
                best_len = l;
            }
        }
        if (best < 0) {
            break;
        }
        if (n < cap) {
            out[n] = (uint32_t)best;
        }
        n++;
        at += best_len;
    }
    return n;
}

#endif
