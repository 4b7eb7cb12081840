/*  kg_ids: the ids and timestamps the Jupyter protocol writes (see kg_ids.h). */
#include "kg_ids.h"

#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_once_t s_once = PTHREAD_ONCE_INIT;

static void
s_init(void)
{
  if (sodium_init() < 0)
    abort();   /* no entropy source at all: no id can be made, cannot go on */
}

void
kg_uuid4(char out[37])
{
  pthread_once(&s_once, s_init);
  unsigned char b[16];
  randombytes_buf(b, sizeof b);
  b[6] = (unsigned char) ((b[6] & 0x0f) | 0x40);     /*  version 4        */
  b[8] = (unsigned char) ((b[8] & 0x3f) | 0x80);     /*  RFC 4122 variant */
  char hex[33];
  sodium_bin2hex(hex, sizeof hex, b, sizeof b);
  memcpy(out, hex, 8);
  out[8] = '-';
  memcpy(out + 9, hex + 8, 4);
  out[13] = '-';
  memcpy(out + 14, hex + 12, 4);
  out[18] = '-';
  memcpy(out + 19, hex + 16, 4);
  out[23] = '-';
  memcpy(out + 24, hex + 20, 12);
  out[36] = '\0';
}

void
kg_iso_now(char out[32])
{
  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(out + n, 32 - n, ".%06ldZ", ts.tv_nsec / 1000);
}

