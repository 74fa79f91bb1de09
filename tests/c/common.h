/* Helpers shared by the C API tests: checks that exit with a message, file loading, and a
 * small byte-table tokenizer for when no tokenizer.json is available. */
#ifndef SIEVE_TEST_COMMON_H
#define SIEVE_TEST_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sieve.h"

#define CHECK(cond)                                                                       \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);      \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

#define CHECK_STATUS(call, want)                                                          \
    do {                                                                                  \
        sieve_status got_ = (call);                                                       \
        if (got_ != (want)) {                                                             \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s\n", __FILE__, __LINE__,   \
                    #call, sieve_status_name(got_), sieve_status_name(want));             \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

#define CHECK_OK(call) CHECK_STATUS(call, SIEVE_STATUS_OK)

/* Reads a whole file; NULL if it cannot be read. The caller frees the buffer. */
static inline char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    CHECK(buf != NULL);
    for (;;) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap) {
            break;
        }
        cap *= 2;
        char *grown = realloc(buf, cap);
        CHECK(grown != NULL);
        buf = grown;
    }
    fclose(f);
    *len = n;
    return buf;
}

/* A small tokenizer: the 95 printable ASCII bytes plus tab and newline, some multi-byte
 * words, then the special EOS token "<|eos|>" (its id is returned through eos_out). */
static inline const sieve_tokenizer *small_tokenizer(uint32_t *eos_out) {
    static const char *words[] = {
        "The", " answer", " is", " ", "{\"", "\":", "\",", "\"}", "name", "age", "tags",
        "true", "false", "null", "00", "12", "ing", " the", "\": \"", "\n  ",
    };
    size_t n_words = sizeof words / sizeof words[0];
    size_t n = 97 + n_words + 1;
    uint8_t bytes[1024];
    uint32_t lens[256];
    uint8_t flags[256];
    size_t at = 0, id = 0;
    for (int b = 0x20; b < 0x7f; b++, id++) {
        bytes[at++] = (uint8_t)b;
        lens[id] = 1;
        flags[id] = 0;
    }
    bytes[at++] = '\t';
    lens[id] = 1;
    flags[id++] = 0;
    bytes[at++] = '\n';
    lens[id] = 1;
    flags[id++] = 0;
    for (size_t w = 0; w < n_words; w++, id++) {
        size_t l = strlen(words[w]);
        memcpy(bytes + at, words[w], l);
        at += l;
        lens[id] = (uint32_t)l;
        flags[id] = 0;
    }
    const char *eos_name = "<|eos|>";
    memcpy(bytes + at, eos_name, strlen(eos_name));
    at += strlen(eos_name);
    lens[id] = (uint32_t)strlen(eos_name);
    flags[id] = 1;
    uint32_t eos = (uint32_t)id;
    CHECK(id + 1 == n);
    const sieve_tokenizer *tok = NULL;
    sieve_error *err = NULL;
    sieve_status s = sieve_tokenizer_new(bytes, at, lens, n, flags, &eos, 1, NULL, NULL, &tok, &err);
    if (s != SIEVE_STATUS_OK) {
        fprintf(stderr, "small tokenizer: %s\n", sieve_error_message(err));
        sieve_error_free(err);
        exit(1);
    }
    *eos_out = eos;
    return tok;
}

/* Loads tokenizer.json from `path` if it can be read, else the small tokenizer. */
static inline const sieve_tokenizer *load_tokenizer(const char *path) {
    size_t len = 0;
    char *text = path != NULL ? read_file(path, &len) : NULL;
    if (text == NULL) {
        uint32_t eos;
        printf("tokenizer: small byte table (no readable tokenizer.json)\n");
        return small_tokenizer(&eos);
    }
    const sieve_tokenizer *tok = NULL;
    sieve_error *err = NULL;
    sieve_status s = sieve_tokenizer_from_json((const uint8_t *)text, len, &tok, &err);
    free(text);
    if (s != SIEVE_STATUS_OK) {
        fprintf(stderr, "%s: %s\n", path, sieve_error_message(err));
        sieve_error_free(err);
        exit(1);
    }
    printf("tokenizer: %s\n", path);
    return tok;
}

static inline size_t popcount_mask(const uint32_t *mask, size_t words) {
    size_t n = 0;
    for (size_t i = 0; i < words; i++) {
        uint32_t w = mask[i];
        while (w) {
            w &= w - 1;
            n++;
        }
    }
    return n;
}

static inline int mask_bit(const uint32_t *mask, uint32_t t) {
    return (mask[t / 32] >> (t % 32)) & 1u;
}

/* The lowest allowed token id, or -1 if none. */
static inline long lowest_allowed(const uint32_t *mask, size_t words) {
    for (size_t i = 0; i < words; i++) {
        if (mask[i] != 0) {
            uint32_t w = mask[i];
            long bit = 0;
            while (!(w & 1u)) {
                w >>= 1;
                bit++;
            }
            return (long)(i * 32) + bit;
        }
    }
    return -1;
}

#endif
