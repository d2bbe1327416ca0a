/*
 * lib/string.c - simple memory and string routines.
 * Deliberately plain word/byte loops: the instruction count depends only on
 * the length, never on the alignment of the pointers.
 */
#include "lib.h"

void *memcpy(void *dst, const void *src, size_t n)
{
	u8 *d = dst;
	const u8 *s = src;

	while (n >= 8) {
		*(u64_ua *)d = *(const u64_ua *)s;
		d += 8;
		s += 8;
		n -= 8;
	}
	while (n) {
		*d++ = *s++;
		n--;
	}
	return dst;
}

/* only used inside one buffer, so the direction test never depends on layout */
void *memmove(void *dst, const void *src, size_t n)
{
	u8 *d = dst;
	const u8 *s = src;

	if (d <= s) {
		while (n--)
			*d++ = *s++;
	} else {
		d += n;
		s += n;
		while (n--)
			*--d = *--s;
	}
	return dst;
}

void *memset(void *dst, int c, size_t n)
{
	u8 *d = dst;
	u64 v = (u8)c;

	v |= v << 8;
	v |= v << 16;
	v |= v << 32;
	while (n >= 8) {
		*(u64_ua *)d = v;
		d += 8;
		n -= 8;
	}
	while (n) {
		*d++ = (u8)c;
		n--;
	}
	return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const u8 *x = a, *y = b;

	for (size_t i = 0; i < n; i++)
		if (x[i] != y[i])
			return x[i] < y[i] ? -1 : 1;
	return 0;
}

size_t strlen(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}

int strcmp(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return (u8)*a - (u8)*b;
}

int strncmp(const char *a, const char *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (a[i] != b[i])
			return (u8)a[i] - (u8)b[i];
		if (!a[i])
			return 0;
	}
	return 0;
}

bool parse_u64(const char *s, size_t n, u64 *out)
{
	u64 v = 0;

	if (!n)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		if (v > (~0ull - 9) / 10)
			return false;
		v = v * 10 + (u64)(s[i] - '0');
	}
	*out = v;
	return true;
}
