/*  Helpers shared by kguard's libFuzzer harnesses (test-only).

    Harnesses whose parser reads a path (the connection file, the archive)
    get the fuzz input through an anonymous memfd, named as
    /proc/self/fd/N: no file system clutter, no cleanup on a crash. */
#ifndef KG_FUZZ_UTIL_H
#define KG_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

/*  Write data to a fresh memfd and put its /proc path into path. Returns the
    fd (close it after use) or -1. */
static inline int
kg_fuzz_memfd(const uint8_t *data, size_t size, char *path, size_t pathlen)
{
  int fd = memfd_create("kg-fuzz", MFD_CLOEXEC);
  if (fd < 0)
    return -1;
  size_t off = 0;
  while (off < size) {
    ssize_t w = write(fd, data + off, size - off);
    if (w <= 0) {
      close(fd);
      return -1;
    }
    off += (size_t) w;
  }
  snprintf(path, pathlen, "/proc/self/fd/%d", fd);
  return fd;
}

#endif
