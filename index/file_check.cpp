#include "index/file_check.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include "index/lmdb_layout.hpp"

namespace dedupd::index {

namespace {

using namespace lmdb_layout;

// MDB_meta's fields, from the start of the meta (after the page header).
constexpr std::uint32_t kMagic = 0xBEEFC0DE;
constexpr std::uint32_t kDataVersion = 1;
constexpr std::size_t kMetaMagic = 0, kMetaVersion = 4, kMetaMapSize = 16;
constexpr std::size_t kMetaFreeDb = 24, kMetaMainDb = 72;  // the two trees' MDB_db
constexpr std::size_t kMetaLastPage = 120, kMetaTxnid = 128, kMetaEnd = 136;
constexpr std::uint32_t kMinPage = 512, kMaxPage = 65536;

struct Meta {
  std::uint32_t page_size = 0;
  std::uint64_t map_size = 0, last_page = 0, txnid = 0;
  std::uint64_t free_root = kNoPage, main_root = kNoPage;
  std::uint16_t main_flags = 0;
};

// One meta page's own consistency; nullopt with `why` when it has none.
std::optional<Meta> read_meta(const std::uint8_t* page, std::string& why) {
  const std::uint8_t* m = page + kPageHeader;
  if (!(u16(page + 10) & kPageMeta)) {
    why = "not marked as a meta page";
    return std::nullopt;
  }
  if (u32(m + kMetaMagic) != kMagic) {
    why = "no LMDB magic number";
    return std::nullopt;
  }
  if (u32(m + kMetaVersion) != kDataVersion) {
    why = "LMDB data version " + std::to_string(u32(m + kMetaVersion)) + ", not 1";
    return std::nullopt;
  }
  Meta meta;
  meta.page_size = u32(m + kMetaFreeDb);
  if (meta.page_size < kMinPage || meta.page_size > kMaxPage || (meta.page_size & (meta.page_size - 1)) != 0) {
    why = "page size " + std::to_string(meta.page_size) + " is not a power of two from 512 to 65536";
    return std::nullopt;
  }
  meta.map_size = u64(m + kMetaMapSize);
  meta.last_page = u64(m + kMetaLastPage);
  meta.txnid = u64(m + kMetaTxnid);
  meta.free_root = u64(m + kMetaFreeDb + kDbRoot);
  meta.main_root = u64(m + kMetaMainDb + kDbRoot);
  meta.main_flags = u16(m + kMetaMainDb + kDbFlags);
  if (meta.last_page < 1) {
    why = "last page " + std::to_string(meta.last_page) + " is inside the meta pages";
    return std::nullopt;
  }
  for (std::uint64_t root : {meta.free_root, meta.main_root})
    if (root != kNoPage && (root < 2 || root > meta.last_page)) {
      why = "a root page (" + std::to_string(root) + ") outside pages 2.." + std::to_string(meta.last_page);
      return std::nullopt;
    }
  return meta;
}

DataFileCheck damaged(DataFileCheck c, std::string problem) {
  c.verdict = DataFileCheck::Verdict::damaged;
  c.problem = std::move(problem);
  return c;
}

}  // namespace

const char* to_string(DataFileCheck::Verdict v) {
  switch (v) {
    case DataFileCheck::Verdict::ok:
      return "ok";
    case DataFileCheck::Verdict::absent:
      return "absent";
    case DataFileCheck::Verdict::damaged:
      return "damaged";
    case DataFileCheck::Verdict::unreadable:
      return "unreadable";
  }
  return "?";
}

DataFileCheck check_data_image(std::uint64_t file_size, const ReadAt& read) {
  DataFileCheck c;
  c.file_size = file_size;
  if (file_size == 0) return damaged(c, "data.mdb is empty (0 bytes): no meta page");
  // Meta page 0 says the page size; meta 1 sits one page further.
  std::vector<std::uint8_t> first(std::size_t(std::min<std::uint64_t>(file_size, kPageHeader + kMetaEnd)));
  if (file_size < kPageHeader + kMetaEnd)
    return damaged(c, "data.mdb is " + std::to_string(file_size) + " bytes: too short for a meta page");
  if (!read(0, first)) {
    c.verdict = DataFileCheck::Verdict::unreadable;
    c.problem = "cannot read the first meta page";
    return c;
  }
  std::string why0, why1;
  std::optional<Meta> m0 = read_meta(first.data(), why0);
  // Without a readable meta 0, try the page sizes LMDB may have used for
  // meta 1 (the system page size, 4 KiB here).
  std::vector<std::uint32_t> sizes;
  if (m0) sizes.push_back(m0->page_size);
  else
    for (std::uint32_t p = kMinPage; p <= kMaxPage; p *= 2) sizes.push_back(p);
  std::optional<Meta> m1;
  for (std::uint32_t psize : sizes) {
    if (file_size < psize + kPageHeader + kMetaEnd) {
      if (m0) why1 = "the file ends before it";
      break;
    }
    std::vector<std::uint8_t> second(kPageHeader + kMetaEnd);
    if (!read(psize, second)) {
      c.verdict = DataFileCheck::Verdict::unreadable;
      c.problem = "cannot read the second meta page";
      return c;
    }
    std::string why;
    m1 = read_meta(second.data(), why);
    if (m1 && m1->page_size != psize) {
      why = "it gives page size " + std::to_string(m1->page_size) + " where it sits at " + std::to_string(psize);
      m1.reset();
    }
    if (m1 || m0) {
      if (!m1) why1 = why;
      break;
    }
  }
  if (!m0 && !m1)
    return damaged(c, "both meta pages are damaged (page 0: " + why0 +
                          "; page 1: " + (why1.empty() ? "no valid meta at any page size" : why1) + ")");
  // LMDB trusts the newer of the two.
  const Meta& meta = !m1 || (m0 && m0->txnid >= m1->txnid) ? *m0 : *m1;
  c.page_size = meta.page_size;
  c.last_page = meta.last_page;
  c.txnid = meta.txnid;
  c.free_root = meta.free_root;
  c.main_root = meta.main_root;
  c.main_flags = meta.main_flags;
  const std::uint64_t needed = (meta.last_page + 1) * std::uint64_t(meta.page_size);
  if (meta.last_page > (~std::uint64_t(0) / meta.page_size) - 1 || file_size < needed)
    return damaged(c, "data.mdb is " + std::to_string(file_size) + " bytes, but its newest meta page (transaction " +
                          std::to_string(meta.txnid) + ") uses pages up to " + std::to_string(meta.last_page) +
                          ", which end at byte " + std::to_string(needed) + ": the file was truncated");
  // The roots must be the pages they say they are.
  for (auto [root, name] : {std::pair{meta.main_root, "main"}, std::pair{meta.free_root, "free-page"}}) {
    if (root == kNoPage) continue;
    std::array<std::uint8_t, kPageHeader> h{};
    if (!read(root * meta.page_size, h)) {
      c.verdict = DataFileCheck::Verdict::unreadable;
      c.problem = std::string("cannot read the ") + name + " tree's root page";
      return c;
    }
    const std::uint16_t flags = u16(h.data() + 10);
    if (u64(h.data()) != root || !(flags & (kPageBranch | kPageLeaf)))
      return damaged(
          c, std::string("the ") + name + " tree's root, page " + std::to_string(root) +
                 ", is not a tree page (it names page " + std::to_string(u64(h.data())) + ", flags 0x" +
                 [&] {
                   char buf[8];
                   std::snprintf(buf, sizeof buf, "%x", unsigned(flags));
                   return std::string(buf);
                 }() +
                 ")");
  }
  // LMDB 0.9 refuses a file either of whose metas it cannot read
  // (MDB_INVALID), whatever the other holds.
  if (!m0) return damaged(c, "meta page 0 is damaged (" + why0 + ")");
  if (!m1) return damaged(c, "meta page 1 is damaged (" + why1 + ")");
  return c;
}

DataFileCheck check_data_file(const std::string& dir) { return check_data_file_with(dir, &check_data_image); }

DataFileCheck check_data_file_with(const std::string& dir,
                                   DataFileCheck (*check)(std::uint64_t file_size, const ReadAt& read)) {
  DataFileCheck c;
  const std::string path = dir + "/data.mdb";
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      c.verdict = DataFileCheck::Verdict::absent;
      return c;
    }
    c.verdict = DataFileCheck::Verdict::unreadable;
    c.problem = path + ": " + std::strerror(errno);
    return c;
  }
  if (!S_ISREG(st.st_mode)) {
    c.verdict = DataFileCheck::Verdict::unreadable;
    c.problem = path + " is not a regular file";
    return c;
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    c.verdict = DataFileCheck::Verdict::unreadable;
    c.problem = path + ": " + std::strerror(errno);
    return c;
  }
  int read_errno = 0;
  c = check(std::uint64_t(st.st_size), [&](std::uint64_t offset, std::span<std::uint8_t> out) {
    std::size_t done = 0;
    while (done < out.size()) {
      ssize_t n = ::pread(fd, out.data() + done, out.size() - done, off_t(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        read_errno = n < 0 ? errno : 0;
        return false;
      }
      done += std::size_t(n);
    }
    return true;
  });
  ::close(fd);
  if (c.verdict == DataFileCheck::Verdict::unreadable && read_errno != 0)
    c.problem += std::string(": ") + std::strerror(read_errno);
  if (!c.problem.empty()) c.problem = path + ": " + c.problem;
  return c;
}

}  // namespace dedupd::index
