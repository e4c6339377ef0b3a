#include "index/page_check.hpp"

#include <lmdb.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "index/lmdb_layout.hpp"

namespace dedupd::index {

// Named, so that a unity batch with file_check.cpp (the same facts of the
// format, its own helpers) sees no name twice.
namespace page_walk {
namespace {

using namespace lmdb_layout;

// A node: data size or child page (lo, hi, and flags as the top 16 bits
// of a child page number), flags, key size (2 each), then the key and the
// data.
constexpr std::size_t kNode = 8;
constexpr std::uint16_t kBigData = 0x01, kSubData = 0x02, kDupData = 0x04;
// A tree's flags (MDB_db's).
constexpr std::uint16_t kReverseKey = 0x02, kDupSort = 0x04, kIntegerKey = 0x08, kDupFixed = 0x10, kIntegerDup = 0x20,
                        kReverseDup = 0x40;
constexpr std::uint16_t kPersistentFlags = kReverseKey | kDupSort | kIntegerKey | kDupFixed | kIntegerDup | kReverseDup;
constexpr std::size_t kMaxKey = 511;   // MDB_MAXKEYSIZE
constexpr unsigned kCursorStack = 32;  // pages a cursor holds, root to leaf

using Key = std::span<const std::uint8_t>;

// How a tree orders its keys: LMDB's memcmp-then-length (every table of
// the index), native integers (the free list), or another order this
// walk does not check.
enum class Order : std::uint8_t { bytes, integer, unchecked };

// <0, 0, >0; nullopt for integer keys of a size LMDB does not compare so.
std::optional<int> compare(Order order, Key a, Key b) {
  if (order == Order::integer) {
    if (a.size() != b.size() || (a.size() != 4 && a.size() != 8)) return std::nullopt;
    const std::uint64_t x = a.size() == 8 ? u64(a.data()) : u32(a.data());
    const std::uint64_t y = b.size() == 8 ? u64(b.data()) : u32(b.data());
    return x < y ? -1 : x > y;
  }
  const std::size_t n = std::min(a.size(), b.size());
  if (int d = n ? std::memcmp(a.data(), b.data(), n) : 0) return d;
  return a.size() < b.size() ? -1 : a.size() > b.size();
}

// One B-tree of the file: the free list, the main tree (the tables by
// name), a table, or one key's duplicates in a sub-database.
struct Tree {
  enum class Kind : std::uint8_t { free_list, main, table, dups };
  Kind kind;
  std::string name;         // for the problem's text
  std::uint16_t flags = 0;  // the MDB_db's
  std::uint32_t fixed = 0;  // dups of an MDB_DUPFIXED table: their size
  Order keys() const {
    if (kind == Kind::free_list) return Order::integer;
    if (kind == Kind::dups)
      return flags & kIntegerDup ? Order::integer : flags & kReverseDup ? Order::unchecked : Order::bytes;
    return flags & kIntegerKey ? Order::integer : flags & kReverseKey ? Order::unchecked : Order::bytes;
  }
};

// Keys of a subtree lie in [low, high); nullopt: no bound on that side.
// The keys are in the pages above, which stay read while it is walked.
struct Bounds {
  std::optional<Key> low, high;
};

class Walker {
 public:
  Walker(const ReadAt& read, std::uint32_t page_size, std::uint64_t last_page)
      : read_(read), psize_(page_size), last_(last_page), state_(last_page + 1, kUnseen) {}

  // Both trees of the newest meta, then the count of every page.
  bool walk(const DataFileCheck& c) {
    if (c.free_root != kNoPage && !tree(c.free_root, Tree{Tree::Kind::free_list, "the free list", 0, 0})) return false;
    if (c.main_root != kNoPage &&
        !tree(c.main_root, Tree{Tree::Kind::main, "the main tree", std::uint16_t(c.main_flags & kPersistentFlags), 0}))
      return false;
    // LMDB's audit: each page after the meta pages, up to the last one, is
    // in exactly one tree or listed free exactly once.
    for (std::uint64_t p = 2; p <= last_; ++p) {
      if (state_[p] == kUnseen)
        return fail("page " + std::to_string(p) + " is neither in a tree nor free (pages up to " +
                    std::to_string(last_) + " are in use)");
      (state_[p] == kFree ? pages_free : pages_in_use)++;
    }
    return true;
  }

  std::string problem;
  std::uint64_t pages_in_use = 0, pages_free = 0;

 private:
  enum : std::uint8_t { kUnseen, kUsed, kFree };
  using Page = std::vector<std::uint8_t>;

