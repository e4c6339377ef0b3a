// libFuzzer target: what `dedupd --check` and every start read of data.mdb
// before LMDB maps it (index/file_check.hpp), over a file of any bytes and
// size. It must end with a verdict, never read outside the file, and say
// ok only for a file whose newest meta page's pages all lie inside it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "index/file_check.hpp"

using namespace dedupd::index;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto read = [&](std::uint64_t offset, std::span<std::uint8_t> out) {
    if (offset > size || out.size() > size - offset) return false;
    std::memcpy(out.data(), data + offset, out.size());
    return true;
  };
  DataFileCheck c = check_data_image(size, read);
  if (c.verdict == DataFileCheck::Verdict::ok) {
    if (c.page_size < 512 || (c.page_size & (c.page_size - 1)) != 0) std::abort();
    if ((c.last_page + 1) * std::uint64_t(c.page_size) > size) std::abort();
  } else if (c.problem.empty()) {
    std::abort();  // every other verdict says why
  }
  return 0;
}
