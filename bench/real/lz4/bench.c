/*
 * layoutbench benchmark driver for lz4 (bench/real/lz4): compress and decompress a fixed,
 * generated buffer through the library's API, and speak the LAYOUTBENCH console protocol
 * (kernels/README.md).  It uses only LZ4_compress_default, LZ4_decompress_safe and
 * LZ4_compressBound, which every lz4 release since r129 (2015) has.
 *
 *   bench [rounds=N] [size=BYTES] [notime]
 *
 * notime: no clock is read and no time printed, so that the instruction count (cachegrind)
 * depends on the code alone.  Buffers come from aligned_alloc(4096): their alignment does
 * not move when a layout changes the size of .text (and so the address of .data/.bss).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "lz4.h"

/* text-like input: words drawn from a small vocabulary by a fixed xorshift generator, with
 * runs of digits, so that it compresses about 2:1 like ordinary logs */
static void generate(char *buf, int size) {
    static const char *words[] = {"the", "layout", "of", "code", "changes", "nothing", "but", "cache",
                                  "misses", "and", "branch", "targets", "kernel", "packet", "route",
                                  "table", "entry", "hash", "value", "commit", "merge", "release"};
    unsigned long long x = 0x9E3779B97F4A7C15ull;
    int n = 0;
    while (n < size) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        const char *w = words[x % (sizeof words / sizeof *words)];
        int len = (int)strlen(w);
        char num[8];
        if ((x >> 20) % 7 == 0) {   /* a number: digits written by hand (no printf in the hot part) */
            unsigned v = (unsigned)((x >> 24) % 100000);
            len = 0;
            do { num[len++] = (char)('0' + v % 10); v /= 10; } while (v);
            w = num;
        }
        if (n + len + 1 > size) break;
        memcpy(buf + n, w, (size_t)len);
        n += len;
        buf[n++] = (x >> 40) % 11 == 0 ? '\n' : ' ';
    }
    while (n < size) buf[n++] = '.';
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static unsigned long long fnv(const char *p, int n) {
    unsigned long long h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

int main(int argc, char **argv) {
    int rounds = 4, size = 256 * 1024, timed = 1;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "rounds=", 7) == 0) rounds = atoi(argv[i] + 7);
        else if (strncmp(argv[i], "size=", 5) == 0) size = atoi(argv[i] + 5);
        else if (strcmp(argv[i], "notime") == 0) timed = 0;
        else { fprintf(stderr, "bench: unknown argument %s (rounds=N size=BYTES notime)\n", argv[i]); return 2; }
    }
    if (rounds < 1 || size < 1024) { fprintf(stderr, "bench: rounds >= 1, size >= 1024\n"); return 2; }
    int bound = LZ4_compressBound(size);
    size_t cap = ((size_t)(bound > size ? bound : size) + 4095) / 4096 * 4096;
    char *src = aligned_alloc(4096, cap), *dst = aligned_alloc(4096, cap), *back = aligned_alloc(4096, cap);
    if (!src || !dst || !back) { printf("LAYOUTBENCH end status=panic reason=nomem\n"); return 1; }
    generate(src, size);

    /* the version from the header's macros: r131 (2015) has no LZ4_versionString() */
    printf("LAYOUTBENCH build kernel=lz4 version=%d.%d.%d platform=hosted\n",
           LZ4_VERSION_MAJOR, LZ4_VERSION_MINOR, LZ4_VERSION_RELEASE);
    double tc = 0, td = 0;
    int csize = 0, ok = 1;
    for (int r = 0; r < rounds; r++) {
        double t0 = timed ? now() : 0;
        csize = LZ4_compress_default(src, dst, size, bound);
        double t1 = timed ? now() : 0;
        int dsize = LZ4_decompress_safe(dst, back, csize, size);
        double t2 = timed ? now() : 0;
        tc += t1 - t0;
        td += t2 - t1;
        if (csize <= 0 || dsize != size || memcmp(src, back, (size_t)size) != 0) ok = 0;
    }
    if (timed) {
        double mb = (double)size * rounds / 1e6;
        printf("LAYOUTBENCH metric name=compress_mbps value=%.2f unit=MB/s better=higher\n", mb / tc);
        printf("LAYOUTBENCH metric name=decompress_mbps value=%.2f unit=MB/s better=higher\n", mb / td);
    }
    printf("LAYOUTBENCH check name=compressed_size value=%d\n", csize);
    printf("LAYOUTBENCH check name=input value=0x%016llx\n", fnv(src, size));
    printf("LAYOUTBENCH end status=%s\n", ok ? "ok" : "panic");
    free(src); free(dst); free(back);
    return ok ? 0 : 1;
}