  bool fail(std::string what) {
    problem = std::move(what);
    return false;
  }
  static std::string at(std::uint64_t pgno, const Tree& t) {
    return "page " + std::to_string(pgno) + " (" + t.name + ")";
  }

  // Page `pgno` (its first `page.size()` bytes) read, once across every
  // tree.
  bool take(std::uint64_t pgno, const Tree& t, std::span<std::uint8_t> page) {
    if (pgno < 2 || pgno > last_)
      return fail(t.name + " names page " + std::to_string(pgno) + ", outside pages 2.." + std::to_string(last_));
    if (state_[pgno] != kUnseen)
      return fail(at(pgno, t) + " is reached twice (" +
                  (state_[pgno] == kFree ? "it is listed free" : "a loop, or two trees") + ")");
    state_[pgno] = kUsed;
    if (!read_(pgno * psize_, page)) return fail("cannot read page " + std::to_string(pgno));
    if (u64(page.data()) != pgno) return fail(at(pgno, t) + " calls itself page " + std::to_string(u64(page.data())));
    return true;
  }

  // A page buffer for each page being walked at once (a tree's pages root
  // to leaf, and the trees inside a leaf's nodes), kept from page to page.
  struct Level {
    Walker& w;
    Page& page;
    explicit Level(Walker& walker) : w(walker), page(walker.enter()) {}
    ~Level() { --w.level_; }
    Level(const Level&) = delete;
    Level& operator=(const Level&) = delete;
  };
  Page& enter() {
    if (level_ == pages_.size()) pages_.push_back(Page(psize_));
    return pages_[level_++];
  }

  // The tree under `root`: every leaf as deep as the first.
  bool tree(std::uint64_t root, const Tree& t) {
    unsigned leaf_depth = 0;
    return subtree(root, t, 1, Bounds{}, leaf_depth);
  }

  bool subtree(std::uint64_t pgno, const Tree& t, unsigned depth, const Bounds& bounds, unsigned& leaf_depth) {
    if (depth > kCursorStack)
      return fail(t.name + " is deeper than the " + std::to_string(kCursorStack) + " pages an LMDB cursor holds");
    Level level(*this);
    Page& page = level.page;
    if (!take(pgno, t, page)) return false;
    const std::uint16_t flags = u16(page.data() + 10) & ~kPageDirty;
    const bool fixed_leaf = t.kind == Tree::Kind::dups && t.fixed != 0;
    if (flags == kPageBranch) return branch(pgno, page, t, depth, bounds, leaf_depth);
    if (flags != (fixed_leaf ? (kPageLeaf | kPageLeaf2) : kPageLeaf))
      return fail(at(pgno, t) + " is not a " + (fixed_leaf ? "LEAF2 " : "") + "leaf or branch page (flags 0x" +
                  hex(u16(page.data() + 10)) + ")");
    if (leaf_depth == 0) leaf_depth = depth;
    if (depth != leaf_depth)
      return fail(at(pgno, t) + " is a leaf at depth " + std::to_string(depth) + " where the first was at " +
                  std::to_string(leaf_depth));
    return leaf(pgno, page.data(), page.size(), t, bounds, false);
  }

  static std::string hex(unsigned v) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "%x", v);
    return buf;
  }

  // Free-space bounds and the count of nodes they give: lower after the
  // header, on a node offset, and not past upper, which is inside `size`.
  bool bounds_of(const std::uint8_t* p, std::size_t size, const std::string& where, std::size_t& n) {
    const std::size_t lower = u16(p + 12), upper = u16(p + 14);
    if (lower < kPageHeader || (lower - kPageHeader) % 2 != 0 || lower > upper || upper > size)
      return fail(where + ": free space from " + std::to_string(lower) + " to " + std::to_string(upper) +
                  " is not inside its " + std::to_string(size) + " bytes");
    n = (lower - kPageHeader) / 2;
    if (n == 0) return fail(where + " holds no node");
    return true;
  }

  // Node `i`: its header and key inside [upper, size), 2-byte aligned.
  bool node_at(const std::uint8_t* p, std::size_t size, std::size_t i, const std::string& where, std::size_t& off) {
    off = u16(p + kPageHeader + 2 * i);
    const std::size_t upper = u16(p + 14);
    if (off < upper || off % 2 != 0 || off + kNode > size || off + kNode + u16(p + off + 6) > size)
      return fail(where + ": node " + std::to_string(i) + " at offset " + std::to_string(off) +
                  " does not lie inside the page's nodes");
    if (u16(p + off + 6) > kMaxKey)
      return fail(where + ": node " + std::to_string(i) + " has a key of " + std::to_string(u16(p + off + 6)) +
                  " bytes, over LMDB's " + std::to_string(kMaxKey));
    return true;
  }

