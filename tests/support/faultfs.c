// A FUSE passthrough of one directory with the faults a test or a benchmark
// sets: a fixed wait in every operation (a slow disk, a network mount, where
// dm-delay is not available: no device-mapper in a container), and a size
// (a disk that fills up, and gets room back) that can change while mounted,
// where remounting a small tmpfs would take a privilege a container may not
// give and a loop image would need mkfs, a loop device and a remount to grow.
// Mounting it takes what mounting any FUSE file system takes: /dev/fuse, and
// root (mount(2)) or the setuid fusermount3.
//
//   faultfs SOURCE MOUNTPOINT [--delay-us N] [--size-file FILE] [FUSE options, e.g. -f]
//
// --delay-us N: every operation the kernel sends (lookup, getattr, open,
// each read of up to 128 KiB, readdir, create, write, fsync, rename, unlink,
// ...) sleeps N microseconds before it is done on SOURCE. Nothing is cached
// by the kernel beyond what FUSE does by default (attributes and entries for
// 1 s, file pages dropped at each open), so a cold and a warm read both pay
// the delay per request, as on a network file system.
//
// --size-file FILE: FILE holds the file system's size in bytes, read again
// at every statfs and every operation that makes a file longer, so whoever
// mounted it changes the size by writing FILE (a new one renamed into
// place). Every byte of a regular file's length is used space, as if no
// file had holes: a write past a file's end, a fallocate or a truncate that
// would take the total past the size fails with ENOSPC, as on a full disk,
// and a write within a file's length always goes through (its blocks are
// there). statfs says the size and what is left, in 4 KiB blocks. Exact for
// a program that allocates before it writes (dedupd fallocates its index
// map); a sparse file counts at its length.

#define FUSE_USE_VERSION 31

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <fuse.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static char source[PATH_MAX];
static long delay_us = 0;

