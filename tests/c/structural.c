/* Structural tags through the C API (issue 18): a preset for a model family, a structural
 * tag compiled with sieve_grammar_new_structural_tag, masks over free text, a trigger and a
 * tool call, and an error located by its JSON pointer. Uses the small byte-table tokenizer
 * (printable ASCII, one byte per token for single characters). */
#include <stdbool.h>

#include "common.h"

static uint32_t id_of(char c) { return (uint32_t)(c - 0x20); }

static bool allowed(const uint32_t *mask, uint32_t t) { return (mask[t / 32] >> (t % 32)) & 1u; }

static void consume_text(sieve_matcher *m, const char *text) {
    for (const char *p = text; *p; p++) {
        CHECK_OK(sieve_matcher_consume_token(m, id_of(*p)));
    }
}

int main(void) {
    uint32_t eos = 0;
    const sieve_tokenizer *tok = small_tokenizer(&eos);

    /* Free text; a tool call starts at "<f=" and must be one of the two tools. */
    const char *tag =
        "{\"type\":\"structural_tag\",\"format\":{\"type\":\"triggered_tags\","
        "\"triggers\":[\"<f=\"],\"tags\":["
        "{\"type\":\"tag\",\"begin\":\"<f=add>\",\"content\":{\"type\":\"json_schema\","
        "\"json_schema\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}},"
        "\"required\":[\"a\"],\"additionalProperties\":false}},\"end\":\"</f>\"},"
        "{\"type\":\"tag\",\"begin\":\"<f=echo>\",\"content\":{\"type\":\"any_text\"},"
        "\"end\":\"</f>\"}]}}";
    const sieve_grammar *g = NULL;
    CHECK_OK(sieve_grammar_new_structural_tag(tok, (const uint8_t *)tag, strlen(tag), NULL, NULL,
                                              &g, NULL));
    sieve_matcher *m = NULL;
    CHECK_OK(sieve_matcher_new(g, &m));
    size_t words = sieve_matcher_mask_words(m);
    uint32_t *mask = calloc(words, sizeof *mask);
    CHECK(mask != NULL);

    /* In free text anything goes, and the output may end. */
    consume_text(m, "Let me add: <f");
    CHECK_OK(sieve_matcher_compute_mask(m, mask, words));
    CHECK(allowed(mask, id_of('=')) && allowed(mask, id_of('x')));
    CHECK(!allowed(mask, eos) || sieve_matcher_is_accepting(m));
    /* After the trigger only the tools' names may follow. */
    consume_text(m, "=");
    CHECK_OK(sieve_matcher_compute_mask(m, mask, words));
    CHECK(allowed(mask, id_of('a')) && allowed(mask, id_of('e')));
    CHECK(!allowed(mask, id_of('x')) && !allowed(mask, eos));
    consume_text(m, "add>");
    CHECK_OK(sieve_matcher_compute_mask(m, mask, words));
    CHECK(allowed(mask, id_of('{')) && !allowed(mask, id_of('"')));
    consume_text(m, "{\"a\":");
    CHECK_OK(sieve_matcher_compute_mask(m, mask, words));
    CHECK(allowed(mask, id_of('7')) && !allowed(mask, id_of('"')));
    consume_text(m, "7}</f> done");
    CHECK(sieve_matcher_is_accepting(m));
    CHECK_OK(sieve_matcher_consume_token(m, eos));
    printf("structural: free text, a trigger and a tool call checked\n");
    sieve_matcher_free(m);
    sieve_grammar_free(g);

    /* An error names the format at fault by its JSON pointer. */
    const char *bad = "{\"type\":\"structural_tag\",\"format\":{\"type\":\"sequence\","
                      "\"elements\":[{\"type\":\"const_string\",\"value\":\"a\"},"
                      "{\"type\":\"no_such_type\"}]}}";
    sieve_error *err = NULL;
    g = NULL;
    CHECK_STATUS(sieve_grammar_new(tok, SIEVE_GRAMMAR_KIND_STRUCTURAL_TAG, (const uint8_t *)bad,
                                   strlen(bad), NULL, &g, &err),
                 SIEVE_STATUS_GRAMMAR_ERROR);
    CHECK(g == NULL && err != NULL);
    const char *pointer = sieve_error_json_pointer(err);
    CHECK(pointer != NULL && strcmp(pointer, "/format/elements/1/type") == 0);
    printf("structural: error at %s: %s\n", pointer, sieve_error_message(err));
    sieve_error_free(err);

    /* A preset: the size first, then the text, which compiles. */
    const char *tools = "[{\"type\":\"function\",\"function\":{\"name\":\"add\",\"parameters\":"
                        "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}},"
                        "\"required\":[\"a\"]}}}]";
    size_t need = 0;
    CHECK_STATUS(sieve_structural_tag_preset((const uint8_t *)"qwen3", 5, (const uint8_t *)tools,
                                             strlen(tools), NULL, 0, SIEVE_PRESET_PARALLEL_CALLS,
                                             NULL, 0, &need, NULL),
                 SIEVE_STATUS_INSUFFICIENT_SIZE);
    CHECK(need > 0);
    char *preset = malloc(need + 1);
    CHECK(preset != NULL);
    size_t len = 0;
    CHECK_OK(sieve_structural_tag_preset((const uint8_t *)"qwen3", 5, (const uint8_t *)tools,
                                         strlen(tools), NULL, 0, SIEVE_PRESET_PARALLEL_CALLS,
                                         (uint8_t *)preset, need + 1, &len, NULL));
    CHECK(len == need && preset[len] == '\0' && strstr(preset, "<tool_call>") != NULL);
    CHECK_OK(sieve_grammar_new_structural_tag(tok, (const uint8_t *)preset, len, NULL, NULL, &g,
                                              NULL));
    printf("structural: qwen3 preset, %zu bytes, compiles\n", len);
    sieve_grammar_free(g);
    free(preset);

    /* An unknown family is a grammar error. */
    err = NULL;
    CHECK_STATUS(sieve_structural_tag_preset((const uint8_t *)"nope", 4, (const uint8_t *)tools,
                                             strlen(tools), NULL, 0, 0, NULL, 0, &need, &err),
                 SIEVE_STATUS_GRAMMAR_ERROR);
    sieve_error_free(err);

    free(mask);
    sieve_tokenizer_free(tok);
    return 0;
}
