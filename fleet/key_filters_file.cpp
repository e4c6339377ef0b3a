#include "fleet/key_filters_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace dedupd::fleet {
namespace {

// Layout, every field 8 bytes or a multiple, so the checksum reads whole
// words: "DDKFILT1", u32 format, u32 KeyFilter::kLayout, u64 count; per
// filter the key (32 B), u32 bits an entry, u32 zero, u64 entries added,
// u64 xorbs, u64 words, the xorbs' hashes, the words; then the checksum.
constexpr char kMagic[8] = {'D', 'D', 'K', 'F', 'I', 'L', 'T', '1'};
constexpr std::uint32_t kFormat = 1;
// A filter over this many bytes was never one of a budget (fleet.key_filter_memory
// is at most a few GiB): a size read that large is damage.
constexpr std::uint64_t kMaxWords = std::uint64_t(1) << 32;

// Against damage, not an adversary: the state directory is dedupd's own.
struct Checksum {
  std::uint64_t value = 0x6A09E667F3BCC909ull;
  void add(std::span<const std::uint64_t> words) {
    std::uint64_t v = value;
    for (std::uint64_t w : words) {
      v = (v ^ w) * 0x100000001B3ull;
      v ^= v >> 29;
    }
    value = v;
  }
  void add_bytes(const void* p, std::size_t n) {  // n a multiple of 8
    for (std::size_t i = 0; i < n; i += 8) {
      std::uint64_t w;
      std::memcpy(&w, static_cast<const char*>(p) + i, 8);
      add({&w, 1});
    }
  }
};

struct Header {
  char magic[8];
  std::uint32_t format;
  std::uint32_t layout;
  std::uint64_t count;
};
struct FilterHead {
  std::uint8_t key[32];
  std::uint32_t bits;
  std::uint32_t zero;
  std::uint64_t added;
  std::uint64_t xorbs;
  std::uint64_t words;
};
static_assert(sizeof(Header) == 24 && sizeof(FilterHead) == 64);

std::string sys_error(const std::string& what, const std::filesystem::path& path) {
  return what + " " + path.string() + ": " + std::strerror(errno);
}

class Out {
 public:
  explicit Out(std::FILE* f) : f_(f) {}
  bool put(const void* p, std::size_t n) {
    sum_.add_bytes(p, n);
    return std::fwrite(p, 1, n, f_) == n;
  }
  bool put_words(std::span<const std::uint64_t> w) {
    sum_.add(w);
    return std::fwrite(w.data(), 8, w.size(), f_) == w.size();
  }
  bool put_sum() { return std::fwrite(&sum_.value, 8, 1, f_) == 1; }

 private:
  std::FILE* f_;
  Checksum sum_;
};

class In {
 public:
  In(std::FILE* f, std::uint64_t size) : f_(f), left_(size) {}
  bool get(void* p, std::size_t n) {
    if (n > left_ || std::fread(p, 1, n, f_) != n) return false;
    left_ -= n;
    sum_.add_bytes(p, n);
    return true;
  }
  bool get_words(std::vector<std::uint64_t>& w, std::uint64_t n) {
    if (n > left_ / 8) return false;  // before allocating
    w.resize(n);
    if (std::fread(w.data(), 8, n, f_) != n) return false;
    left_ -= 8 * n;
    sum_.add(w);
    return true;
  }
  bool sum_matches() {
    std::uint64_t stored;
    if (left_ != 8 || std::fread(&stored, 8, 1, f_) != 1) return false;
    return stored == sum_.value;
  }
  std::uint64_t left() const { return left_; }

 private:
  std::FILE* f_;
  std::uint64_t left_;
  Checksum sum_;
};

}  // namespace

