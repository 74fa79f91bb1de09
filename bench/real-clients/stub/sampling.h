// Stand-ins for the parts of llama.cpp's headers that common/llguidance.cpp uses
// (written for this check; the real file is compiled unchanged).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
typedef int32_t llama_token;
#define LLAMA_TOKEN_NULL -1
#define LLAMA_USE_LLGUIDANCE 1
struct llama_vocab;
struct llama_token_data { llama_token id; float logit; float p; };
struct llama_token_data_array { llama_token_data * data; size_t size; int64_t selected; bool sorted; };
struct llama_sampler;
struct llama_sampler_i {
    const char * (*name)(const llama_sampler *);
    void (*accept)(llama_sampler *, llama_token);
    void (*apply)(llama_sampler *, llama_token_data_array *);
    void (*reset)(llama_sampler *);
    llama_sampler * (*clone)(const llama_sampler *);
    void (*free)(llama_sampler *);
    void * backend_init; void * backend_accept; void * backend_apply; void * backend_set_input; void * backend_reset;
};
struct llama_sampler { const llama_sampler_i * iface; void * ctx; };
llama_sampler * llama_sampler_init(const llama_sampler_i * iface, void * ctx);
int32_t llama_tokenize(const llama_vocab *, const char *, int32_t, llama_token *, int32_t, bool, bool);
int32_t llama_detokenize(const llama_vocab *, const llama_token *, int32_t, char *, int32_t, bool, bool);
llama_token llama_vocab_eot(const llama_vocab *);
llama_token llama_vocab_eos(const llama_vocab *);
int32_t llama_vocab_n_tokens(const llama_vocab *);
llama_sampler * llama_sampler_init_llg(const llama_vocab * vocab, const char * grammar_kind, const char * grammar_data);
#define GGML_ABORT(...) do { fprintf(stderr, __VA_ARGS__); abort(); } while (0)
#define GGML_ASSERT(x) do { if (!(x)) { fprintf(stderr, "GGML_ASSERT %s\n", #x); abort(); } } while (0)
