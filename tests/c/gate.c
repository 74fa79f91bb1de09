/* Lazy grammars, a reasoning phase and stop strings through the C API (issue 18), over the
 * small byte-table tokenizer: the grammar waits for the trigger "<f>", then constrains; a
 * reasoning phase ends at '#' and is cut short by its budget; rollback across the activation
 * point; a stop controller with a stop string holds back text that may begin it. */
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
    const char *lark = "start: \"<f>\" /[0-9]+/ \"</f>\"";
    const sieve_grammar *g = NULL;
    CHECK_OK(sieve_grammar_new(tok, SIEVE_GRAMMAR_KIND_LARK, (const uint8_t *)lark, strlen(lark),
                               NULL, &g, NULL));

    /* Lazy: inactive until "<f>". */
    const char *triggers[] = {"<f>"};
    sieve_gate_config cfg = SIEVE_GATE_CONFIG_INIT;
    cfg.lazy = true;
    cfg.trigger_strings = triggers;
    cfg.n_trigger_strings = 1;
    const sieve_gate *gate = NULL;
    CHECK_OK(sieve_gate_new(tok, &cfg, NULL, &gate, NULL));
    sieve_matcher *m = NULL;
    CHECK_OK(sieve_matcher_new_gated(g, gate, &m));
    size_t words = sieve_matcher_mask_words(m);
    uint32_t *mask = calloc(words, sizeof *mask);
    CHECK(mask != NULL);
    CHECK(sieve_matcher_gate_phase(m) == SIEVE_GATE_PHASE_WAITING);
    consume_text(m, "free text, any <b>yte");
    CHECK(sieve_matcher_is_unconstrained(m));
    CHECK(sieve_matcher_is_accepting(m));
    CHECK_OK(sieve_matcher_compute_mask(m, mask, words));
    CHECK(allowed(mask, id_of('z')) && allowed(mask, eos));
    consume_text(m, "<f");
    CHECK(sieve_matcher_gate_phase(m) == SIEVE_GATE_PHASE_WAITING);
    consume_text(m, ">");
    CHECK(sieve_matcher_gate_phase(m) == SIEVE_GATE_PHASE_ACTIVE);
    CHECK(!sieve_matcher_is_unconstrained(m));
    CHECK_OK(sieve_matcher_compute_mask(m, mask, words));
    CHECK(allowed(mask, id_of('7')) && !allowed(mask, id_of('z')) && !allowed(mask, eos));
    consume_text(m, "42</f>");
    CHECK(sieve_matcher_is_accepting(m));
    /* Back before the trigger: waiting again, unconstrained. */
    CHECK_OK(sieve_matcher_rollback(m, 7));
    CHECK(sieve_matcher_gate_phase(m) == SIEVE_GATE_PHASE_WAITING);
    CHECK(sieve_matcher_is_unconstrained(m));
    sieve_matcher_free(m);
    sieve_gate_free(gate);
    printf("gate: trigger, activation and rollback checked\n");

    /* Reasoning: ends at '#', at most 3 tokens; then the grammar applies at once. */
    uint32_t end = id_of('#');
    sieve_gate_config think = SIEVE_GATE_CONFIG_INIT;
    think.reasoning = true;
    think.reasoning_end_tokens = &end;
    think.n_reasoning_end_tokens = 1;
    think.reasoning_budget = 3;
    CHECK_OK(sieve_gate_new(tok, &think, NULL, &gate, NULL));
    CHECK_OK(sieve_matcher_new_gated(g, gate, &m));
    CHECK(sieve_matcher_gate_phase(m) == SIEVE_GATE_PHASE_REASONING);
    consume_text(m, "hmm");
    CHECK_OK(sieve_matcher_compute_mask(m, mask, words));
    CHECK(allowed(mask, end) && !allowed(mask, id_of('h')) && !allowed(mask, eos));
    consume_text(m, "#");
    CHECK(sieve_matcher_gate_phase(m) == SIEVE_GATE_PHASE_ACTIVE);
    CHECK_OK(sieve_matcher_compute_mask(m, mask, words));
    CHECK(allowed(mask, id_of('<')) && !allowed(mask, id_of('h')));
    sieve_matcher_free(m);
    sieve_gate_free(gate);
    printf("gate: reasoning budget checked\n");

    /* A bad pattern is a grammar error. */
    const char *bad[] = {"a*"};
    sieve_gate_config pat = SIEVE_GATE_CONFIG_INIT;
    pat.lazy = true;
    pat.trigger_patterns = bad;
    pat.n_trigger_patterns = 1;
    sieve_error *err = NULL;
    gate = NULL;
    CHECK_STATUS(sieve_gate_new(tok, &pat, NULL, &gate, &err), SIEVE_STATUS_GRAMMAR_ERROR);
    CHECK(gate == NULL && err != NULL);
    sieve_error_free(err);

    /* Stop strings: "END" is never shown; "E" is held back until it cannot begin it. */
    const char *stops[] = {"END"};
    sieve_stop_controller *sc = NULL;
    CHECK_OK(sieve_stop_controller_new(tok, &eos, 1, stops, 1, NULL, NULL, &sc, NULL));
    uint8_t out[2048];
    size_t n = 0;
    bool stopped = false;
    CHECK_OK(sieve_stop_controller_commit_token(sc, id_of('a'), out, sizeof out, &n, &stopped));
    CHECK(n == 1 && out[0] == 'a' && !stopped);
    CHECK_OK(sieve_stop_controller_commit_token(sc, id_of('E'), out, sizeof out, &n, &stopped));
    CHECK(n == 0 && !stopped);
    CHECK_OK(sieve_stop_controller_commit_token(sc, id_of('x'), out, sizeof out, &n, &stopped));
    CHECK(n == 2 && memcmp(out, "Ex", 2) == 0 && !stopped);
    CHECK_OK(sieve_stop_controller_commit_token(sc, id_of('E'), out, sizeof out, &n, &stopped));
    CHECK_OK(sieve_stop_controller_commit_token(sc, id_of('N'), out, sizeof out, &n, &stopped));
    CHECK_OK(sieve_stop_controller_commit_token(sc, id_of('D'), out, sizeof out, &n, &stopped));
    CHECK(n == 0 && stopped && sieve_stop_controller_is_stopped(sc));
    sieve_stop_controller_free(sc);
    printf("gate: stop strings checked\n");

    free(mask);
    sieve_grammar_free(g);
    sieve_tokenizer_free(tok);
    return 0;
}
