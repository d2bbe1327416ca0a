/* types.h - basic freestanding types and helpers */
#ifndef TYPES_H
#define TYPES_H

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef signed char s8;
typedef short s16;
typedef int s32;
typedef long long s64;
typedef unsigned long size_t;
typedef long ssize_t;
typedef unsigned long uintptr_t;
typedef _Bool bool;
#define true 1
#define false 0
#define NULL ((void *)0)

typedef __builtin_va_list va_list;
#define va_start(ap, last) __builtin_va_start(ap, last)
#define va_arg(ap, type) __builtin_va_arg(ap, type)
#define va_end(ap) __builtin_va_end(ap)

#define ALIGN64 __attribute__((aligned(64)))
#define NORETURN __attribute__((noreturn))
#define UNUSED __attribute__((unused))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

typedef u16 __attribute__((aligned(1), may_alias)) u16_ua;
typedef u32 __attribute__((aligned(1), may_alias)) u32_ua;
typedef u64 __attribute__((aligned(1), may_alias)) u64_ua;

static inline u32 rotl32(u32 x, unsigned r) { r &= 31; return r ? (x << r) | (x >> (32 - r)) : x; }
static inline u64 rotl64(u64 x, unsigned r) { r &= 63; return r ? (x << r) | (x >> (64 - r)) : x; }

static inline u16 load16be(const u8 *p) { return (u16)((p[0] << 8) | p[1]); }
static inline u32 load32be(const u8 *p)
{
	return ((u32)p[0] << 24) | ((u32)p[1] << 16) | ((u32)p[2] << 8) | p[3];
}
static inline u64 load64le(const u8 *p) { return *(const u64_ua *)p; }
static inline u32 load32le(const u8 *p) { return *(const u32_ua *)p; }
static inline void store16be(u8 *p, u16 v) { p[0] = (u8)(v >> 8); p[1] = (u8)v; }
static inline void store32be(u8 *p, u32 v)
{
	p[0] = (u8)(v >> 24); p[1] = (u8)(v >> 16); p[2] = (u8)(v >> 8); p[3] = (u8)v;
}
static inline void store64le(u8 *p, u64 v) { *(u64_ua *)p = v; }

#endif
