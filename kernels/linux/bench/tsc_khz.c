/*
 * layoutbench: the host's TSC frequency in kHz, for the guest's
 * tsc_early_khz= (see kernels/linux/NOTES.md, "Guest clock").
 *
 * Under QEMU TCG the guest's RDTSC returns the host's TSC, but the guest
 * kernel cannot calibrate it: without ACPI there is no HPET/PM timer, and the
 * PIT calibration fails whenever the host is busy ("tsc: Unable to calibrate
 * against PIT ... Marking TSC unstable"), leaving the jiffies clocksource
 * (1-4 ms resolution).  Passing the host's frequency avoids that.
 *
 * build: clang-19 -O2 -o tsc_khz tsc_khz.c     run: ./tsc_khz  -> e.g. 2596144
 * Prints the median of 5 measurements of 100 ms against CLOCK_MONOTONIC_RAW.
 */
#include <stdio.h>
#include <stdint.h>
#include <time.h>
#include <x86intrin.h>

static uint64_t ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC_RAW, &t);
	return (uint64_t)t.tv_sec * 1000000000u + t.tv_nsec;
}

int main(void)
{
	double v[5];
	for (int i = 0; i < 5; i++) {
		uint64_t n0 = ns(), c0 = __rdtsc(), n1, c1;
		do
			n1 = ns();
		while (n1 - n0 < 100000000u);
		c1 = __rdtsc();
		v[i] = (double)(c1 - c0) * 1e6 / (double)(n1 - n0);
	}
	for (int i = 1; i < 5; i++)
		for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double t = v[j]; v[j] = v[j - 1]; v[j - 1] = t;
		}
	printf("%.0f\n", v[2]);
	return 0;
}
