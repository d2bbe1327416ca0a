/* lib/checksum.c - Internet checksum */
#include "lib.h"

u64 cksum_add(u64 sum, const u8 *p, size_t len)
{
	while (len >= 8) {
		sum += load32be(p);
		sum += load32be(p + 4);
		p += 8;
		len -= 8;
	}
	while (len >= 2) {
		sum += load16be(p);
		p += 2;
		len -= 2;
	}
	if (len)
		sum += (u32)p[0] << 8;
	return sum;
}

u16 cksum_fold(u64 sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (u16)sum;
}

u16 in_cksum(const u8 *p, size_t len)
{
	return (u16)~cksum_fold(cksum_add(0, p, len));
}

u64 cksum_pseudo(u32 src, u32 dst, u8 proto, u16 len)
{
	return (u64)(src >> 16) + (src & 0xffff) + (dst >> 16) + (dst & 0xffff) + proto + len;
}

/* RFC 1624 incremental update */
u16 cksum_adjust16(u16 cksum, u16 oldv, u16 newv)
{
	u32 sum = (u16)~cksum;

	sum += (u16)~oldv;
	sum += newv;
	return (u16)~cksum_fold(sum);
}
