/* A small benchmark in the shape layoutbench reads: metric lines on stdout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

unsigned long mix(unsigned long x);
unsigned long table_sum(int n);

int main(int argc, char **argv) {
    long n = 200000;
    int timed = 1;   /* "notime": print no clock reading, so that cachegrind's counts are exact */
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "iterations=", 11) == 0) n = atol(argv[i] + 11);
        if (strcmp(argv[i], "notime") == 0) timed = 0;
    }
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    unsigned long h = 0;
    for (long i = 0; i < n; i++)
        h = mix(h + (unsigned long)i) ^ table_sum((int)(i & 63));
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ns = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (double)n;
    printf("LAYOUTBENCH build kernel=example version=1 platform=hosted\n");
    if (timed)
        printf("LAYOUTBENCH metric name=ns_per_iter value=%.3f unit=ns better=lower\n", ns);
    printf("LAYOUTBENCH check name=hash value=0x%016lx\n", h);
    printf("LAYOUTBENCH end status=ok\n");
    return 0;
}
