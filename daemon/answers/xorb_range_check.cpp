#include "daemon/answers/xorb_range_check.hpp"

#include <lz4.h>

#include <algorithm>

#include <string>

namespace dedupd::daemon::answers {

namespace {

constexpr std::uint32_t kChunkHeaderBytes = 8;
// A chunk's compressed bytes never exceed what LZ4 may take for the
// largest chunk (uncompressed chunks take exactly their size).
constexpr std::uint32_t kMaxStoredBytes = LZ4_COMPRESSBOUND(kMaxChunkBytes);

enum Scheme : std::uint8_t { kNone = 0, kLz4 = 1, kGroupedLz4 = 2 };

std::uint32_t u24(const std::uint8_t* p) { return p[0] | (std::uint32_t(p[1]) << 8) | (std::uint32_t(p[2]) << 16); }

}  // namespace

std::string_view check_level_name(CheckLevel level) {
  switch (level) {
    case CheckLevel::structure:
      return "structure";
    case CheckLevel::index:
      return "index";
    case CheckLevel::xorb_hash:
      return "xorb_hash";
  }
  return "structure";
}

void ungroup4(std::span<const std::uint8_t> grouped, std::uint8_t* out) {
  const std::size_t n = grouped.size(), base = n / 4, extra = n % 4;
  std::size_t at = 0;
  for (std::size_t g = 0; g < 4; ++g) {
    const std::size_t size = base + (g < extra ? 1 : 0);
    for (std::size_t j = 0; j < size; ++j) out[4 * j + g] = grouped[at + j];
    at += size;
  }
}

RangeChecker::RangeChecker(RangeExpectation expected) : expected_(std::move(expected)) {
  blake3_hasher_init(&digest_);
  chunk_.reserve(kChunkHeaderBytes + kMaxChunkBytes);
}

base::Error RangeChecker::fail(std::uint64_t at, std::string message) const {
  return base::Error{"xet_download.verify", at, "xorb " + expected_.xorb.to_string() + ": " + std::move(message),
                     false};
}

base::Result<std::monostate> RangeChecker::begin_chunk(const std::uint8_t* header, std::uint64_t at) {
  if (header[0] != 0) return fail(at, "chunk header version " + std::to_string(header[0]) + ", not 0");
  const std::uint32_t stored = u24(&header[1]), unpacked = u24(&header[5]);
  if (header[4] > kGroupedLz4) return fail(at, "compression scheme " + std::to_string(header[4]) + " unknown");
  if (unpacked == 0 || unpacked > kMaxChunkBytes)
    return fail(at, "a chunk of " + std::to_string(unpacked) + " bytes unpacked");
  if (stored == 0 || stored > kMaxStoredBytes || (header[4] == kNone && stored != unpacked))
    return fail(at, "a chunk of " + std::to_string(stored) + " bytes stored for " + std::to_string(unpacked));
  out_.chunk_starts.push_back(std::uint32_t(at));
  chunk_size_ = kChunkHeaderBytes + stored;
  if (at + chunk_size_ > expected_.length) return fail(at, "a chunk runs past the range's end");
  return std::monostate{};
}

base::Result<std::monostate> RangeChecker::feed(std::span<const std::uint8_t> bytes) {
  if (seen_ + bytes.size() > expected_.length)
    return fail(expected_.length, "more bytes than the range's " + std::to_string(expected_.length));
  while (!bytes.empty()) {
    // A chunk whole in these bytes is checked where it lies (most are: the
    // fill reads 256 KiB at a time); only one the buffer cuts is gathered.
    if (chunk_.empty() && chunk_size_ == 0 && bytes.size() >= kChunkHeaderBytes) {
      auto begun = begin_chunk(bytes.data(), seen_);
      if (!begun) return begun;
      if (bytes.size() >= chunk_size_) {
        const std::size_t size = chunk_size_;
        seen_ += size;
        auto done = chunk_done(bytes.first(size));
        if (!done) return done;
        bytes = bytes.subspan(size);
        continue;
      }
    }
    if (chunk_.size() < kChunkHeaderBytes) {
      std::size_t take = std::min<std::size_t>(kChunkHeaderBytes - chunk_.size(), bytes.size());
      chunk_.insert(chunk_.end(), bytes.begin(), bytes.begin() + std::ptrdiff_t(take));
      bytes = bytes.subspan(take);
      seen_ += take;
      if (chunk_.size() < kChunkHeaderBytes) break;
      if (chunk_size_ == 0) {
        auto begun = begin_chunk(chunk_.data(), seen_ - kChunkHeaderBytes);
        if (!begun) return begun;
      }
    }
    std::size_t take = std::min<std::size_t>(chunk_size_ - chunk_.size(), bytes.size());
    chunk_.insert(chunk_.end(), bytes.begin(), bytes.begin() + std::ptrdiff_t(take));
    bytes = bytes.subspan(take);
    seen_ += take;
    if (chunk_.size() == chunk_size_) {
      auto done = chunk_done(chunk_);
      chunk_.clear();
      if (!done) return done;
    }
  }
  return std::monostate{};
}

base::Result<std::monostate> RangeChecker::chunk_done(std::span<const std::uint8_t> whole) {
  const std::uint64_t at = out_.chunk_starts.back();
  const std::uint8_t scheme = whole[4];
  const std::uint32_t unpacked = u24(&whole[5]);
  std::span<const std::uint8_t> stored = whole.subspan(kChunkHeaderBytes);
  std::span<const std::uint8_t> data = stored;
  if (scheme != kNone) {
    auto* target = &unpacked_;
    if (scheme == kGroupedLz4) target = &grouped_;
    target->resize(unpacked);
    int n = LZ4_decompress_safe(reinterpret_cast<const char*>(stored.data()), reinterpret_cast<char*>(target->data()),
                                int(stored.size()), int(unpacked));
    if (n != int(unpacked))
      return fail(at, "a chunk does not decompress to its " + std::to_string(unpacked) + " bytes (LZ4)");
    if (scheme == kGroupedLz4) {
      unpacked_.resize(unpacked);
      ungroup4(grouped_, unpacked_.data());
    }
    data = unpacked_;
  }
  const shard::Hash raw = shard::chunk_hash_of_data(data);
  const std::size_t index = hashes_.size();
  hashes_.push_back({raw, unpacked});
  if (!expected_.known.empty()) {
    const shard::Hash got = expected_.key ? shard::keyed_chunk_hash(*expected_.key, raw) : raw;
    auto is = [&](std::size_t i) {
      return i < expected_.known.size() && expected_.known[i].stored == got && expected_.known[i].unpacked == unpacked;
    };
    if (expected_.end_chunk != 0) {
      const std::size_t i = expected_.first_chunk + index;
      if (i >= expected_.known.size()) return fail(at, "more chunks than the xorb has");
      if (!is(i)) return fail(at, "chunk " + std::to_string(i) + " is not the one the index holds for the xorb");
    } else if (index == 0) {
      // Where the range lies in the xorb was not said (a tier host's fill,
      // a cache file checked again): the first chunk is found by its hash
      // among the xorb's (at each place it has: a xorb may hold the same
      // chunk twice), and every next one must follow one of those.
      for (std::size_t i = 0; i < expected_.known.size(); ++i)
        if (is(i)) places_.push_back(i);
      if (places_.empty()) return fail(at, "the range's first chunk is none the index holds for the xorb");
    } else {
      std::erase_if(places_, [&](std::size_t first) { return !is(first + index); });
      if (places_.empty())
        return fail(at, "chunk " + std::to_string(index) + " of the range follows none the index holds for the xorb");
    }
  }
  blake3_hasher_update(&digest_, whole.data(), kChunkHeaderBytes);
  blake3_hasher_update(&digest_, raw.bytes.data(), raw.bytes.size());
  last_checked_start_ = at;
  checked_ = at + whole.size();
  chunk_size_ = 0;
  return std::monostate{};
}

base::Result<CheckedRange> RangeChecker::finish() {
  if (seen_ != expected_.length || !chunk_.empty())
    return fail(seen_, "the range ended after " + std::to_string(seen_) + " of its " +
                           std::to_string(expected_.length) + " bytes, or inside a chunk");
  const std::size_t n = hashes_.size();
  if (n == 0) return fail(0, "a range without a chunk");
  if (expected_.end_chunk != 0 && n != std::size_t(expected_.end_chunk - expected_.first_chunk))
    return fail(seen_, std::to_string(n) + " chunks where the CAS named " +
                           std::to_string(expected_.end_chunk - expected_.first_chunk));
  out_.level = expected_.known.empty() ? CheckLevel::structure : CheckLevel::index;
  const bool located = expected_.end_chunk == 0 && !expected_.known.empty();
  if (located ? std::find(places_.begin(), places_.end(), 0) != places_.end() : expected_.first_chunk == 0) {
    const bool whole_known = !expected_.known.empty() && n == expected_.known.size();
    if (shard::xorb_hash(hashes_) == expected_.xorb) out_.level = CheckLevel::xorb_hash;
    else if (whole_known) return fail(seen_, "the whole xorb's merkle root is not its hash");
  }
  out_.chunk_starts.push_back(std::uint32_t(seen_));
  blake3_hasher_finalize(&digest_, out_.digest.bytes.data(), out_.digest.bytes.size());
  return std::move(out_);
}

}  // namespace dedupd::daemon::answers
