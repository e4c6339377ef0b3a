// Running dedupctl in-process: arguments in, exit code and both streams out.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "shard/hash.hpp"
#include "shard/keys.hpp"
#include "shard/writer.hpp"
#include "tests/support/temp_dir.hpp"

namespace dedupctl::testing {

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

struct RunOptions {
  std::string stdin_text;
  std::map<std::string, std::string> env;  // the only variables the run sees
  bool tty = false;
};

Outcome run_cli(const std::vector<std::string>& args, const RunOptions& options = {});

std::string fixture(const std::string& name);
std::string read_file(const std::string& path);
// A xorb of three 1000-byte chunks whose hashes are filled with the bytes
// first, first + 1, first + 2; `leaves` feed the merkle hashes (xorb, file).
struct SmallXorb {
  dedupd::shard::XorbRecord record;
  std::vector<dedupd::shard::HashAndSize> leaves;
};
SmallXorb small_xorb(std::uint8_t first);
// A shard with a file: terms, verification, sha256, and a zero key; with or
// without its footer (an upload shard).
std::vector<std::uint8_t> shard_with_file(bool with_footer);
// The fixture shard of tests/fixtures (a real server shard).
inline const std::string kFixture = "gpt2-64-8bits.tflite.shard";

using dedupd::tests::TempDir;
using dedupd::tests::write_file;

}  // namespace dedupctl::testing
