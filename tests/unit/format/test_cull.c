/*
 * test_cull.c - unit tests of culling (format/cull.c): allocations freed
 * within the threshold disappear with their frees and come back as CULLED
 * aggregates with exact counts, bytes and temporaries; what is kept leaves
 * in the order it happened; the pending limit lets the oldest entries
 * through, whose frees are then kept; a realloc of a culled block becomes an
 * allocation.  Input streams are made with codec.h's encoders, the output is
 * decoded back.
 */
#include "format/codec.h"
#include "format/cull.h"
#include "../check.h"

#include <stdio.h>
#include <string.h>

#define T 1000000000ull
#define MS 1000000ull

/* What the cull emitted, decoded: at most 32 events. */
struct out {
	uint8_t bytes[1 << 14];
	size_t len;
	struct mt_dec dec; /* carries the decoder's state across calls of take() */
	struct mt_event ev[32];
	int n;
};

static void collect(void *ctx, const uint8_t *records, size_t len)
{
	struct out *o = ctx;
	CHECK(o->len + len <= sizeof o->bytes);
	if (o->len + len <= sizeof o->bytes) {
		memcpy(o->bytes + o->len, records, len);
		o->len += len;
	}
}

/* Decodes what was emitted since the last call into o->ev[0..n). */
static void take(struct out *o, size_t *from)
{
	o->dec.p = o->bytes + *from;
	o->dec.end = o->bytes + o->len;
	o->n = 0;
	while (o->n < 32 && mt_dec_next(&o->dec, &o->ev[o->n]) > 0)
		o->n++;
	CHECK(o->dec.p == o->dec.end);
	*from = o->len;
}

static int is(const struct mt_event *e, int type, uint64_t ptr, uint64_t ts)
{
	return e->type == type && e->ptr == ptr && e->ts == ts;
}

/* Two short-lived blocks of stack 5 are culled (the first one a temporary),
 * the long-lived and the leaked one of stack 6 are kept with their frees. */
static void test_culled(void)
{
	static struct out o;
	static uint8_t in[1024];
	struct mt_enc e = {0};
	uint8_t *p = in;
	size_t from = 0;
	p = mt_enc_thread(&e, p, 1);
	p = mt_enc_alloc(&e, p, MT_FN_MALLOC, T, 0x1000, 10, 5);
	p = mt_enc_free(&e, p, T + 1 * MS, 0x1000);
	p = mt_enc_alloc(&e, p, MT_FN_MALLOC, T + 2 * MS, 0x2000, 20, 5);
	p = mt_enc_alloc(&e, p, MT_FN_MALLOC, T + 3 * MS, 0x3000, 1000, 6);
	p = mt_enc_free(&e, p, T + 4 * MS, 0x2000);
	p = mt_enc_free(&e, p, T + 50 * MS, 0x3000);
	p = mt_enc_alloc(&e, p, MT_FN_MALLOC, T + 60 * MS, 0x4000, 7, 6);

	struct mt_cull *c = mt_cull_new(10 * MS, collect, &o);
	CHECK(c != NULL);
	if (!c)
		return;
	mt_cull_feed(c, in, (size_t)(p - in), T + 60 * MS, 1);
	take(&o, &from);
	CHECK(o.n == 5);
	CHECK(is(&o.ev[0], MT_REC_ALLOC, 0x3000, T + 3 * MS) && o.ev[0].size == 1000 && o.ev[0].stack == 6);
	CHECK(o.ev[0].tid == 1);
	CHECK(is(&o.ev[1], MT_REC_FREE, 0x3000, T + 50 * MS));
	CHECK(is(&o.ev[2], MT_REC_ALLOC, 0x4000, T + 60 * MS) && o.ev[2].size == 7);
	/* the true peak, over every event: 0x2000 and 0x3000 live at T+3ms */
	CHECK(o.ev[3].type == MT_REC_EXT && o.ev[3].ext == MT_EXT_PEAK);
	CHECK(o.ev[3].bytes == 1020 && o.ev[3].count == 2 && o.ev[3].ts == T + 3 * MS);
	/* stack 5: 2 allocations of 30 bytes, the first freed by the thread's
	 * next event (a temporary), the second after another allocation */
	CHECK(o.ev[4].type == MT_REC_CULLED && o.ev[4].stack == 5);
	CHECK(o.ev[4].count == 2 && o.ev[4].bytes == 30 && o.ev[4].temporary == 1);
	mt_cull_free(c);
}