static void wait_delay(void) {
  if (delay_us <= 0) return;
  struct timespec ts = {delay_us / 1000000, (delay_us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

// ---- the size -------------------------------------------------------------

static char size_path[PATH_MAX];
static const char* size_file = NULL;  // NULL: no size of our own, SOURCE's
static uint64_t last_size = 0;        // the size FILE said last (kept when it cannot be read)
static const unsigned long kBlock = 4096;
// Held from the check of a growth to its end, and over each count of the
// used space: two writes cannot both take the last free bytes.
static pthread_mutex_t space_mu = PTHREAD_MUTEX_INITIALIZER;

// The size FILE says now.
static uint64_t size_now(void) {
  FILE* f = fopen(size_file, "r");
  if (!f) return last_size;
  uint64_t v;
  if (fscanf(f, "%" SCNu64, &v) == 1) last_size = v;
  fclose(f);
  return last_size;
}

// nftw() has no argument for the walk's state: these, under space_mu.
static uint64_t walk_used;
static struct seen {
  dev_t dev;
  ino_t ino;
} * walk_links;
static size_t walk_links_n, walk_links_cap;

static int count_file(const char* path, const struct stat* st, int type, struct FTW* ftw) {
  (void)path, (void)type, (void)ftw;
  if (!S_ISREG(st->st_mode)) return 0;
  if (st->st_nlink > 1) {  // a file with several names is counted once
    for (size_t i = 0; i < walk_links_n; ++i)
      if (walk_links[i].dev == st->st_dev && walk_links[i].ino == st->st_ino) return 0;
    if (walk_links_n == walk_links_cap) {
      size_t cap = walk_links_cap ? 2 * walk_links_cap : 16;
      struct seen* more = realloc(walk_links, cap * sizeof *more);
      if (!more) return -1;
      walk_links = more, walk_links_cap = cap;
    }
    walk_links[walk_links_n++] = (struct seen){st->st_dev, st->st_ino};
  }
  walk_used += (uint64_t)st->st_size;
  return 0;
}

// The bytes the files under SOURCE take: the sum of their lengths.
static int used_now(uint64_t* out) {
  walk_used = 0;
  walk_links_n = 0;
  if (nftw(source, count_file, 32, FTW_PHYS) != 0) return errno ? -errno : -ENOMEM;
  *out = walk_used;
  return 0;
}

// 0 when a file now `length` bytes long may become `end` bytes long
// (space_mu held), -ENOSPC when the size has no room for it.
static int room_for(uint64_t length, uint64_t end) {
  if (!size_file || end <= length) return 0;
  uint64_t used;
  int e = used_now(&used);
  if (e != 0) return e;
  uint64_t size = size_now();
  return used > size || end - length > size - used ? -ENOSPC : 0;
}

// The length of an open file or a path (0 when there is none yet).
static int length_of(int fd, const char* path, uint64_t* out) {
  struct stat st;
  int r = fd >= 0 ? fstat(fd, &st) : stat(path, &st);
  if (r != 0) {
    if (errno != ENOENT) return -errno;
    st.st_size = 0;
  }
  *out = (uint64_t)st.st_size;
  return 0;
}

static void lock_space(void) {
  if (size_file) pthread_mutex_lock(&space_mu);
}
static void unlock_space(void) {
  if (size_file) pthread_mutex_unlock(&space_mu);
}

// ---- the operations ---------------------------------------------------------

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
  char p[PATH_MAX] = "";
  wait_delay();
  int fd = fi ? (int)fi->fh : -1;
  if (fd < 0) {
    int e = real_path(path, p);
    if (e != 0) return e;
  }
  lock_space();
  uint64_t length = 0;
  int e = size_file ? length_of(fd, p, &length) : 0;
  if (e == 0) e = room_for(length, (uint64_t)size);
  if (e == 0) e = (fd >= 0 ? ftruncate(fd, size) : truncate(p, size)) == 0 ? 0 : -errno;
  unlock_space();
  return e;
}

static int sf_utimens(const char* path, const struct timespec tv[2], struct fuse_file_info* fi) {
  if (fi) {
    wait_delay();
    return futimens((int)fi->fh, tv) == 0 ? 0 : -errno;
  }
  REAL(p, path);
  return utimensat(AT_FDCWD, p, tv, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : -errno;
}

// An open with O_TRUNC makes the file shorter, never longer: no check.
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
  lock_space();
  uint64_t length = 0;
  int e = size_file ? length_of((int)fi->fh, NULL, &length) : 0;
  if (e == 0) e = room_for(length, (uint64_t)off + size);
  ssize_t n = e == 0 ? pwrite((int)fi->fh, buf, size, off) : -1;
  if (e == 0 && n < 0) e = -errno;
  unlock_space();
  return e != 0 ? e : (int)n;
}

// Mode 0 only (posix_fallocate's): the other modes allocate past a file's
// end or punch holes, which the size's count of lengths does not see.
static int sf_fallocate(const char* path, int mode, off_t off, off_t len, struct fuse_file_info* fi) {
  (void)path;
  wait_delay();
  if (mode != 0) return -EOPNOTSUPP;
  lock_space();
  uint64_t length = 0;
  int e = size_file ? length_of((int)fi->fh, NULL, &length) : 0;
  if (e == 0) e = room_for(length, (uint64_t)off + (uint64_t)len);
  if (e == 0) e = -posix_fallocate((int)fi->fh, off, len);
  unlock_space();
  return e;
}

static int sf_statfs(const char* path, struct statvfs* st) {
  REAL(p, path);
  if (statvfs(p, st) != 0) return -errno;
  if (!size_file) return 0;
  pthread_mutex_lock(&space_mu);
  uint64_t used = 0;
  int e = used_now(&used);
  uint64_t size = size_now();
  pthread_mutex_unlock(&space_mu);
  if (e != 0) return e;
  uint64_t used_blocks = (used + kBlock - 1) / kBlock;
  st->f_bsize = st->f_frsize = kBlock;
  st->f_blocks = size / kBlock;
  st->f_bfree = st->f_bavail = st->f_blocks > used_blocks ? st->f_blocks - used_blocks : 0;
  return 0;
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
    .fallocate = sf_fallocate,
    .statfs = sf_statfs,
    .release = sf_release,
    .fsync = sf_fsync,
    .access = sf_access,
};

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: faultfs SOURCE MOUNTPOINT [--delay-us N] [--size-file FILE] [FUSE options]\n");
    return 2;
  }
  if (!realpath(argv[1], source)) {
    perror(argv[1]);
    return 2;
  }
  // FUSE sees: argv[0] MOUNTPOINT [its options]; --delay-us and --size-file
  // are ours.
  char** fargs = calloc((size_t)argc + 1, sizeof *fargs);
  if (!fargs) return 2;
  int n = 0;
  fargs[n++] = argv[0];
  fargs[n++] = argv[2];
  for (int i = 3; i < argc; ++i) {
    if (strcmp(argv[i], "--delay-us") == 0 && i + 1 < argc) delay_us = strtol(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--size-file") == 0 && i + 1 < argc) size_file = argv[++i];
    else fargs[n++] = argv[i];
  }
  if (size_file) {
    // Read again later, whatever the working directory is then.
    if (!realpath(size_file, size_path)) {
      perror(size_file);
      return 2;
    }
    size_file = size_path;
    FILE* f = fopen(size_file, "r");
    int read = f ? fscanf(f, "%" SCNu64, &last_size) : 0;
    if (f) fclose(f);
    if (read != 1) {
      fprintf(stderr, "faultfs: %s does not hold a size in bytes\n", size_file);
      return 2;
    }
  }
  umask(0);
  int status = fuse_main(n, fargs, &ops, NULL);
  free(fargs);
  free(walk_links);
  return status;
}
