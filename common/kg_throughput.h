/*  kg_throughput: how kguard words the progress of a long read, everywhere a
    person sees it (the terminal line of the `kguard ckpt` commands, the
    restore notice in a notebook, `%kguard status`):

        "412.0 MiB of 1.0 GiB, 67.3 MiB/s, about 9 s left"

    Pure functions: no clock, no I/O (times are passed in).
*/
#ifndef KG_THROUGHPUT_H
#define KG_THROUGHPUT_H

#include <stddef.h>
#include <stdint.h>

/*  bytes as "512 B", "1.0 KiB", "3.2 GiB" (binary units, one decimal). */
void kg_throughput_bytes(double bytes, char *buf, size_t len);

/*  "<done> of <total>, <rate>/s, about <n> s left" into buf. total 0 means
    unknown ("<done> of ?", no time left). The rate is done / secs (the
    average since the start; left out when secs <= 0 or done is 0); the time
    left is what remains at that rate, less stale_secs (the time since done
    was measured, so a figure shown later still counts down). Returns buf. */
/*  A duration (ms >= 0; less counts as 0) as a person reads it: "350 ms"
    below a second, "1.5 s" (one decimal) below ten, "42 s" below two
    minutes, then "3 min 5 s". Returns buf. */
char *kg_throughput_duration(int64_t ms, char *buf, size_t len);

char *kg_throughput_text(uint64_t done, uint64_t total, double secs, double stale_secs, char *buf,
                       size_t len);

#endif
