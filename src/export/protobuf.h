/*
 * protobuf.h - just enough of protobuf's wire format to write a message:
 * varints, 64-bit fixed fields and length-delimited fields into a growable
 * buffer.  pprof's profile.proto and OTLP's profiles use it; a message is
 * built bottom up (a nested message is encoded into a buffer of its own,
 * then appended as bytes).
 */
#ifndef MEMTRACE_PROTOBUF_H
#define MEMTRACE_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

enum { MT_PB_VARINT = 0, MT_PB_I64 = 1, MT_PB_LEN = 2 };

struct mt_pb {
	uint8_t *buf;
	size_t len, cap;
};

static inline void mt_pb_reserve(struct mt_pb *b, size_t n)
{
	if (b->len + n <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + n)
		cap *= 2;
	b->buf = xrealloc(b->buf, cap);
	b->cap = cap;
}

static inline void mt_pb_free(struct mt_pb *b)
{
	free(b->buf);
	*b = (struct mt_pb){ 0 };
}

static inline size_t mt_pb_varint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static inline void mt_pb_varint(struct mt_pb *b, uint64_t v)
{
	mt_pb_reserve(b, 10);
	while (v >= 0x80) {
		b->buf[b->len++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	b->buf[b->len++] = (uint8_t)v;
}

static inline void mt_pb_tag(struct mt_pb *b, unsigned field, unsigned wire)
{
	mt_pb_varint(b, (uint64_t)field << 3 | wire);
}

/* A scalar field; proto3 leaves fields at their default (0) out. */
static inline void mt_pb_uint(struct mt_pb *b, unsigned field, uint64_t v)
{
	if (!v)
		return;
	mt_pb_tag(b, field, MT_PB_VARINT);
	mt_pb_varint(b, v);
}

/* A fixed64 field (little-endian), left out at 0 as mt_pb_uint's. */
static inline void mt_pb_fixed64(struct mt_pb *b, unsigned field, uint64_t v)
{
	if (!v)
		return;
	mt_pb_tag(b, field, MT_PB_I64);
	mt_pb_reserve(b, 8);
	for (int i = 0; i < 8; i++)
		b->buf[b->len++] = (uint8_t)(v >> (8 * i));
}

static inline void mt_pb_bytes(struct mt_pb *b, unsigned field, const void *data, size_t len)
{
	mt_pb_tag(b, field, MT_PB_LEN);
	mt_pb_varint(b, len);
	mt_pb_reserve(b, len);
	if (len)
		memcpy(b->buf + b->len, data, len);
	b->len += len;
}

/* A nested message, encoded beforehand into SUB. */
static inline void mt_pb_msg(struct mt_pb *b, unsigned field, const struct mt_pb *sub)
{
	mt_pb_bytes(b, field, sub->buf, sub->len);
}

/* A packed repeated varint field (zeros kept: they are elements). */
static inline void mt_pb_packed(struct mt_pb *b, unsigned field, const uint64_t *v, size_t n)
{
	size_t len = 0;
	for (size_t i = 0; i < n; i++)
		len += mt_pb_varint_len(v[i]);
	mt_pb_tag(b, field, MT_PB_LEN);
	mt_pb_varint(b, len);
	for (size_t i = 0; i < n; i++)
		mt_pb_varint(b, v[i]);
}

#endif
