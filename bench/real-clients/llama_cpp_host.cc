// Host for llama.cpp's common/llguidance.cpp (compiled unchanged): a small vocabulary with
// special tokens, llama_tokenize/llama_detokenize over it, and llama.cpp's sampling loop
// (apply the grammar sampler to all candidates, greedy pick over pseudo-random logits,
// accept), with clone and reset. Prints every step's allowed count and token.
#include "sampling.h"
#include <cmath>
#include <cstring>
#include <vector>
#include <string>

struct llama_vocab { std::vector<std::string> text; std::vector<bool> special; int eot; };

static llama_vocab V;

llama_sampler * llama_sampler_init(const llama_sampler_i * iface, void * ctx) {
    return new llama_sampler{iface, ctx};
}
int32_t llama_vocab_n_tokens(const llama_vocab * v) { return (int32_t) v->text.size(); }
llama_token llama_vocab_eot(const llama_vocab * v) { return v->eot; }
llama_token llama_vocab_eos(const llama_vocab * v) { return v->eot; }
int32_t llama_detokenize(const llama_vocab * v, const llama_token * t, int32_t n, char * out, int32_t cap, bool, bool unparse_special) {
    std::string s;
    for (int i = 0; i < n; i++) {
        if (!v->special[t[i]] || unparse_special) s += v->text[t[i]];
    }
    if ((int32_t) s.size() > cap) return -(int32_t) s.size();
    memcpy(out, s.data(), s.size());
    return (int32_t) s.size();
}
int32_t llama_tokenize(const llama_vocab * v, const char * text, int32_t len, llama_token * out, int32_t cap, bool, bool parse_special) {
    int32_t n = 0, at = 0;
    while (at < len) {
        int best = -1; size_t bl = 0;
        for (size_t i = 0; i < v->text.size(); i++) {
            if (v->special[i] && !parse_special) continue;
            const std::string & t = v->text[i];
            if (t.size() > bl && t.size() <= (size_t)(len - at) && memcmp(text + at, t.data(), t.size()) == 0) { best = (int) i; bl = t.size(); }
        }
        if (best < 0) return -(n + 1);
        if (n < cap) out[n] = best;
        n++; at += (int32_t) bl;
    }
    if (n > cap) return -n;
    return n;
}

static uint64_t mix(uint64_t x) { x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL; x ^= x >> 33; return x; }

// One generation: up to `steps` tokens; clone at step `clone_at` and finish the clone too.
static void run(const char * kind, const char * grammar, uint64_t seed, int steps, int clone_at) {
    llama_sampler * s = llama_sampler_init_llg(&V, kind, grammar);
    if (!s) { printf("init failed\n"); return; }
    std::vector<llama_sampler *> todo = {s};
    for (size_t k = 0; k < todo.size(); k++) {
        llama_sampler * cur = todo[k];
        std::string out;
        for (int step = 0; step < steps; step++) {
            std::vector<llama_token_data> cand(V.text.size());
            for (size_t i = 0; i < cand.size(); i++) {
                cand[i] = {(llama_token) i, (float) (mix(seed * 1000003 + step * 7919 + i + k * 31) % 100000) / 1000.0f, 0};
            }
            llama_token_data_array arr = {cand.data(), cand.size(), -1, false};
            cur->iface->apply(cur, &arr);
            int allowed = 0, best = -1;
            for (auto & c : cand) {
                if (std::isinf(c.logit)) continue;
                allowed++;
                if (best < 0 || c.logit > cand[best].logit) best = c.id;
            }
            printf("  [%zu] step %d: %d allowed, pick %d %s\n", k, step, allowed, best, best >= 0 ? V.text[best].c_str() : "-");
            if (best < 0) break;
            if (k == 0 && step == clone_at) todo.push_back(cur->iface->clone(cur));
            cur->iface->accept(cur, best);
            if (best == V.eot) break;
            out += V.text[best];
        }
        printf("  [%zu] text: %s\n", k, out.c_str());
    }
    todo[0]->iface->reset(todo[0]);
    for (auto * t : todo) { t->iface->free(t); delete t; }
}

// A token table from dump_vocab.py (`special hexbytes` per line, `-` for no bytes).
static bool load_table(const char * path) {
    FILE * f = fopen(path, "r");
    if (!f) return false;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        int special = line[0] == '1';
        std::string hex(line + 2), bytes;
        while (!hex.empty() && (hex.back() == '\n' || hex.back() == '\r')) hex.pop_back();
        for (size_t i = 0; hex != "-" && i + 1 < hex.size(); i += 2) bytes += (char) strtol(hex.substr(i, 2).c_str(), nullptr, 16);
        if (bytes == "<|eot_id|>") V.eot = (int) V.text.size();
        V.text.push_back(bytes);
        V.special.push_back(special);
    }
    fclose(f);
    return true;
}

int main() {
    const char * table = getenv("TOKEN_TABLE");
    if (table && load_table(table)) {
        goto cases;
    }
    for (int b = 0x20; b < 0x7f; b++) { V.text.push_back(std::string(1, (char) b)); V.special.push_back(false); }
    {
    const char * words[] = {"\n", "  ", "{\"", "\":", "\", \"", "\"}", "name", "age", "true", "false", "null", "12", "The", " answer", " is", "<f", "=", ">", "\":\"", "[", "]", "call"};
    for (auto w : words) { V.text.push_back(w); V.special.push_back(false); }
    const char * specials[] = {"<|python_tag|>", "<|eom_id|>", "<|eot_id|>"};
    for (auto w : specials) { V.text.push_back(w); V.special.push_back(true); }
    V.eot = (int) V.text.size() - 1;
    }
cases:

    struct { const char * kind; const char * g; } cases[] = {
        {"lark", "start: \"The answer is \" NUM\nNUM: /[0-9]{1,4}/\n"},
        {"json", "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":6},\"age\":{\"type\":\"integer\"}},\"required\":[\"name\",\"age\"],\"additionalProperties\":false}"},
        {"json", "{\"type\":\"array\",\"items\":{\"enum\":[true,null,12]},\"maxItems\":4}"},
        {"lark", "%llguidance {}\nstart: TEXT | fun\nTEXT: /[^{<](.|\\n)*/\nfun: <|python_tag|> %json {\"type\":\"object\",\"properties\":{\"name\":{\"const\":\"call\"}},\"required\":[\"name\"]} <|eom_id|>\n"},
        {"regex", "(ab|cd){1,3}[0-9]?"},
        {"lark", "start: \"x\" undefined\n"},
    };
    for (auto & c : cases) {
        for (uint64_t seed = 1; seed <= 3; seed++) {
            printf("case %s seed %llu\n", c.kind, (unsigned long long) seed);
            run(c.kind, c.g, seed, 40, 3);
        }
    }
    return 0;
}
