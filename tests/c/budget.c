/* Budget mode through the C API: sieve_matcher_shortest_completion,
 * sieve_matcher_completion_tokens and sieve_matcher_compute_mask_within over the small byte
 * table tokenizer. A generation that always picks the highest allowed id (the longest words
 * sit at the end of the table) is accepting when its budget runs out. */
#include <stdbool.h>

#include "common.h"

static uint32_t id_of(char c) { return (uint32_t)(c - 0x20); }

static size_t last_bit(const uint32_t *mask, size_t words) {
    for (size_t w = words; w-- > 0;) {
        if (mask[w] != 0) {
            size_t b = 31;
            while (((mask[w] >> b) & 1u) == 0) {
                b--;
            }
            return w * 32 + b;
        }
    }
    return (size_t)-1;
}

int main(void) {
    uint32_t eos = 0;
    const sieve_tokenizer *tok = small_tokenizer(&eos);
    const char *schema = "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}},"
                         "\"required\":[\"name\"],\"additionalProperties\":false}";
    const sieve_grammar *g = NULL;
    CHECK_OK(sieve_grammar_new(tok, SIEVE_GRAMMAR_KIND_JSON_SCHEMA, (const uint8_t *)schema,
                               strlen(schema), NULL, &g, NULL));
    sieve_matcher *m = NULL;
    CHECK_OK(sieve_matcher_new(g, &m));

    /* The shortest completion: its length first (cap 0), then the bytes. */
    size_t need = 0;
    bool found = false;
    CHECK_STATUS(sieve_matcher_shortest_completion(m, NULL, 0, &need, &found),
                 SIEVE_STATUS_INSUFFICIENT_SIZE);
    CHECK(found && need == strlen("{\"name\":\"\"}"));
    uint8_t text[64];
    size_t n = 0;
    CHECK_OK(sieve_matcher_shortest_completion(m, text, sizeof text, &n, &found));
    CHECK(found && n == need && memcmp(text, "{\"name\":\"\"}", n) == 0);
    printf("budget: shortest completion %.*s\n", (int)n, (const char *)text);

    /* Mid-string: the completion closes the string and the object. */
    const char *prefix = "{\"name\":\"ab";
    for (const char *p = prefix; *p; p++) {
        CHECK_OK(sieve_matcher_consume_token(m, id_of(*p)));
    }
    CHECK_OK(sieve_matcher_shortest_completion(m, text, sizeof text, &n, &found));
    CHECK(found && n == 2 && memcmp(text, "\"}", 2) == 0);
    size_t tokens = 0;
    CHECK_OK(sieve_matcher_completion_tokens(m, &tokens, &found));
    CHECK(found && tokens == 1); /* the word "\"}" */

    /* A budget walk from the start, for every budget from the minimum up. */
    CHECK_OK(sieve_matcher_rollback(m, strlen(prefix)));
    CHECK_OK(sieve_matcher_completion_tokens(m, &tokens, &found));
    CHECK(found && tokens > 0 && tokens <= 11);
    size_t words = sieve_matcher_mask_words(m);
    uint32_t *mask = calloc(words, sizeof *mask);
    CHECK(mask != NULL);
    for (size_t budget = tokens; budget < tokens + 6; budget++) {
        sieve_matcher *b = NULL;
        CHECK_OK(sieve_matcher_clone(m, &b));
        size_t used = 0;
        while (used < budget) {
            CHECK_OK(sieve_matcher_compute_mask_within(b, budget - used, mask, words));
            size_t t = last_bit(mask, words);
            CHECK(t != (size_t)-1); /* never empty */
            if (t == eos) {
                break;
            }
            CHECK_OK(sieve_matcher_consume_token(b, (uint32_t)t));
            used++;
        }
        CHECK(sieve_matcher_is_accepting(b));
        sieve_matcher_free(b);
    }
    /* A short buffer and NULL arguments. */
    CHECK_STATUS(sieve_matcher_compute_mask_within(m, 3, mask, 0), SIEVE_STATUS_INSUFFICIENT_SIZE);
    CHECK_STATUS(sieve_matcher_compute_mask_within(NULL, 3, mask, words),
                 SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_matcher_completion_tokens(m, NULL, &found), SIEVE_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(sieve_matcher_shortest_completion(m, text, sizeof text, &n, NULL),
                 SIEVE_STATUS_NULL_ARGUMENT);
    free(mask);
    sieve_matcher_free(m);
    sieve_grammar_free(g);

    /* No completion at all: the word swallows the `!` that must follow it (with `%ignore`,
       the boundary repair leaves the grammar as written; core/docs/boundaries.md). */
    const char *nn = "start: WORD \"!\"\nWORD: /[a-z! ]+/\n%ignore \" \"\n";
    CHECK_OK(sieve_grammar_new(tok, SIEVE_GRAMMAR_KIND_LARK, (const uint8_t *)nn, strlen(nn),
                               NULL, &g, NULL));
    CHECK_OK(sieve_matcher_new(g, &m));
    CHECK_OK(sieve_matcher_shortest_completion(m, text, sizeof text, &n, &found));
    CHECK(!found && n == 0);
    CHECK_OK(sieve_matcher_completion_tokens(m, &tokens, &found));
    CHECK(!found && tokens == 0);
    sieve_matcher_free(m);
    sieve_grammar_free(g);
    sieve_tokenizer_free(tok);
    printf("budget: ok\n");
    return 0;
}