  // `key` comes after `previous` (when there is one) and inside `b`.
  bool in_order(const Tree& t, Key key, const std::optional<Key>& previous, const Bounds& b, const std::string& where,
                std::size_t i) {
    const Order order = t.keys();
    if (order == Order::unchecked) return true;
    auto bad = [&](const char* why) { return fail(where + ": key " + std::to_string(i) + " " + why); };
    if (previous) {
      auto c = compare(order, *previous, key);
      if (!c) return bad("is not an integer key");
      if (*c >= 0) return bad("is not after the one before it");
    }
    if (b.low) {
      auto c = compare(order, *b.low, key);
      if (!c || *c > 0) return bad("is before its parent's bound");
    }
    if (b.high) {
      auto c = compare(order, key, *b.high);
      if (!c || *c >= 0) return bad("is not before its parent's next bound");
    }
    return true;
  }

  bool branch(std::uint64_t pgno, const Page& page, const Tree& t, unsigned depth, const Bounds& bounds,
              unsigned& leaf_depth) {
    const std::uint8_t* p = page.data();
    const std::string where = at(pgno, t);
    std::size_t n = 0;
    if (!bounds_of(p, page.size(), where, n)) return false;
    // LMDB asserts two children at least, except in the free list.
    if (n < 2 && t.kind != Tree::Kind::free_list) return fail(where + " is a branch page with one child");
    std::vector<std::size_t> offs(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (!node_at(p, page.size(), i, where, offs[i])) return false;
      // A branch's first key is not compared: it stands for its low bound.
      if (i > 0) {
        const Key key(p + offs[i] + kNode, u16(p + offs[i] + 6));
        std::optional<Key> previous;
        if (i > 1) previous = Key(p + offs[i - 1] + kNode, u16(p + offs[i - 1] + 6));
        if (!in_order(t, key, previous, bounds, where, i)) return false;
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint8_t* node = p + offs[i];
      const std::uint64_t child =
          std::uint64_t(u16(node)) | std::uint64_t(u16(node + 2)) << 16 | std::uint64_t(u16(node + 4)) << 32;
      Bounds b;
      b.low = i == 0 ? bounds.low : Key(node + kNode, u16(node + 6));
      if (i + 1 < n) {
        const std::uint8_t* next = p + offs[i + 1];
        b.high = Key(next + kNode, u16(next + 6));
      } else {
        b.high = bounds.high;
      }
      if (!subtree(child, t, depth + 1, b, leaf_depth)) return false;
    }
    return true;
  }

  // A leaf page, or a sub-page of `size` bytes inside a leaf node.
  bool leaf(std::uint64_t pgno, const std::uint8_t* p, std::size_t size, const Tree& t, const Bounds& bounds,
            bool sub) {
    const std::string where = sub ? "a sub-page in " + at(pgno, t) : at(pgno, t);
    std::size_t n = 0;
    if (!bounds_of(p, size, where, n)) return false;
    if (t.kind == Tree::Kind::dups && t.fixed != 0) {
      // LEAF2: the keys side by side after the header.
      if (kPageHeader + n * std::size_t(t.fixed) > size)
        return fail(where + ": " + std::to_string(n) + " keys of " + std::to_string(t.fixed) + " bytes overrun it");
      std::optional<Key> previous;
      for (std::size_t i = 0; i < n; ++i) {
        const Key key(p + kPageHeader + i * t.fixed, t.fixed);
        if (!in_order(t, key, previous, bounds, where, i)) return false;
        previous = key;
      }
      return true;
    }
    std::optional<Key> previous;
    for (std::size_t i = 0; i < n; ++i) {
      std::size_t off = 0;
      if (!node_at(p, size, i, where, off)) return false;
      const std::uint8_t* node = p + off;
      const std::size_t ksize = u16(node + 6);
      const Key key(node + kNode, ksize);
      if (!in_order(t, key, previous, bounds, where, i)) return false;
      previous = key;
      if (!leaf_node(pgno, node, size - off, t, where, i)) return false;
    }
    return true;
  }

  // A leaf node's data, `room` bytes from the node's start to the end of
  // its page: inline, on overflow pages, a table, or duplicates.
  bool leaf_node(std::uint64_t pgno, const std::uint8_t* node, std::size_t room, const Tree& t,
                 const std::string& where, std::size_t i) {
    const std::uint16_t flags = u16(node + 4);
    const std::size_t ksize = u16(node + 6);
    const std::uint64_t dsize = std::uint64_t(u16(node)) | std::uint64_t(u16(node + 2)) << 16;
    const std::uint8_t* data = node + kNode + ksize;
    const std::size_t data_room = room - kNode - ksize;
    auto bad = [&](const std::string& why) { return fail(where + ": node " + std::to_string(i) + " " + why); };
    if (t.kind == Tree::Kind::dups) {
      // A duplicate is a key alone.
      if (flags != 0 || dsize != 0) return bad("is a duplicate with data or flags");
      return true;
    }
    if (flags & ~(kBigData | kSubData | kDupData)) return bad("has unknown flags 0x" + hex(flags));
    if (flags == kBigData) {
      if (data_room < 8) return bad("has no room for its overflow page's number");
      return overflow(u64(data), dsize, t, where, i);
    }
    if (dsize > data_room) return bad("has " + std::to_string(dsize) + " bytes of data past the end of its page");
    if (flags == 0) return t.kind != Tree::Kind::free_list || free_list_entry(data, dsize, where, i);
    if (t.kind == Tree::Kind::main && flags == kSubData) return table(data, dsize, Key(node + kNode, ksize), where, i);
    if (t.kind == Tree::Kind::table && (t.flags & kDupSort) && (flags & kDupData)) {
      Tree dups{Tree::Kind::dups, "the duplicates of a key of " + t.name, t.flags, 0};
      if (flags == (kDupData | kSubData)) {
        if (dsize != kDbRecord) return bad("holds a sub-database record of " + std::to_string(dsize) + " bytes");
        if (t.flags & kDupFixed) dups.fixed = u32(data + kDbPad);
        if ((t.flags & kDupFixed) && !fixed_size(dups.fixed, where, i)) return false;
        const std::uint64_t root = u64(data + kDbRoot);
        if (root == kNoPage) return bad("has an empty sub-database");
        return tree(root, dups);
      }
      if (flags == kDupData) return sub_page(pgno, data, std::size_t(dsize), dups, where, i);
    }
    return bad("has flags 0x" + hex(flags) + ", which " + t.name + " does not hold");
  }

  // Every duplicate of a MDB_DUPFIXED table has one size.
  bool fixed_size(std::uint32_t size, const std::string& where, std::size_t i) {
    if (size == 0 || size > kMaxKey)
      return fail(where + ": node " + std::to_string(i) + " says its duplicates are " + std::to_string(size) +
                  " bytes");
    if (table_fixed_ == 0) table_fixed_ = size;
    if (size != table_fixed_)
      return fail(where + ": node " + std::to_string(i) + " has duplicates of " + std::to_string(size) +
                  " bytes, others " + std::to_string(table_fixed_));
    return true;
  }

  bool sub_page(std::uint64_t pgno, const std::uint8_t* p, std::size_t size, Tree dups, const std::string& where,
                std::size_t i) {
    if (size < kPageHeader)
      return fail(where + ": node " + std::to_string(i) + " has a sub-page of " + std::to_string(size) + " bytes");
    const std::uint16_t flags = u16(p + 10) & ~kPageDirty;
    const bool fixed = dups.flags & kDupFixed;
    if (flags != (kPageSub | kPageLeaf | (fixed ? kPageLeaf2 : 0)))
      return fail(where + ": node " + std::to_string(i) + " has a sub-page with flags 0x" + hex(u16(p + 10)));
    if (fixed) {
      dups.fixed = u16(p + 8);
      if (!fixed_size(dups.fixed, where, i)) return false;
    }
    return leaf(pgno, p, size, dups, Bounds{}, true);
  }

  // A table's record in the main tree: its flags and root.
  bool table(const std::uint8_t* data, std::uint64_t dsize, Key name, const std::string& where, std::size_t i) {
    if (dsize != kDbRecord)
      return fail(where + ": node " + std::to_string(i) + " names a table with a record of " + std::to_string(dsize) +
                  " bytes");
    const std::uint16_t flags = u16(data + kDbFlags);
    if ((flags & ~kPersistentFlags) || ((flags & kDupFixed) && !(flags & kDupSort)))
      return fail(where + ": node " + std::to_string(i) + " names a table with flags 0x" + hex(flags));
    const std::uint64_t root = u64(data + kDbRoot);
    if (root == kNoPage) return true;
    std::string text(name.begin(), name.end());
    for (char& ch : text)
      if (static_cast<unsigned char>(ch) < 0x20 || static_cast<unsigned char>(ch) > 0x7e) ch = '?';
    table_fixed_ = 0;
    return tree(root, Tree{Tree::Kind::table, "table \"" + text + "\"", flags, 0});
  }

  // Data on a run of overflow pages.
  bool overflow(std::uint64_t first, std::uint64_t dsize, const Tree& t, const std::string& where, std::size_t i) {
    std::array<std::uint8_t, kPageHeader> page{};
    if (!take(first, t, page)) return false;
    if (!(u16(page.data() + 10) & kPageOverflow))
      return fail(where + ": node " + std::to_string(i) + "'s overflow page " + std::to_string(first) +
                  " is not one (flags 0x" + hex(u16(page.data() + 10)) + ")");
    const std::uint64_t pages = u32(page.data() + 12);
    if (pages == 0 || pages - 1 > last_ - first || dsize + kPageHeader > pages * psize_)
      return fail(where + ": node " + std::to_string(i) + " has " + std::to_string(dsize) + " bytes on " +
                  std::to_string(pages) + " overflow pages from page " + std::to_string(first));
    for (std::uint64_t p = first + 1; p < first + pages; ++p) {
      if (state_[p] != kUnseen)
        return fail(where + ": node " + std::to_string(i) + "'s overflow run reaches page " + std::to_string(p) +
                    ", which is in use or free");
      state_[p] = kUsed;
    }
    if (t.kind != Tree::Kind::free_list) return true;
    std::vector<std::uint8_t> data(dsize);
    if (!read_(first * psize_ + kPageHeader, data)) return fail("cannot read page " + std::to_string(first));
    return free_list_entry(data.data(), dsize, where, i);
  }

  // A free-list record: a count, then as many page numbers.
  bool free_list_entry(const std::uint8_t* data, std::uint64_t dsize, const std::string& where, std::size_t i) {
    auto bad = [&](const std::string& why) {
      return fail(where + ": free-list record " + std::to_string(i) + " " + why);
    };
    if (dsize < 8 || dsize % 8 != 0) return bad("is " + std::to_string(dsize) + " bytes");
    const std::uint64_t n = u64(data);
    if (n != dsize / 8 - 1) return bad("counts " + std::to_string(n) + " pages in " + std::to_string(dsize) + " bytes");
    for (std::uint64_t k = 1; k <= n; ++k) {
      const std::uint64_t p = u64(data + 8 * k);
      if (p < 2 || p > last_)
        return bad("lists page " + std::to_string(p) + ", outside pages 2.." + std::to_string(last_));
      if (state_[p] != kUnseen)
        return bad("lists page " + std::to_string(p) + (state_[p] == kFree ? " twice" : ", which is in use"));
      state_[p] = kFree;
    }
    return true;
  }

  const ReadAt& read_;
  std::uint32_t psize_;
  std::uint64_t last_;
  std::vector<std::uint8_t> state_;  // per page: kUnseen, kUsed, kFree
  std::deque<Page> pages_;           // Level's buffers (a deque: they stay put as it grows)
  std::size_t level_ = 0;
  std::uint32_t table_fixed_ = 0;  // the table being walked: its duplicates' size
};

}  // namespace
}  // namespace page_walk

DataFileCheck check_data_pages(std::uint64_t file_size, const ReadAt& read) {
  DataFileCheck c = check_data_image(file_size, read);
  if (c.verdict != DataFileCheck::Verdict::ok) return c;
  page_walk::Walker w(read, c.page_size, c.last_page);
  if (!w.walk(c)) {
    c.verdict =
        w.problem.starts_with("cannot read") ? DataFileCheck::Verdict::unreadable : DataFileCheck::Verdict::damaged;
    c.problem = w.problem;
    return c;
  }
  c.pages_in_use = w.pages_in_use;
  c.pages_free = w.pages_free;
  return c;
}

DataFileCheck check_data_file_pages(const std::string& dir) { return check_data_file_with(dir, &check_data_pages); }

DataFileCheck check_index_pages(const std::string& dir) {
  MDB_env* env = nullptr;
  MDB_txn* txn = nullptr;
  if (mdb_env_create(&env) == 0 && mdb_env_open(env, dir.c_str(), MDB_RDONLY | MDB_NOTLS, 0) == 0)
    (void)mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn);
  DataFileCheck c = check_data_file_pages(dir);
  if (txn) mdb_txn_abort(txn);
  if (env) mdb_env_close(env);
  return c;
}

}  // namespace dedupd::index
