// Stand-ins for the onnxruntime-genai declarations that src/constrained_logits_processor.cpp
// (at commit 05f5749) uses; written for bench/real-clients, not onnxruntime-genai's code.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <future>
#include <limits>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#define USE_GUIDANCE 1

namespace Generators {
namespace fs = std::filesystem;

enum struct DeviceType { CPU, CUDA };

template <typename T>
struct DeviceSpan {
    std::span<T> span;
    std::span<T> CpuSpan() { return span; }
    std::span<T> Span() { return span; }
    void CopyCpuToDevice() {}
};

template <typename T>
void copy(std::span<const T> src, std::span<T> dst) {
    std::copy(src.begin(), src.end(), dst.begin());
}

struct DeviceInterface {
    DeviceType GetType() const { return DeviceType::CPU; }
    template <typename T>
    DeviceSpan<T> Allocate(size_t n) {
        storage.emplace_back(n * sizeof(T));
        return DeviceSpan<T>{std::span<T>((T *) storage.back().data(), n)};
    }
    void LaunchAddLogitsMask(float *, int, int, const uint32_t *) { throw std::runtime_error("no CUDA here"); }
    std::vector<std::vector<char>> storage;
};

struct Tokenizer {
    std::vector<std::string> tokens;  // token bytes; greedy longest match (a stand-in)
    std::vector<int32_t> Encode(const char * text) const;
};

struct Model {
    std::vector<std::string> tokens;
    std::shared_ptr<Tokenizer> CreateTokenizer() const {
        auto t = std::make_shared<Tokenizer>();
        t->tokens = tokens;
        return t;
    }
};

struct GeneratorParams {
    struct {
        struct {
            std::vector<int32_t> eos_token_id;
            int vocab_size;
        } model;
        fs::path config_path;
    } config;
    struct {
        int batch_size = 1;
        int num_beams = 1;
    } search;
    std::string guidance_type;
    std::string guidance_data;
    bool guidance_ff_tokens_enabled = false;
    DeviceInterface * p_device = nullptr;
};

struct State {
    std::shared_ptr<GeneratorParams> params_;
    const Model & model_;
};

inline void Log(const char *, const char *) {}
}  // namespace Generators
