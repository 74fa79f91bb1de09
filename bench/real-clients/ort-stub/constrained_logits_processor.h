// Stand-in for onnxruntime-genai's src/constrained_logits_processor.h as the .cpp at commit
// 05f5749 uses it (members and helpers named as that file names them).
#pragma once
#include "generators.h"
#include "llguidance.h"

namespace Generators {

struct ConstrainedLogitsProcessor {
    virtual ~ConstrainedLogitsProcessor() = default;
    virtual void CommitTokens(std::span<int32_t> tokens) = 0;
    virtual void ProcessLogits(DeviceSpan<float> logits) = 0;
    virtual void Reset() = 0;
    virtual std::vector<int32_t> GetFFTokens(size_t index) = 0;
};

struct GuidanceLogitsProcessor : public ConstrainedLogitsProcessor {
    static constexpr const char * kDefaultVocabFile = "tokenizer.json";
    static constexpr const char * kTokenizePrefixStr = "\x02";

    GuidanceLogitsProcessor(const State & state);
    void ProcessLogits(DeviceSpan<float> logits) override;
    void CommitTokens(std::span<int32_t> tokens) override;
    void Reset() override;
    void ResetWithoutCompute();
    std::vector<int32_t> GetFFTokens(size_t index) override;
    std::vector<std::vector<uint32_t>> GetMask();
    static std::vector<int32_t> tokenize_partial(const Tokenizer * tokenizer, const size_t prefix_len,
                                                 const uint8_t * bytes, size_t bytes_len);

   private:
    std::vector<std::vector<uint32_t>> ComputeMask();
    struct LlgTokenizerDeleter {
        void operator()(LlgTokenizer * t) const { llg_free_tokenizer(t); }
    };
    struct LlgConstraintDeleter {
        void operator()(LlgConstraint * c) const { llg_free_constraint(c); }
    };
    struct TokenizeData {
        const Tokenizer * tokenizer;
        size_t prefix_len;
    };
    std::shared_ptr<GeneratorParams> params_;
    uint32_t eos_token_;
    std::shared_ptr<Tokenizer> tokenizer_;
    TokenizeData tokenize_data_;
    std::unique_ptr<LlgTokenizer, LlgTokenizerDeleter> llg_tokenizer_;
    std::vector<std::unique_ptr<LlgConstraint, LlgConstraintDeleter>> llg_constraints_;
    std::vector<std::vector<int32_t>> ff_tokens_batch_;
    std::future<std::vector<std::vector<uint32_t>>> mask_future_;
    std::vector<std::vector<uint32_t>> masks_;
};

std::unique_ptr<ConstrainedLogitsProcessor> CreateGuidanceLogitsProcessor(const State & state);
}  // namespace Generators
