// A FUSE passthrough of one directory that waits a fixed time in every
// operation: a slow file system (a network mount, a busy disk) for
// bench_xet_cache.py --slow-fs, where dm-delay is not available (no
// device-mapper in a container). Benchmark tool only; built when libfuse3
// is found.
//
//   slowfs SOURCE MOUNTPOINT [--delay-us N] [FUSE options, e.g. -f]
//
// Every operation the kernel sends (lookup, getattr, open, each read of up
// to 128 KiB, readdir, create, write, fsync, rename, unlink, ...) sleeps N
// microseconds (default 1000) before it is done on SOURCE. Nothing is
// cached by the kernel beyond what FUSE does by default (attributes and
// entries for 1 s, file pages dropped at each open), so a cold and a warm
// read both pay the delay per request, as on a network file system.
#define FUSE_USE_VERSION 31

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static char source[PATH_MAX];
static long delay_us = 1000;

static void wait_delay(void) {
  struct timespec ts = {delay_us / 1000000, (delay_us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

// The path under SOURCE; operations fail with ENAMETOOLONG past PATH_MAX.
static int real_path(const char* path, char* out) {
  int n = snprintf(out, PATH_MAX, "%s%s", source, path);
  return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

#define REAL(var, path)            \
  char var[PATH_MAX];              \
  do {                             \
    wait_delay();                  \
    int e_ = real_path(path, var); \
    if (e_ != 0) return e_;        \
  } while (0)

static int sf_getattr(const char* path, struct stat* st, struct fuse_file_info* fi) {
  if (fi) {
    wait_delay();
    return fstat((int)fi->fh, st) == 0 ? 0 : -errno;
  }
  REAL(p, path);
  return lstat(p, st) == 0 ? 0 : -errno;
}

static int sf_readlink(const char* path, char* buf, size_t size) {
  REAL(p, path);
  ssize_t n = readlink(p, buf, size - 1);
  if (n < 0) return -errno;
  buf[n] = '\0';
  return 0;
}

static int sf_readdir(const char* path, void* buf, fuse_fill_dir_t fill, off_t off, struct fuse_file_info* fi,
                      enum fuse_readdir_flags flags) {
  (void)off, (void)fi, (void)flags;
  REAL(p, path);
  DIR* d = opendir(p);
  if (!d) return -errno;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    struct stat st = {0};
    st.st_ino = e->d_ino;
    st.st_mode = (mode_t)DTTOIF(e->d_type);
    if (fill(buf, e->d_name, &st, 0, 0)) break;
  }
  closedir(d);
  return 0;
}

static int sf_mkdir(const char* path, mode_t mode) {
  REAL(p, path);
  return mkdir(p, mode) == 0 ? 0 : -errno;
}

static int sf_unlink(const char* path) {
  REAL(p, path);
  return unlink(p) == 0 ? 0 : -errno;
}

static int sf_rmdir(const char* path) {
  REAL(p, path);
  return rmdir(p) == 0 ? 0 : -errno;
}

static int sf_symlink(const char* target, const char* path) {
  REAL(p, path);
  return symlink(target, p) == 0 ? 0 : -errno;
}

static int sf_rename(const char* from, const char* to, unsigned int flags) {
  REAL(a, from);
  char b[PATH_MAX];
  int e = real_path(to, b);
  if (e != 0) return e;
  return renameat2(AT_FDCWD, a, AT_FDCWD, b, flags) == 0 ? 0 : -errno;
}

static int sf_link(const char* from, const char* to) {
  REAL(a, from);
  char b[PATH_MAX];
  int e = real_path(to, b);
  if (e != 0) return e;
  return link(a, b) == 0 ? 0 : -errno;
}

static int sf_chmod(const char* path, mode_t mode, struct fuse_file_info* fi) {
  if (fi) {
    wait_delay();
    return fchmod((int)fi->fh, mode) == 0 ? 0 : -errno;
  }
  REAL(p, path);
  return chmod(p, mode) == 0 ? 0 : -errno;
}

static int sf_chown(const char* path, uid_t uid, gid_t gid, struct fuse_file_info* fi) {
  if (fi) {
    wait_delay();
    return fchown((int)fi->fh, uid, gid) == 0 ? 0 : -errno;
  }
  REAL(p, path);
  return lchown(p, uid, gid) == 0 ? 0 : -errno;
}

static int sf_truncate(const char* path, off_t size, struct fuse_file_info* fi) {
  if (fi) {
    wait_delay();
    return ftruncate((int)fi->fh, size) == 0 ? 0 : -errno;
  }
  REAL(p, path);
  return truncate(p, size) == 0 ? 0 : -errno;
}

static int sf_utimens(const char* path, const struct timespec tv[2], struct fuse_file_info* fi) {
  if (fi) {
    wait_delay();
    return futimens((int)fi->fh, tv) == 0 ? 0 : -errno;
  }
  REAL(p, path);
  return utimensat(AT_FDCWD, p, tv, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : -errno;
}

static int sf_create(const char* path, mode_t mode, struct fuse_file_info* fi) {
  REAL(p, path);
  int fd = open(p, fi->flags, mode);
  if (fd < 0) return -errno;
  fi->fh = (uint64_t)fd;
  return 0;
}

static int sf_open(const char* path, struct fuse_file_info* fi) {
  REAL(p, path);
  int fd = open(p, fi->flags);
  if (fd < 0) return -errno;
  fi->fh = (uint64_t)fd;
  return 0;
}

static int sf_read(const char* path, char* buf, size_t size, off_t off, struct fuse_file_info* fi) {
  (void)path;
  wait_delay();
  ssize_t n = pread((int)fi->fh, buf, size, off);
  return n < 0 ? -errno : (int)n;
}

static int sf_write(const char* path, const char* buf, size_t size, off_t off, struct fuse_file_info* fi) {
  (void)path;
  wait_delay();
  ssize_t n = pwrite((int)fi->fh, buf, size, off);
  return n < 0 ? -errno : (int)n;
}

static int sf_statfs(const char* path, struct statvfs* st) {
  REAL(p, path);
  return statvfs(p, st) == 0 ? 0 : -errno;
}

static int sf_release(const char* path, struct fuse_file_info* fi) {
  (void)path;
  close((int)fi->fh);
  return 0;
}

static int sf_fsync(const char* path, int datasync, struct fuse_file_info* fi) {
  (void)path;
  wait_delay();
  int r = datasync ? fdatasync((int)fi->fh) : fsync((int)fi->fh);
  return r == 0 ? 0 : -errno;
}

static int sf_access(const char* path, int mask) {
  REAL(p, path);
  return access(p, mask) == 0 ? 0 : -errno;
}

static void* sf_init(struct fuse_conn_info* conn, struct fuse_config* cfg) {
  (void)conn;
  // Paths are resolved here, so the kernel's inode numbers need not be ours.
  cfg->use_ino = 1;
  return NULL;
}

static const struct fuse_operations ops = {
    .init = sf_init,
    .getattr = sf_getattr,
    .readlink = sf_readlink,
    .readdir = sf_readdir,
    .mkdir = sf_mkdir,
    .unlink = sf_unlink,
    .rmdir = sf_rmdir,
    .symlink = sf_symlink,
    .rename = sf_rename,
    .link = sf_link,
    .chmod = sf_chmod,
    .chown = sf_chown,
    .truncate = sf_truncate,
    .utimens = sf_utimens,
    .create = sf_create,
    .open = sf_open,
    .read = sf_read,
    .write = sf_write,
    .statfs = sf_statfs,
    .release = sf_release,
    .fsync = sf_fsync,
    .access = sf_access,
};

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: slowfs SOURCE MOUNTPOINT [--delay-us N] [FUSE options]\n");
    return 2;
  }
  if (!realpath(argv[1], source)) {
    perror(argv[1]);
    return 2;
  }
  // FUSE sees: argv[0] MOUNTPOINT [its options]; --delay-us is ours.
  char** fargs = calloc((size_t)argc + 1, sizeof *fargs);
  if (!fargs) return 2;
  int n = 0;
  fargs[n++] = argv[0];
  fargs[n++] = argv[2];
  for (int i = 3; i < argc; ++i) {
    if (strcmp(argv[i], "--delay-us") == 0 && i + 1 < argc) delay_us = strtol(argv[++i], NULL, 10);
    else fargs[n++] = argv[i];
  }
  umask(0);
  return fuse_main(n, fargs, &ops, NULL);
}
