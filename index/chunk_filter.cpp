#include "index/chunk_filter.hpp"

#include <algorithm>
#include <cmath>

namespace dedupd::index {

ChunkFilter::ChunkFilter(std::uint64_t capacity, bool at_bound)
    : capacity_(capacity),
      at_bound_(at_bound),
      num_blocks_(std::max<std::size_t>(1, std::size_t(capacity * kBitsPerEntry / (8 * sizeof(Block))))),
      blocks_(std::make_unique<Block[]>(num_blocks_)) {}

double ChunkFilter::false_positive_rate() const {
  const double n = double(added());
  // Entries per block are Poisson with this mean; a block holding k of them
  // passes a stranger when each of its eight words has that one's bit set.
  const double mean = n / double(num_blocks_);
  double bloom = 0;
  if (mean > 0) {
    const double log_mean = std::log(mean);
    const auto last = std::uint64_t(mean + 12 * std::sqrt(mean) + 32);
    // log P(k) summed up term by term, not with lgamma(): that one writes
    // the global signgam, and status is read from any thread (ThreadSanitizer
    // caught it in IndexConcurrency).
    double log_p_k = -mean;
    for (std::uint64_t k = 0; k <= last; ++k) {
      if (k > 0) log_p_k += log_mean - std::log(double(k));
      bloom += std::exp(log_p_k) * std::pow(1 - std::pow(31.0 / 32.0, double(k)), 8);
    }
  }
  // A stranger sharing a stored entry's fingerprint passes whatever the bits.
  const double same_fingerprint = -std::expm1(-n / 4294967296.0);
  return std::min(1.0, same_fingerprint + (1 - same_fingerprint) * bloom);
}

ChunkFilterSizes chunk_filter_sizes(std::uint64_t entries, std::uint64_t merge_threshold, std::uint64_t max_bytes,
                                    std::uint64_t floor) {
  ChunkFilterSizes s;
  s.all = std::max(entries + entries / 4, floor);
  const std::uint64_t due = std::max(merge_threshold, entries / 16);
  s.recent = std::min(due * 2 + (1u << 16), s.all);
  const std::uint64_t room = ChunkFilter::capacity_in(max_bytes);
  if (s.all + s.recent > room) {
    const long double share = static_cast<long double>(room) / static_cast<long double>(s.all + s.recent);
    s.all = std::uint64_t(static_cast<long double>(s.all) * share);
    s.recent = std::uint64_t(static_cast<long double>(s.recent) * share);
    s.at_bound = true;
  }
  return s;
}

}  // namespace dedupd::index
