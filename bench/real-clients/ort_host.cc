// Host for onnxruntime-genai's src/constrained_logits_processor.cpp (compiled unchanged):
// a model directory holding tokenizer.json, a stand-in tokenizer (greedy over a token table
// from dump_vocab.py), and the generator's loop: ProcessLogits over a batch of pseudo-random
// logits, a greedy pick per row, CommitTokens for every row (finished rows commit EOS), and
// GetFFTokens when forced tokens are on (batch 1). Prints each row's allowed count, pick and
// forced tokens at every step.
#include <cstdio>
#include <cstring>
#include "constrained_logits_processor.h"

using namespace Generators;

static std::vector<std::string> load_table(const char * path) {
    std::vector<std::string> out;
    FILE * f = fopen(path, "r");
    if (!f) { fprintf(stderr, "no table %s\n", path); exit(2); }
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        std::string hex(line + 2), bytes;
        while (!hex.empty() && (hex.back() == '\n' || hex.back() == '\r')) hex.pop_back();
        for (size_t i = 0; hex != "-" && i + 1 < hex.size(); i += 2) bytes += (char) strtol(hex.substr(i, 2).c_str(), nullptr, 16);
        out.push_back(line[0] == '1' ? std::string() : bytes);  // specials: not text
    }
    fclose(f);
    return out;
}

std::vector<int32_t> Tokenizer::Encode(const char * text) const {
    std::vector<int32_t> out;
    size_t len = strlen(text), at = 0;
    while (at < len) {
        int best = -1; size_t bl = 0;
        for (size_t i = 0; i < tokens.size(); i++) {
            const std::string & t = tokens[i];
            if (t.size() > bl && t.size() <= len - at && memcmp(text + at, t.data(), t.size()) == 0) { best = (int) i; bl = t.size(); }
        }
        if (best < 0) break;
        out.push_back(best);
        at += bl;
    }
    return out;
}

static uint64_t mix(uint64_t x) { x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL; x ^= x >> 33; return x; }

int main(int argc, char ** argv) {
    if (argc < 3) { fprintf(stderr, "usage: ort_host MODEL_DIR TOKEN_TABLE\n"); return 2; }
    setvbuf(stdout, nullptr, _IONBF, 0);
    Model model{load_table(argv[2])};
    DeviceInterface cpu;
    struct Case { const char * type; const char * data; int batch; bool ff; };
    Case cases[] = {
        {"json_schema", "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":8},\"age\":{\"type\":\"integer\"}},\"required\":[\"name\",\"age\"],\"additionalProperties\":false}", 2, false},
        {"json_schema", "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":8},\"age\":{\"type\":\"integer\"}},\"required\":[\"name\",\"age\"],\"additionalProperties\":false}", 1, true},
        {"regex", "(yes|no|maybe)( [0-9]{1,3})?", 3, false},
        {"lark_grammar", "start: \"The answer is \" NUM \".\"\nNUM: /[0-9]{1,4}/\n", 1, true},
        {"lark_grammar", "start: item+\nitem: \"[\" WORD \"]\"\nWORD: /[a-z]{1,5}/\n", 2, false},
    };
    for (auto & c : cases) {
        for (uint64_t seed = 1; seed <= 3; seed++) {
            auto params = std::make_shared<GeneratorParams>();
            params->config.model.eos_token_id = {128009};
            params->config.model.vocab_size = (int) model.tokens.size();
            params->config.config_path = argv[1];
            params->search.batch_size = c.batch;
            params->guidance_type = c.type;
            params->guidance_data = c.data;
            params->guidance_ff_tokens_enabled = c.ff;
            params->p_device = &cpu;
            State state{params, model};
            printf("case %s batch %d ff %d seed %llu\n", c.type, c.batch, (int) c.ff, (unsigned long long) seed);
            try {
            GuidanceLogitsProcessor proc(state);
            size_t v = model.tokens.size();
            std::vector<bool> done(c.batch, false);
            for (int step = 0; step < 40; step++) {
                std::vector<float> logits(v * c.batch);
                for (size_t i = 0; i < logits.size(); i++) logits[i] = (float) (mix(seed * 1000003 + step * 7919 + i) % 100000);
                proc.ProcessLogits(DeviceSpan<float>{std::span<float>(logits)});
                std::vector<int32_t> picks(c.batch);
                bool all_done = true;
                for (int r = 0; r < c.batch; r++) {
                    int allowed = 0, best = -1;
                    for (size_t i = 0; i < v; i++) {
                        float l = logits[r * v + i];
                        if (l == std::numeric_limits<float>::lowest()) continue;
                        allowed++;
                        if (best < 0 || l > logits[r * v + best]) best = (int) i;
                    }
                    if (getenv("DUMP_ALLOWED") && atoi(getenv("DUMP_ALLOWED")) == step) {
                        for (size_t i = 0; i < v; i++)
                            if (logits[r * v + i] != std::numeric_limits<float>::lowest()) fprintf(stderr, "allowed %d %zu\n", r, i);
                    }
                    picks[r] = done[r] ? 128009 : best;
                    printf("  step %d row %d: %d allowed, pick %d\n", step, r, allowed, picks[r]);
                    if (picks[r] == 128009) done[r] = true;
                    all_done = all_done && done[r];
                }
                proc.CommitTokens(std::span<int32_t>(picks));
                for (int r = 0; r < c.batch; r++) {
                    auto ff = proc.GetFFTokens(r);
                    if (!ff.empty()) {
                        printf("  step %d row %d: ff", step, r);
                        for (auto t : ff) printf(" %d", t);
                        printf("\n");
                    }
                }
                if (all_done) break;
            }
            proc.GetMask();  // the last asynchronous mask, before the processor goes
            } catch (const std::exception & e) {
                // The texts differ between libraries; that the processor throws is compared.
                printf("  exception\n");
                fprintf(stderr, "exception: %s\n", e.what());
            }
        }
    }
    return 0;
}
