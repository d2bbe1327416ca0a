/*
 * svc_gen.h - generator for per-port service handlers.
 *
 * SVC_DEFINE(name, n, salt) defines "static void name(struct svc_req *rq)".
 * Every handler parses the mini-protocol header at the start of the payload
 * (op, flags, length, key), runs one of eight payload algorithms with its
 * own constants over the whole payload, post-processes by the (data
 * dependent) opcode and decides whether to send a reply.
 */
#ifndef SVC_GEN_H
#define SVC_GEN_H
#include "net.h"
#include "lib.h"

#define SVC_NOUNROLL _Pragma("clang loop unroll(disable)")

#define SVC_DEFINE(name, n, salt)						\
static void name(struct svc_req *rq)						\
{										\
	const u8 *p = rq->pay;							\
	u32 len = rq->len, i;							\
	u64 h = (0x9e3779b97f4a7c15ull * ((n) + (salt))) ^ rq->seq ^ ((u64)rq->sport << 32); \
	u32 op = len >= 8 ? (p[0] & 15u) : 16u;					\
										\
	if (len >= 8) {								\
		u32 key = load32be(p + 4);					\
		if ((key >> ((n) % 17)) & 1)					\
			h ^= (u64)key << ((n) % 29);				\
		else								\
			h += key * (u64)((n) * 2 + 1);				\
		if (load16be(p + 2) != len)					\
			h = ~h;							\
	}									\
	switch (((n) + (salt)) % 8) {						\
	case 0:									\
		SVC_NOUNROLL for (i = 0; i + 8 <= len; i += 8)				\
			h = rotl64(h ^ load64le(p + i), ((n) * 7) % 61 + 1) *	\
			    (0x100000001b3ull + (n) * 2);			\
		break;								\
	case 1: {								\
		u32 a = 1 + (n), b = (salt);					\
		SVC_NOUNROLL for (i = 0; i < len; i++) {					\
			a += p[i];						\
			b += a;							\
		}								\
		h ^= ((u64)(b % 65521) << 16 | (a % 65521)) * ((salt) + 1);	\
		break;								\
	}									\
	case 2: {								\
		u32 cnt[16];							\
		SVC_NOUNROLL for (i = 0; i < 16; i++)					\
			cnt[i] = i ^ (n);					\
		SVC_NOUNROLL for (i = 0; i < len; i++)					\
			cnt[(p[i] >> ((n) % 5)) & 15]++;			\
		SVC_NOUNROLL for (i = 0; i < 16; i++)					\
			h = h * 31 + cnt[i] * (i + (n));			\
		break;								\
	}									\
	case 3: {								\
		u32 tokens = 0, run = 0, maxrun = 0;				\
		SVC_NOUNROLL for (i = 0; i < len; i++) {					\
			if (p[i] < (n) * 3 + 20) {				\
				tokens++;					\
				if (run > maxrun)				\
					maxrun = run;				\
				run = 0;					\
			} else {						\
				run++;						\
			}							\
		}								\
		h += tokens * 0x10001ull * ((n) + 1) ^ maxrun;			\
		break;								\
	}									\
	case 4:									\
		SVC_NOUNROLL for (i = 0; i + 4 <= len; i += 4)				\
			h += load32le(p + i) ^ (i * (0x9e37u + (n)));		\
		h = mix64(h);							\
		break;								\
	case 5: {								\
		u32 c = ~(u32)(n);						\
		SVC_NOUNROLL for (i = 0; i < len; i++) {					\
			c ^= p[i];						\
			c = (c >> 1) ^ (-(c & 1) & (0xedb88320u ^ ((n) << 3)));	\
			c = (c >> 1) ^ (-(c & 1) & (0xedb88320u ^ ((n) << 3)));	\
		}								\
		h ^= (u64)c << ((n) % 32);					\
		break;								\
	}									\
	case 6: {								\
		u64 v = 0;							\
		u32 shift = 0, cnt = 0;						\
		SVC_NOUNROLL for (i = 0; i < len; i++) {					\
			v |= (u64)(p[i] & 0x7f) << shift;			\
			if (p[i] & 0x80) {					\
				shift += 7;					\
				if (shift > 56) {				\
					shift = 0;				\
					v = 0;					\
				}						\
			} else {						\
				h += v * ((n) + 1);				\
				cnt++;						\
				v = 0;						\
				shift = 0;					\
			}							\
		}								\
		h ^= cnt;							\
		break;								\
	}									\
	default: {								\
		u32 up = 0, down = 0;						\
		SVC_NOUNROLL for (i = 1; i < len; i++) {					\
			s32 d = (s32)p[i] - (s32)p[i - 1];			\
			if (d > (s32)((n) % 7))					\
				up++;						\
			else if (d < -(s32)((n) % 5))				\
				down++;						\
			h = h * 33 + (u8)d;					\
		}								\
		h ^= ((u64)up << 32) | down;					\
		break;								\
	}									\
	}									\
	switch (op) {								\
	case 0: h ^= h >> 29; break;						\
	case 1: h += (u64)len * ((n) + 0x51); break;				\
	case 2: h = rotl64(h, (n) % 63 + 1); break;				\
	case 3: h *= 0xff51afd7ed558ccdull; break;				\
	case 4: h -= rq->src * (u64)((n) + 3); break;				\
	case 5: h ^= (u64)rq->dport << ((n) % 40); break;			\
	case 6: h = ~h + (n); break;						\
	case 7: h += rq->state * 0x1234567ull; break;				\
	case 8: h ^= mix64(h + (n)); break;					\
	case 9: h = h * 9 + 7 + (salt); break;					\
	case 10: h ^= h << 13; break;						\
	case 11: h += crc32c((n), p + 8, len > 24 ? 16 : len - 8); break;	\
	case 12: h ^= fnv1a32(p, len > 32 ? 32 : len, (n)); break;		\
	case 13: h += (u64)p[1] << ((n) % 50); break;				\
	case 14: h = (h >> 7) | ((u64)(n) << 57); break;			\
	case 15: h -= (u64)rq->sport * rq->dport; break;			\
	default: h ^= 0x5555 + (n); break;					\
	}									\
	rq->result = h;								\
	if (((h >> 8) % 5) == (n) % 5) {					\
		rq->reply_len = 8 + (u32)(h & 15);				\
		SVC_NOUNROLL for (i = 0; i < rq->reply_len; i++)				\
			rq->reply[i] = (u8)(h >> ((i % 8) * 8)) ^ (u8)i;	\
	}									\
}

#endif
