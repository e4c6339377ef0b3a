#include "daemon/keys/download_key.hpp"

#include <openssl/rand.h>

#include <fstream>

#include <spdlog/spdlog.h>

#include "daemon/keys/secret_file.hpp"
#include "daemon/log/logging.hpp"

namespace dedupd::daemon::keys {

namespace fs = std::filesystem;

namespace {

base::Error download_key_error(std::string message) {
  return base::Error{"xet_download.key", 0, std::move(message), false};
}

std::optional<answers::DownloadKey> parse_key(const std::string& text) {
  answers::DownloadKey key{};
  if (text.size() != 2 * key.size()) return std::nullopt;
  for (std::size_t i = 0; i < key.size(); ++i) {
    unsigned v = 0;
    for (char c : text.substr(2 * i, 2)) {
      v <<= 4;
      if (c >= '0' && c <= '9') v |= unsigned(c - '0');
      else if (c >= 'a' && c <= 'f') v |= unsigned(c - 'a' + 10);
      else return std::nullopt;
    }
    key[i] = std::uint8_t(v);
  }
  return key;
}

}  // namespace

base::Result<answers::DownloadKey> load_or_create_download_key(const fs::path& file) {
  std::ifstream in(file);
  std::string text;
  if (in >> text) {
    if (auto key = parse_key(text)) return *key;
    spdlog::warn("Xet download key file {} is unreadable; making a new key", file);
  }
  answers::DownloadKey key{};
  if (RAND_bytes(key.data(), int(key.size())) != 1)
    return download_key_error("no random bytes for the Xet download key (RAND_bytes failed)");
  static constexpr char digits[] = "0123456789abcdef";
  std::string line;
  for (auto b : key) {
    line += digits[b >> 4];
    line += digits[b & 15];
  }
  line += '\n';
  if (auto failed = write_secret_file(file, line)) return download_key_error("the Xet download key: " + *failed);
  return key;
}

}  // namespace dedupd::daemon::keys
