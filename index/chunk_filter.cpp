#include "index/chunk_filter.hpp"

#include <algorithm>
#include <cmath>
#include <new>

#include <sys/mman.h>

namespace dedupd::index {

ChunkFilter::ChunkFilter(std::uint64_t capacity, bool at_bound)
    : capacity_(capacity), at_bound_(at_bound), num_blocks_(blocks_for(capacity)), blocks_(map_blocks(num_blocks_)) {}

std::size_t ChunkFilter::blocks_for(std::uint64_t capacity) {
  return std::max<std::size_t>(1, std::size_t(capacity * kBitsPerEntry / (8 * sizeof(Block))));
}

std::size_t ChunkFilter::mapped_bytes(std::uint64_t capacity) { return mapping_of(blocks_for(capacity)); }

std::size_t ChunkFilter::mapping_of(std::size_t blocks) {
  const std::size_t wanted = blocks * sizeof(Block);
  return wanted >= kHugePage ? (wanted + kHugePage - 1) / kHugePage * kHugePage : wanted;
}

// Huge pages where the kernel allows them: each probe of a filter of tens to
// hundreds of MiB is a cache miss, and with 4 KiB pages a TLB miss too. A
// filter of 2 MiB or more is mapped on a 2 MiB boundary (kernels before 6.7
// do not align anonymous mappings for it) and in whole huge pages; a smaller
// one stays on small pages, where a huge one would mostly be waste.
std::unique_ptr<ChunkFilter::Block[], ChunkFilter::Unmap> ChunkFilter::map_blocks(std::size_t n) {
  const std::size_t bytes = mapping_of(n);
  const bool huge = bytes >= kHugePage;
  const std::size_t slack = huge ? kHugePage : 0;
  void* p = ::mmap(nullptr, bytes + slack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  auto* start = static_cast<std::uint8_t*>(p);
  if (huge) {
    auto* aligned = reinterpret_cast<std::uint8_t*>((reinterpret_cast<std::uintptr_t>(start) + kHugePage - 1) &
                                                    ~std::uintptr_t(kHugePage - 1));
    if (aligned > start) ::munmap(start, std::size_t(aligned - start));
    if (const std::size_t tail = slack - std::size_t(aligned - start); tail > 0) ::munmap(aligned + bytes, tail);
    start = aligned;
    ::madvise(start, bytes, MADV_HUGEPAGE);
  }
  return std::unique_ptr<Block[], Unmap>(reinterpret_cast<Block*>(start), Unmap{bytes});
}

void ChunkFilter::Unmap::operator()(Block* b) const { ::munmap(b, bytes); }

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
  const std::uint64_t wanted_recent = s.recent;
  const std::uint64_t room = ChunkFilter::capacity_in(max_bytes);
  if (s.all + s.recent > room) {
    const long double share = static_cast<long double>(room) / static_cast<long double>(s.all + s.recent);
    s.all = std::uint64_t(static_cast<long double>(s.all) * share);
    s.recent = std::uint64_t(static_cast<long double>(s.recent) * share);
    s.at_bound = true;
  }
  // Whole huge pages may still pass the bound: the filter of both tables
  // keeps the whole pages the recent one leaves, and the recent one gets
  // what is left after them (up to what it wanted), so the bound stays used.
  auto left_after = [max_bytes](std::uint64_t capacity) {
    const std::uint64_t taken = ChunkFilter::mapped_bytes(capacity);
    return max_bytes > taken ? max_bytes - taken : 0;
  };
  if (ChunkFilter::mapped_bytes(s.all) + ChunkFilter::mapped_bytes(s.recent) > max_bytes) {
    s.all = std::min(s.all, ChunkFilter::capacity_within(left_after(s.recent)));
    s.recent = std::min({wanted_recent, s.all, ChunkFilter::capacity_within(left_after(s.all))});
    s.at_bound = true;
  }
  return s;
}

}  // namespace dedupd::index
