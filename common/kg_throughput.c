/*  kg_throughput: the words of progress. */
#include "kg_throughput.h"

#include <stdio.h>

void
kg_throughput_bytes(double b, char *buf, size_t len)
{
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    u++;
  }
  snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", b, units[u]);
}

char *
kg_throughput_text(uint64_t done, uint64_t total, double secs, double stale_secs, char *buf,
                 size_t len)
{
  if (!len)
    return buf;
  char d[32], t[32], r[32];
  kg_throughput_bytes((double) done, d, sizeof d);
  kg_throughput_bytes((double) total, t, sizeof t);
  double bps = secs > 0 ? (double) done / secs : 0;
  kg_throughput_bytes(bps, r, sizeof r);
  int n = snprintf(buf, len, "%s of %s", d, total ? t : "?");
  if (n > 0 && (size_t) n < len && bps > 0)
    n += snprintf(buf + n, len - (size_t) n, ", %s/s", r);
  if (n > 0 && (size_t) n < len && bps > 0 && total > done) {
    double left = (double) (total - done) / bps - stale_secs;
    snprintf(buf + n, len - (size_t) n, ", about %.0f s left", left > 0 ? left : 0);
  }
  return buf;
}

char *
kg_throughput_duration(int64_t ms, char *buf, size_t len)
{
  if (len == 0)
    return buf;
  if (ms < 0)
    ms = 0;
  if (ms < 1000)
    snprintf(buf, len, "%lld ms", (long long) ms);
  else if (ms < 10000)
    snprintf(buf, len, "%lld.%lld s", (long long) (ms / 1000), (long long) (ms % 1000 / 100));
  else if (ms < 120000)
    snprintf(buf, len, "%lld s", (long long) (ms / 1000));
  else
    snprintf(buf, len, "%lld min %lld s", (long long) (ms / 60000),
             (long long) (ms % 60000 / 1000));
  return buf;
}
