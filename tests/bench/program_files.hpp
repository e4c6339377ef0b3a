// How much of a program's executable and shared libraries is in the page
// cache: a start whose libraries were pushed out reads them from the disk
// (tens of milliseconds for dedupd's 41), and that is not the program's
// own start-up cost. Read from a running process's maps, then asked with
// mincore(2) at any later time.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <string>
#include <vector>

namespace dedupd::bench {

// The files a process maps with execute permission: its executable and its
// shared libraries.
inline std::vector<std::string> program_files_of(pid_t pid) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::set<std::string> files;
  std::string line;
  while (std::getline(maps, line)) {
    const auto path = line.find('/');
    const auto perms = line.find(' ');
    if (path == std::string::npos || perms == std::string::npos || line.size() < perms + 4) continue;
    if (line[perms + 3] == 'x') files.insert(line.substr(path));
  }
  return {files.begin(), files.end()};
}

// The share of those files' pages in the page cache, 0 to 1 (1 when there
// are none to ask).
inline double resident_share(const std::vector<std::string>& files) {
  const long page = ::sysconf(_SC_PAGESIZE);
  std::size_t pages = 0, resident = 0;
  for (const auto& f : files) {
    const int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && st.st_size > 0) {
      const auto size = std::size_t(st.st_size);
      void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
      if (map != MAP_FAILED) {
        std::vector<unsigned char> in((size + std::size_t(page) - 1) / std::size_t(page));
        if (::mincore(map, size, in.data()) == 0) {
          pages += in.size();
          for (unsigned char c : in) resident += c & 1u;
        }
        ::munmap(map, size);
      }
    }
    ::close(fd);
  }
  return pages == 0 ? 1.0 : double(resident) / double(pages);
}

}  // namespace dedupd::bench
