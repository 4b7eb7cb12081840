/*  Fuzz the connection-file reader (ipc/kg_conninfo): a file the frontend
    (or anyone who can write its path) hands to `kguard kernel -f`. */
#include <stdint.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "kg_conninfo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char path[64], err[256], ep[512];
  int fd = kg_fuzz_memfd(data, size, path, sizeof path);
  if (fd < 0)
    return 0;
  kg_conninfo_t *ci = kg_conninfo_new();
  if (ci && kg_conninfo_load(ci, path, err, sizeof err) == 0)
    for (int ch = 0; ch < 5; ch++)
      (void) kg_conninfo_endpoint(ci, (kg_channel_t) ch, ep, sizeof ep);
  kg_conninfo_destroy(&ci);
  close(fd);
  return 0;
}
