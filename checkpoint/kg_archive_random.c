/*  kg_archive_random: the random bytes a statically linked libarchive asks
    for (temporary names, zip encryption salts), from libsodium, which
    kguard-ckpt already links. Built only with KGUARD_STATIC_LIBARCHIVE,
    where the linker sends libarchive's arc4random_buf calls here
    (--wrap): glibc has arc4random_buf only from 2.36 on. */
#include <stddef.h>

#include <sodium.h>

void __wrap_arc4random_buf(void *buf, size_t n);

void
__wrap_arc4random_buf(void *buf, size_t n)
{
  randombytes_buf(buf, n);
}
