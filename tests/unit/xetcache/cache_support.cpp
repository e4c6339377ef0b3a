#include "cache_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string_view>

#include "tests/support/temp_dir.hpp"

namespace dedupd::xetcache::testing {

std::vector<std::uint8_t> shard_bytes(const shard::ShardWriter& w, const FooterSpec& spec) {
  shard::WriteOptions o;
  o.lookup_tables = spec.tables;
  o.derive_byte_totals = true;
  o.footer.chunk_hash_key = spec.key;
  o.footer.creation_timestamp = spec.creation;
  o.footer.key_expiry = spec.expiry;
  return w.write(o);
}

std::string put_shard(const std::string& dir, const std::vector<std::uint8_t>& bytes) {
  std::string path = dir + "/" + shard::shard_file_hash(bytes).to_string() + ".mdb";
  tests::write_file(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  return path;
}

shard::ShardView parse_or_fail(const std::vector<std::uint8_t>& bytes) {
  auto v = shard::ShardView::parse(bytes);
  if (!v) ADD_FAILURE() << v.error().to_string();
  return std::move(v).value();
}

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

ShardDesc desc(std::string path, std::uint64_t size, std::uint64_t entries, std::uint64_t expiry, const shard::Key& key,
               ShardKind kind) {
  ShardDesc d;
  d.path = std::move(path);
  d.size = size;
  d.merged_bytes = size - 344;  // header, two bookends, footer
  d.chunk_entries = entries;
  d.expiry = expiry;
  d.key = key;
  d.kind = kind;
  return d;
}

}  // namespace dedupd::xetcache::testing