/* Kept events wait behind a young allocation and leave in their order. */
static void test_fifo(void)
{
	static struct out o;
	static uint8_t in[1024];
	struct mt_enc e = {0};
	uint8_t *p = in, *q;
	size_t from = 0;
	struct mt_cull *c = mt_cull_new(10 * MS, collect, &o);
	CHECK(c != NULL);
	if (!c)
		return;
	p = mt_enc_thread(&e, p, 3);
	p = mt_enc_alloc(&e, p, MT_FN_MALLOC, T, 0x1000, 1, 1);
	p = mt_enc_alloc(&e, p, MT_FN_MALLOC, T + 1 * MS, 0x2000, 2, 1);
	mt_cull_feed(c, in, (size_t)(p - in), T + 5 * MS, 0);
	take(&o, &from);
	for (int i = 0; i < o.n; i++) /* both younger than 10 ms: pending */
		CHECK(o.ev[i].type != MT_REC_ALLOC && o.ev[i].type != MT_REC_FREE);

	q = p;
	p = mt_enc_free(&e, p, T + 25 * MS, 0x2000);
	p = mt_enc_alloc(&e, p, MT_FN_MALLOC, T + 26 * MS, 0x3000, 3, 1);
	mt_cull_feed(c, q, (size_t)(p - q), T + 30 * MS, 0);
	take(&o, &from);
	/* the first two are old enough, the free follows, R (4 ms old) waits */
	CHECK(o.n >= 3);
	CHECK(is(&o.ev[0], MT_REC_ALLOC, 0x1000, T) && o.ev[0].tid == 3);
	CHECK(is(&o.ev[1], MT_REC_ALLOC, 0x2000, T + 1 * MS));
	CHECK(is(&o.ev[2], MT_REC_FREE, 0x2000, T + 25 * MS));
	for (int i = 3; i < o.n; i++)
		CHECK(o.ev[i].type != MT_REC_ALLOC && o.ev[i].type != MT_REC_FREE);

	mt_cull_feed(c, NULL, 0, T + 31 * MS, 1);
	take(&o, &from);
	CHECK(o.n >= 1 && is(&o.ev[0], MT_REC_ALLOC, 0x3000, T + 26 * MS));
	for (int i = 0; i < o.n; i++)
		CHECK(o.ev[i].type != MT_REC_CULLED); /* nothing was culled */
	mt_cull_free(c);
}

/* With at most 2 entries pending, the oldest leaves young; its free within
 * the threshold then cannot cull it and is kept too. */
static void test_pending_limit(void)
{
	static struct out o;
	static uint8_t in[1024];
	struct mt_enc e = {0};
	uint8_t *p = in, *q;
	size_t from = 0;
	struct mt_cull *c = mt_cull_new(1000 * MS, collect, &o);
	CHECK(c != NULL);
	if (!c)
		return;
	mt_cull_set_pending_limit(c, 2);
	p = mt_enc_thread(&e, p, 1);
	p = mt_enc_alloc(&e, p, MT_FN_MALLOC, T, 0x1000, 16, 1);
	p = mt_enc_alloc(&e, p, MT_FN_MALLOC, T + 1 * MS, 0x2000, 32, 1);
	p = mt_enc_alloc(&e, p, MT_FN_MALLOC, T + 2 * MS, 0x3000, 64, 1);
	mt_cull_feed(c, in, (size_t)(p - in), T + 3 * MS, 0);
	take(&o, &from);
	CHECK(o.n >= 1 && is(&o.ev[0], MT_REC_ALLOC, 0x1000, T));
	for (int i = 1; i < o.n; i++)
		CHECK(o.ev[i].type != MT_REC_ALLOC && o.ev[i].type != MT_REC_FREE);

	q = p;
	p = mt_enc_free(&e, p, T + 4 * MS, 0x1000);
	mt_cull_feed(c, q, (size_t)(p - q), T + 4 * MS, 0);
	take(&o, &from);
	CHECK(o.n >= 1 && is(&o.ev[0], MT_REC_ALLOC, 0x2000, T + 1 * MS));
	for (int i = 1; i < o.n; i++)
		CHECK(o.ev[i].type != MT_REC_ALLOC && o.ev[i].type != MT_REC_FREE);

	mt_cull_feed(c, NULL, 0, T + 5 * MS, 1);
	take(&o, &from);
	CHECK(o.n >= 2 && is(&o.ev[0], MT_REC_ALLOC, 0x3000, T + 2 * MS));
	CHECK(o.n >= 2 && is(&o.ev[1], MT_REC_FREE, 0x1000, T + 4 * MS));
	for (int i = 0; i < o.n; i++)
		CHECK(o.ev[i].type != MT_REC_CULLED);
	mt_cull_free(c);
}

/* A realloc of a young block culls the block; the new one is an allocation
 * of its own, named by the realloc. */
static void test_realloc(void)
{
	static struct out o;
	static uint8_t in[1024];
	struct mt_enc e = {0};
	uint8_t *p = in;
	size_t from = 0;
	struct mt_cull *c = mt_cull_new(10 * MS, collect, &o);
	CHECK(c != NULL);
	if (!c)
		return;
	p = mt_enc_thread(&e, p, 1);
	p = mt_enc_alloc(&e, p, MT_FN_MALLOC, T, 0x1000, 10, 1);
	p = mt_enc_realloc(&e, p, MT_FN_REALLOC, T + 1 * MS, 0x1000, 0x2000, 20, 2);
	mt_cull_feed(c, in, (size_t)(p - in), T + 100 * MS, 1);
	take(&o, &from);
	int allocs = 0, culled = 0;
	for (int i = 0; i < o.n; i++) {
		const struct mt_event *x = &o.ev[i];
		CHECK(x->type != MT_REC_FREE && x->type != MT_REC_REALLOC);
		if (x->type == MT_REC_ALLOC) {
			allocs++;
			CHECK(x->ptr == 0x2000 && x->size == 20 && x->stack == 2 && x->fn == MT_FN_REALLOC);
			CHECK(x->ts == T + 1 * MS);
		}
		if (x->type == MT_REC_CULLED) {
			culled++;
			CHECK(x->stack == 1 && x->count == 1 && x->bytes == 10 && x->temporary == 1);
		}
	}
	CHECK(allocs == 1 && culled == 1);
	mt_cull_free(c);
}

int main(void)
{
	test_culled();
	test_fifo();
	test_pending_limit();
	test_realloc();
	if (failures) {
		fprintf(stderr, "cull: %d checks failed\n", failures);
		return 1;
	}
	printf("cull: all checks passed\n");
	return 0;
}
