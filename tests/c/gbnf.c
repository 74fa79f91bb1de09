/* GBNF through the C ABI (sieve_grammar_new_gbnf with its versioned options, and
 * SIEVE_GRAMMAR_KIND_GBNF through sieve_grammar_new), checked by masks; and error locations
 * read from the error's fields: line and column for GBNF and Lark syntax errors, the JSON
 * pointer for JSON Schema and structural-tag errors (the message shows the same place, as
 * before the location became a field). */
#include "common.h"

#define ID(c) ((uint32_t)((c) - 0x20))
#define THE 97u
#define ANSWER 98u
#define IS 99u
#define SPACE_WORD 100u
#define DOUBLE_ZERO 111u
#define TWELVE 112u

static const char *ANSWER_GBNF = "# an answer, llama.cpp style\n"
                                 "root ::= \"The answer is \" num\n"
                                 "num  ::= [0-9]+ (\".\" [0-9]+)?\n";

/* The mask after "The answer is " allows digits only; after "12", also "." and EOS. */
static void check_answer(const sieve_grammar *g, uint32_t eos, uint32_t *first_mask) {
    sieve_matcher *m = NULL;
    CHECK_OK(sieve_matcher_new(g, &m));
    size_t words = sieve_matcher_mask_words(m);
    uint32_t mask[8];
    CHECK(words <= 8);
    CHECK_OK(sieve_matcher_compute_mask(m, mask, words));
    CHECK(mask_bit(mask, THE) && !mask_bit(mask, eos) && !mask_bit(mask, ID('1')));
    const uint32_t prefix[] = {THE, ANSWER, IS, SPACE_WORD};
    CHECK_OK(sieve_matcher_consume_tokens(m, prefix, 4));
    CHECK_OK(sieve_matcher_compute_mask(m, mask, words));
    memcpy(first_mask, mask, words * sizeof *mask);
    for (char c = '0'; c <= '9'; c++) {
        CHECK(mask_bit(mask, ID(c)));
    }
    CHECK(mask_bit(mask, TWELVE) && mask_bit(mask, DOUBLE_ZERO));
    CHECK(!mask_bit(mask, ID('a')) && !mask_bit(mask, ID('.')) && !mask_bit(mask, eos));
    CHECK(!mask_bit(mask, SPACE_WORD) && !mask_bit(mask, THE));
    CHECK(!sieve_matcher_is_accepting(m));
    CHECK_OK(sieve_matcher_consume_token(m, TWELVE));
    CHECK_OK(sieve_matcher_compute_mask(m, mask, words));
    CHECK(mask_bit(mask, ID('.')) && mask_bit(mask, ID('3')) && mask_bit(mask, eos));
    CHECK(!mask_bit(mask, ID('a')));
    CHECK(sieve_matcher_is_accepting(m));
    CHECK_STATUS(sieve_matcher_consume_token(m, ID('x')), SIEVE_STATUS_TOKEN_REJECTED);
    sieve_matcher_free(m);
}

/* A grammar error: status, line and column, no pointer; the message starts "line:col: ". */
static void check_located(sieve_status status, sieve_error *err, uint32_t line,
                          const char *what) {
    CHECK(status == SIEVE_STATUS_GRAMMAR_ERROR && err != NULL);
    CHECK(sieve_error_status(err) == SIEVE_STATUS_GRAMMAR_ERROR);
    char prefix[32];
    snprintf(prefix, sizeof prefix, "%u:%u: ", sieve_error_line(err), sieve_error_column(err));
    printf("%s: line %u column %u: %s\n", what, sieve_error_line(err), sieve_error_column(err),
           sieve_error_message(err));
    CHECK(sieve_error_line(err) == line && sieve_error_column(err) > 0);
    CHECK(sieve_error_json_pointer(err) == NULL);
    CHECK(strncmp(sieve_error_message(err), prefix, strlen(prefix)) == 0);
    sieve_error_free(err);
}

/* A JSON error: the pointer from its field, no line; the message starts "at <pointer>: ". */
static void check_pointer(sieve_status status, sieve_error *err, const char *pointer,
                          const char *what) {
    CHECK(status == SIEVE_STATUS_GRAMMAR_ERROR && err != NULL);
    const char *p = sieve_error_json_pointer(err);
    printf("%s: pointer %s: %s\n", what, p ? p : "(none)", sieve_error_message(err));
    CHECK(p != NULL && strcmp(p, pointer) == 0);
    CHECK(sieve_error_line(err) == 0);
    char prefix[128];
    snprintf(prefix, sizeof prefix, "at %s: ", pointer);
    CHECK(strncmp(sieve_error_message(err), prefix, strlen(prefix)) == 0);
    sieve_error_free(err);
}

