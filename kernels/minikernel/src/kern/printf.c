/* kern/printf.c - minimal printf-like formatting (no floating point) */
#include "kern.h"
#include "lib.h"
#include "platform.h"

struct outbuf {
	char *buf;
	size_t size;
	size_t pos;
};

static void out_char(struct outbuf *o, char c)
{
	if (o->pos + 1 < o->size)
		o->buf[o->pos] = c;
	o->pos++;
}

static void out_num(struct outbuf *o, u64 v, u32 base, bool neg, u32 width, bool zero, bool upper)
{
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	char tmp[24];
	u32 n = 0;

	do {
		tmp[n++] = digits[v % base];
		v /= base;
	} while (v);
	if (neg)
		width = width ? width - 1 : 0;
	if (neg && zero)
		out_char(o, '-');
	while (width > n) {
		out_char(o, zero ? '0' : ' ');
		width--;
	}
	if (neg && !zero)
		out_char(o, '-');
	while (n)
		out_char(o, tmp[--n]);
}

int kvsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct outbuf o = { buf, size, 0 };

	for (; *fmt; fmt++) {
		u32 width = 0, lng = 0;
		bool zero = false;

		if (*fmt != '%') {
			out_char(&o, *fmt);
			continue;
		}
		fmt++;
		if (*fmt == '0') {
			zero = true;
			fmt++;
		}
		while (*fmt >= '0' && *fmt <= '9')
			width = width * 10 + (u32)(*fmt++ - '0');
		while (*fmt == 'l' || *fmt == 'z') {
			lng++;
			fmt++;
		}
		switch (*fmt) {
		case 'c':
			out_char(&o, (char)va_arg(ap, int));
			break;
		case 's': {
			const char *s = va_arg(ap, const char *);
			size_t l;

			if (!s)
				s = "(null)";
			l = strlen(s);
			while (width > l) {
				out_char(&o, ' ');
				width--;
			}
			while (*s)
				out_char(&o, *s++);
			break;
		}
		case 'd':
		case 'i': {
			s64 v = lng ? va_arg(ap, s64) : va_arg(ap, int);

			out_num(&o, v < 0 ? (u64)-v : (u64)v, 10, v < 0, width, zero, false);
			break;
		}
		case 'u':
			out_num(&o, lng ? va_arg(ap, u64) : va_arg(ap, unsigned), 10, false, width, zero, false);
			break;
		case 'x':
		case 'X':
			out_num(&o, lng ? va_arg(ap, u64) : va_arg(ap, unsigned), 16, false, width, zero,
				*fmt == 'X');
			break;
		case 'p':
			out_char(&o, '0');
			out_char(&o, 'x');
			out_num(&o, (u64)(uintptr_t)va_arg(ap, void *), 16, false, 0, false, false);
			break;
		case '%':
			out_char(&o, '%');
			break;
		case 0:
			fmt--;
			break;
		default:
			out_char(&o, '%');
			out_char(&o, *fmt);
			break;
		}
	}
	if (o.size)
		o.buf[o.pos < o.size ? o.pos : o.size - 1] = 0;
	return (int)o.pos;
}

int ksnprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = kvsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

int kprintf(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = kvsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	plat_console_write(buf, strlen(buf));
	return n;
}

void kputs(const char *s)
{
	plat_console_write(s, strlen(s));
}

/* prints prefix, num/den with frac_digits decimals (truncated), suffix */
void kprint_fixed(const char *prefix, u64 num, u64 den, u32 frac_digits, const char *suffix)
{
	char frac[24];
	u64 scale = 1, q, f;

	if (frac_digits > 18)
		frac_digits = 18;
	for (u32 i = 0; i < frac_digits; i++)
		scale *= 10;
	q = den ? (num * scale) / den : 0;
	f = q % scale;
	for (u32 i = frac_digits; i > 0; i--) {
		frac[i] = (char)('0' + f % 10);
		f /= 10;
	}
	frac[0] = '.';
	frac[frac_digits + 1] = 0;
	kprintf("%s%llu%s%s", prefix, q / scale, frac_digits ? frac : "", suffix);
}