Result<KeptFiltersFile> save_kept_filters(const KeyFilters& filters, const std::filesystem::path& path) {
  const auto kept = filters.kept();
  const std::filesystem::path temp = path.string() + ".new";
  std::FILE* f = std::fopen(temp.c_str(), "wb");
  if (!f) return make_error(kRuleArgument, sys_error("cannot create", temp));
  KeptFiltersFile done;
  Out out(f);
  Header h{};
  std::memcpy(h.magic, kMagic, 8);
  h.format = kFormat;
  h.layout = KeyFilter::kLayout;
  h.count = kept.size();
  bool ok = out.put(&h, sizeof h);
  for (const auto& k : kept) {
    if (!ok) break;
    FilterHead fh{};
    std::memcpy(fh.key, k.key.data(), 32);
    fh.bits = std::uint32_t(k.filter->bits_per_entry());
    fh.added = k.filter->added();
    fh.xorbs = k.xorbs.size();
    fh.words = k.filter->words().size();
    ok = out.put(&fh, sizeof fh);
    for (const auto& x : k.xorbs)
      if (ok) ok = out.put(x.data(), 32);
    if (ok) ok = out.put_words(k.filter->words());
    ++done.filters;
    done.entries += k.filter->added();
  }
  if (ok) ok = out.put_sum();
  // Not synced: an fsync waits for the file system's journal, and with it
  // for what else the host has pending (a fleet database beside it writing
  // gigabytes), and the keeper would wait with it, its filters too. A file
  // a crash left torn fails its checksum and is built again instead.
  if (ok) ok = std::fflush(f) == 0;
  const int write_errno = errno;
  if (std::fclose(f) != 0) ok = false;
  if (!ok) {
    errno = write_errno;
    auto e = make_error(kRuleArgument, sys_error("cannot write", temp));
    std::filesystem::remove(temp);
    return e;
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    auto e = make_error(kRuleArgument, sys_error("cannot rename " + temp.string() + " to", path));
    std::filesystem::remove(temp);
    return e;
  }
  std::error_code ec;
  done.bytes = std::filesystem::file_size(path, ec);
  return done;
}

Result<KeptFiltersFile> load_kept_filters(KeyFilters& filters, const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return KeptFiltersFile{};
  const std::uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) return make_error(kRuleArgument, "cannot read the size of " + path.string() + ": " + ec.message());
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return make_error(kRuleArgument, sys_error("cannot open", path));
  struct Close {
    std::FILE* f;
    ~Close() { std::fclose(f); }
  } close{f};
  auto bad = [&](const std::string& why) { return make_error(kRuleProtocol, path.string() + ": " + why); };

  In in(f, size);
  Header h{};
  if (!in.get(&h, sizeof h) || std::memcmp(h.magic, kMagic, 8) != 0)
    return bad("not a file of kept key filters (another program's, or cut short)");
  if (h.format != kFormat || h.layout != KeyFilter::kLayout)
    return bad("format " + std::to_string(h.format) + ", filter layout " + std::to_string(h.layout) +
               ": this dedupd reads format " + std::to_string(kFormat) + ", layout " +
               std::to_string(KeyFilter::kLayout));
  std::vector<KeyFilters::Kept> read;
  for (std::uint64_t i = 0; i < h.count; ++i) {
    FilterHead fh{};
    if (!in.get(&fh, sizeof fh)) return bad("cut short in the head of filter " + std::to_string(i));
    if (fh.words > kMaxWords || fh.xorbs > in.left() / 32)
      return bad("filter " + std::to_string(i) + " claims more than the file holds");
    KeyFilters::Kept k;
    k.key = shard::Key::from_bytes(fh.key);
    k.xorbs.resize(fh.xorbs);
    for (auto& x : k.xorbs)
      if (!in.get(x.bytes.data(), 32)) return bad("cut short in the xorbs of filter " + std::to_string(i));
    std::vector<std::uint64_t> words;
    if (!in.get_words(words, fh.words)) return bad("cut short in the bits of filter " + std::to_string(i));
    auto filter = KeyFilter::from_words(int(fh.bits), fh.added, std::move(words));
    if (!filter) return bad("filter " + std::to_string(i) + " is not one this dedupd makes");
    k.filter = std::make_shared<const KeyFilter>(std::move(*filter));
    read.push_back(std::move(k));
  }
  if (!in.sum_matches()) return bad("its checksum does not match what it holds (damaged)");
  KeptFiltersFile done;
  done.bytes = size;
  for (auto& k : read) {
    const std::uint64_t entries = k.filter->added();
    if (filters.adopt(std::move(k))) {
      ++done.filters;
      done.entries += entries;
    } else {
      ++done.skipped;
    }
  }
  return done;
}

}  // namespace dedupd::fleet
