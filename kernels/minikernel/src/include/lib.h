/* lib.h - freestanding library routines (lib/) */
#ifndef LIB_H
#define LIB_H
#include "types.h"

/* string.c */
void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
bool parse_u64(const char *s, size_t n, u64 *out);

/* checksum.c: Internet checksum (RFC 1071), big-endian word sums */
u64 cksum_add(u64 sum, const u8 *p, size_t len);
u16 cksum_fold(u64 sum);
u16 in_cksum(const u8 *p, size_t len);
u64 cksum_pseudo(u32 src, u32 dst, u8 proto, u16 len);
u16 cksum_adjust16(u16 cksum, u16 oldv, u16 newv);

/* hash.c */
u64 mix64(u64 x);
u32 mix32(u32 x);
u32 jhash_3words(u32 a, u32 b, u32 c, u32 initval);
u32 fnv1a32(const u8 *p, size_t len, u32 h);
u64 hash_bytes64(const u8 *p, size_t len, u64 seed);

/* siphash.c */
u64 siphash24(const u64 key[2], const u8 *p, size_t len);
u64 siphash_3u32(const u64 key[2], u32 a, u32 b, u32 c);

/* prng.c: xoshiro256** seeded by splitmix64 */
struct prng { u64 s[4]; };
void prng_seed(struct prng *r, u64 seed);
u64 prng_next(struct prng *r);
u32 prng_u32(struct prng *r);
u32 prng_range(struct prng *r, u32 n);        /* [0, n) */
bool prng_chance(struct prng *r, u32 percent);
void prng_fill(struct prng *r, u8 *buf, size_t len);

/* bitmap.c */
void bitmap_zero(u64 *map, u32 nbits);
void bitmap_set(u64 *map, u32 bit);
void bitmap_clear(u64 *map, u32 bit);
bool bitmap_test(const u64 *map, u32 bit);
s32 bitmap_find_zero(const u64 *map, u32 nbits, u32 start);
u32 bitmap_weight(const u64 *map, u32 nbits);
u32 popcount64(u64 x);

/* crc32.c: CRC-32C (Castagnoli), table driven */
void crc32c_init(void);
u32 crc32c(u32 crc, const u8 *p, size_t len);

void lib_init(void);
#endif
