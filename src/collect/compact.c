/*
 * compact.c - see compact.h.
 */
#include "compact.h"
#include "format/codec.h"
#include "base/ptrmap.h"
#include "base/util.h"

#include <stdlib.h>

struct mt_compact {
	mt_compact_emit_fn emit;
	void (*module)(void *ctx, const struct mt_event *ev);
	void *ctx;
	struct mt_dec dec;
	struct mt_enc enc;
	struct mt_ptrmap live;	/* address -> serial */
	struct mt_ptrmap sizes; /* address -> size, when tracked (keys NULL: not) */
	uint8_t out[1 << 16];
	size_t len;
	struct mt_event ev;
};

struct mt_compact *mt_compact_new(mt_compact_emit_fn emit, void *ctx)
{
	struct mt_compact *c = xcalloc(1, sizeof *c);
	c->emit = emit;
	c->ctx = ctx;
	mt_ptrmap_xinit(&c->live, 1u << 16);
	return c;
}

void mt_compact_on_module(struct mt_compact *c, void (*fn)(void *ctx, const struct mt_event *ev))
{
	c->module = fn;
}

void mt_compact_free(struct mt_compact *c)
{
	if (!c)
		return;
	mt_ptrmap_destroy(&c->live);
	mt_ptrmap_destroy(&c->sizes);
	free(c);
}

void mt_compact_track_sizes(struct mt_compact *c)
{
	if (!c->sizes.keys)
		mt_ptrmap_xinit(&c->sizes, 1u << 16);
}

size_t mt_compact_each_live(const struct mt_compact *c,
			    void (*fn)(void *ctx, uint64_t addr, uint64_t size), void *ctx)
{
	size_t n = 0;
	for (size_t i = 0; c->sizes.keys && i <= c->sizes.mask; i++)
		if (c->sizes.keys[i]) {
			fn(ctx, c->sizes.keys[i], c->sizes.vals[i]);
			n++;
		}
	return n;
}

/* The sizes kept beside the serials: a block allocated (SIZE) or freed. */
static void track(struct mt_compact *c, uint64_t ptr, uint64_t size, int alloc)
{
	uint64_t old;
	if (!c->sizes.keys || !ptr)
		return;
	if (alloc)
		mt_ptrmap_xput(&c->sizes, ptr, size);
	else
		mt_ptrmap_take(&c->sizes, ptr, &old);
}

static uint8_t *room(struct mt_compact *c, size_t n)
{
	if (c->len + n > sizeof c->out) {
		c->emit(c->ctx, c->out, c->len);
		c->len = 0;
	}
	return c->out + c->len;
}

size_t mt_compact_feed(struct mt_compact *c, const uint8_t *records, size_t len)
{
	struct mt_event *ev = &c->ev;
	const uint8_t *at = records;
	c->dec.p = records;
	c->dec.end = records + len;
	while (mt_dec_next(&c->dec, ev) > 0) {
		size_t need = ev->type == MT_REC_ALLOC || ev->type == MT_REC_FREE ||
					      ev->type == MT_REC_REALLOC ?
				      2 * MT_REC_MAX_SMALL :
				      mt_event_size(ev);
		/* no real record comes near; a client's could be any size */
		if (need > sizeof c->out)
			break;
		uint8_t *w = room(c, need);
		uint8_t *s = w;
		uint64_t serial;
		switch (ev->type) {
		case MT_REC_ALLOC:
			w = mt_enc_thread(&c->enc, w, ev->tid);
			w = mt_enc_nalloc(&c->enc, w, ev->fn, ev->ts, ev->size, ev->stack);
			mt_ptrmap_xput(&c->live, ev->ptr, c->enc.serial);
			track(c, ev->ptr, ev->size, 1);
			break;
		case MT_REC_FREE:
			track(c, ev->ptr, 0, 0);
			w = mt_enc_thread(&c->enc, w, ev->tid);
			if (mt_ptrmap_take(&c->live, ev->ptr, &serial))
				w = mt_enc_nfree(&c->enc, w, ev->ts, serial);
			else
				w = mt_enc_free(&c->enc, w, ev->ts, ev->ptr);
			break;
		case MT_REC_REALLOC:
			track(c, ev->old_ptr, 0, 0);
			track(c, ev->ptr, ev->size, 1);
			w = mt_enc_thread(&c->enc, w, ev->tid);
			if (mt_ptrmap_take(&c->live, ev->old_ptr, &serial)) {
				w = mt_enc_nrealloc(&c->enc, w, ev->fn, ev->ts, serial, ev->size,
						    ev->stack);
			} else {
				/* the old block predates tracing: its free is unmatched */
				w = mt_enc_free(&c->enc, w, ev->ts, ev->old_ptr);
				w = mt_enc_nalloc(&c->enc, w, ev->fn, ev->ts, ev->size, ev->stack);
			}
			mt_ptrmap_xput(&c->live, ev->ptr, c->enc.serial);
			break;
		case MT_REC_EXT:
			/* a block's own mapping names the block as ALLOC does */
			if (ev->ext == MT_EXT_MMAP && ev->map.kind == MT_MAP_BLOCK &&
			    mt_ptrmap_get(&c->live, ev->map.addr, &serial))
				ev->map.addr = MT_SERIAL_KEY(serial);
			/* the blocks a leak scan found lost, named as their
			 * allocations now are (a block allocated before tracing
			 * keeps its address) */
			for (unsigned i = 0; ev->ext == MT_EXT_LEAKS && i < ev->nframes; i++)
				if (mt_ptrmap_get(&c->live, ev->frames[i], &serial))
					ev->frames[i] = MT_SERIAL_KEY(serial);
			if (ev->ext == MT_EXT_MMAP) /* (its thread, as the stream said) */
				w = mt_enc_thread(&c->enc, w, ev->tid);
			w = mt_enc_passthrough(&c->enc, w, ev);
			break;
		default:
			if (ev->type == MT_REC_MODULE && c->module)
				c->module(c->ctx, ev);
			w = mt_enc_passthrough(&c->enc, w, ev);
		}
		c->len += (size_t)(w - s);
		at = c->dec.p;
	}
	if (c->len) {
		c->emit(c->ctx, c->out, c->len);
		c->len = 0;
	}
	return (size_t)(at - records);
}