int main(void) {
    uint32_t eos;
    const sieve_tokenizer *tok = small_tokenizer(&eos);
    uint32_t mask_new[8] = {0}, mask_kind[8] = {0};

    /* sieve_grammar_new_gbnf with the defaults (NULL options). */
    const sieve_grammar *g = NULL;
    CHECK_OK(sieve_grammar_new_gbnf(tok, (const uint8_t *)ANSWER_GBNF, strlen(ANSWER_GBNF), NULL,
                                    NULL, &g, NULL));
    check_answer(g, eos, mask_new);
    sieve_grammar_free(g);

    /* The same through sieve_grammar_new and the kind: the same masks. */
    g = NULL;
    CHECK_OK(sieve_grammar_new(tok, SIEVE_GRAMMAR_KIND_GBNF, (const uint8_t *)ANSWER_GBNF,
                               strlen(ANSWER_GBNF), NULL, &g, NULL));
    check_answer(g, eos, mask_kind);
    CHECK(memcmp(mask_new, mask_kind, sizeof mask_new) == 0);
    sieve_grammar_free(g);
    printf("gbnf: masks checked (sieve_grammar_new_gbnf and SIEVE_GRAMMAR_KIND_GBNF)\n");

    /* Options: another start rule, and left recursion (refused by default, as llama.cpp). */
    const char *list = "root ::= \"x\"\n"
                       "list ::= list \",\" item | item\n"
                       "item ::= [0-9]\n";
    sieve_error *err = NULL;
    g = NULL;
    sieve_status s =
        sieve_grammar_new_gbnf(tok, (const uint8_t *)list, strlen(list), NULL, NULL, &g, &err);
    CHECK(g == NULL);
    check_located(s, err, 2, "gbnf left recursion");
    sieve_gbnf_options opts = SIEVE_GBNF_OPTIONS_INIT;
    opts.root = "list";
    opts.allow_left_recursion = true;
    CHECK_OK(sieve_grammar_new_gbnf(tok, (const uint8_t *)list, strlen(list), &opts, NULL, &g,
                                    NULL));
    sieve_matcher *m = NULL;
    CHECK_OK(sieve_matcher_new(g, &m));
    const uint32_t items[] = {ID('1'), ID(','), ID('2'), ID(','), ID('3')};
    CHECK_OK(sieve_matcher_consume_tokens(m, items, 5));
    CHECK(sieve_matcher_is_accepting(m));
    CHECK_STATUS(sieve_matcher_consume_token(m, ID('x')), SIEVE_STATUS_TOKEN_REJECTED);
    sieve_matcher_free(m);
    sieve_grammar_free(g);
    /* An unknown start rule is an error. */
    opts.root = "nope";
    g = NULL;
    CHECK_STATUS(sieve_grammar_new_gbnf(tok, (const uint8_t *)list, strlen(list), &opts, NULL, &g,
                                        NULL),
                 SIEVE_STATUS_GRAMMAR_ERROR);
    /* Bad options: a short struct_size, a root that is not UTF-8. */
    sieve_gbnf_options short_opts = {.struct_size = 1};
    CHECK_STATUS(sieve_grammar_new_gbnf(tok, (const uint8_t *)list, strlen(list), &short_opts,
                                        NULL, &g, NULL),
                 SIEVE_STATUS_INVALID_ARGUMENT);
    sieve_gbnf_options bad_root = SIEVE_GBNF_OPTIONS_INIT;
    bad_root.root = "\xff";
    CHECK_STATUS(sieve_grammar_new_gbnf(tok, (const uint8_t *)list, strlen(list), &bad_root, NULL,
                                        &g, NULL),
                 SIEVE_STATUS_INVALID_ARGUMENT);
    CHECK(g == NULL);
    printf("gbnf: options checked\n");

    /* Syntax errors: line and column from the error's fields. */
    const char *bad_gbnf = "root ::= \"a\" x\nx ::= \"b\" @ \"c\"\n";
    err = NULL;
    s = sieve_grammar_new(tok, SIEVE_GRAMMAR_KIND_GBNF, (const uint8_t *)bad_gbnf,
                          strlen(bad_gbnf), NULL, &g, &err);
    check_located(s, err, 2, "gbnf syntax error");
    const char *bad_lark = "start: \"a\" b\nb: \"b\" @ \"c\"\n";
    err = NULL;
    s = sieve_grammar_new(tok, SIEVE_GRAMMAR_KIND_LARK, (const uint8_t *)bad_lark,
                          strlen(bad_lark), NULL, &g, &err);
    check_located(s, err, 2, "lark syntax error");

    /* JSON pointers from the error's field. */
    const char *schema = "{\"properties\":{\"a\":{\"$ref\":\"https://example.invalid/s.json\"}}}";
    err = NULL;
    s = sieve_grammar_new(tok, SIEVE_GRAMMAR_KIND_JSON_SCHEMA, (const uint8_t *)schema,
                          strlen(schema), NULL, &g, &err);
    check_pointer(s, err, "/properties/a", "json schema");
    const char *tag = "{\"type\":\"structural_tag\",\"format\":{\"type\":\"sequence\","
                      "\"elements\":[{\"type\":\"const_string\",\"value\":\"a\"},"
                      "{\"type\":\"json_schema\",\"json_schema\":"
                      "{\"type\":\"object\",\"x-guidance\":1}}]}}";
    err = NULL;
    s = sieve_grammar_new(tok, SIEVE_GRAMMAR_KIND_STRUCTURAL_TAG, (const uint8_t *)tag,
                          strlen(tag), NULL, &g, &err);
    check_pointer(s, err, "/format/elements/1/json_schema/x-guidance", "structural tag");
    CHECK(g == NULL);

    sieve_tokenizer_free(tok);
    printf("gbnf: ok\n");
    return 0;
}
