// The input generators of vectors.json (make_vectors.mjs has the same):
// bytes made from a seed, so the committed vectors hold no file bytes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dedupd::chunk::testing {

struct Generator {
  std::string kind = "xorshift32";  // xorshift32, zeros, pattern, mixed
  std::uint32_t seed = 0;
  std::uint64_t period = 0;  // pattern
  std::uint64_t run = 0;     // mixed
};

// Produces the generator's stream from offset 0, piece by piece.
class SeededBytes {
 public:
  explicit SeededBytes(const Generator& g) : g_(g), state_(g.seed) {
    if (g_.kind == "pattern") {
      period_.resize(g_.period);
      for (auto& b : period_) b = step();
    }
  }

  void fill(std::span<std::uint8_t> out) {
    for (auto& b : out) {
      if (g_.kind == "zeros") {
        b = 0;
      } else if (g_.kind == "pattern") {
        b = period_[offset_ % period_.size()];
      } else {
        const std::uint8_t x = step();
        b = (g_.kind == "mixed" && (offset_ / g_.run) % 2 == 1) ? 0 : x;
      }
      ++offset_;
    }
  }

  std::vector<std::uint8_t> take(std::size_t n) {
    std::vector<std::uint8_t> v(n);
    fill(v);
    return v;
  }

 private:
  // xorshift32, shifts 13, 17, 5; a byte is the low 8 bits after one step.
  std::uint8_t step() {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 17;
    state_ ^= state_ << 5;
    return std::uint8_t(state_);
  }

  Generator g_;
  std::uint32_t state_;
  std::uint64_t offset_ = 0;
  std::vector<std::uint8_t> period_;
};

}  // namespace dedupd::chunk::testing
