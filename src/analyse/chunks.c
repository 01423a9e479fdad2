/*
 * chunks.c - see chunks.h.
 *
 * A ring of NBATCH batches between the two threads.  A process's chunk stays
 * in the file reader's one buffer, which the next chunk reuses as soon as
 * this one is decoded: the few records that are no allocation event are
 * copied into the batch that lists them (a stack's frames, a module's path:
 * a few percent of the bytes).  The chunks of the binaries' stream, which the
 * reader reads whole, are taken from the file reader (which then makes
 * itself a new buffer) and freed by the reading thread once every batch
 * that points into them has been taken: a batch lists the chunks whose last
 * event it holds.
 */
#include "chunks.h"
#include "figures.h"
#include "base/hash.h"
#include "base/util.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NBATCH 4
#define MAX_RELEASE 64
/* a batch is handed on once its records' copies pass this much */
#define BATCH_BYTES (64u << 10)

struct batch {
	struct mt_bev ev[MT_BEV_BATCH];
	size_t n;
	uint8_t *bytes; /* the copies of its records (MT_BEV_OTHER) */
	size_t nbytes, bytes_cap;
	uint8_t *release[MAX_RELEASE]; /* chunks done with once this batch is */
	size_t release_len[MAX_RELEASE];
	size_t nrelease;
};

/* The decoder state of a stream, found by hash of its number. */
struct stream_state {
	uint32_t stream;
	int used;
	struct mt_enc st;
};

struct mt_chunks {
	struct mt_file_reader *r;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct batch b[NBATCH];
	size_t head, tail; /* batches published, taken (counters) */
	int taking;	   /* the reader holds batch tail - 1 */
	int done, stop;
	size_t inflight; /* bytes of chunks not freed yet */
	/* a malformed record */
	int bad;
	uint64_t bad_chunk;
	size_t bad_at;
	/* producer only */
	struct stream_state *streams;
	size_t streams_mask, nstreams;
	uint64_t salt;
	uint8_t *cur; /* the chunk being decoded */
	size_t cur_len;
};

static struct mt_enc *state_of(struct mt_chunks *c, uint32_t stream)
{
	if ((c->nstreams + 1) * 2 > (c->streams ? c->streams_mask + 1 : 0)) {
		struct stream_state *old = c->streams;
		size_t n = old ? c->streams_mask + 1 : 0;
		c->streams_mask = n ? n * 2 - 1 : 15;
		c->streams = xcalloc(c->streams_mask + 1, sizeof *c->streams);
		for (size_t i = 0; i < n; i++) {
			if (!old[i].used)
				continue;
			size_t j = mt_hash64(old[i].stream ^ c->salt) & c->streams_mask;
			while (c->streams[j].used)
				j = (j + 1) & c->streams_mask;
			c->streams[j] = old[i];
		}
		free(old);
	}
	size_t i = mt_hash64(stream ^ c->salt) & c->streams_mask;
	for (; c->streams[i].used; i = (i + 1) & c->streams_mask)
		if (c->streams[i].stream == stream)
			return &c->streams[i].st;
	c->streams[i].used = 1;
	c->streams[i].stream = stream;
	c->nstreams++;
	return &c->streams[i].st;
}

/* The batch being filled, waiting for a free one: NULL when told to stop. */
static struct batch *filling(struct mt_chunks *c)
{
	pthread_mutex_lock(&c->lock);
	while (c->head - c->tail >= NBATCH - 1 && !c->stop)
		pthread_cond_wait(&c->cond, &c->lock);
	int stop = c->stop;
	pthread_mutex_unlock(&c->lock);
	return stop ? NULL : &c->b[c->head % NBATCH];
}

static void publish(struct mt_chunks *c)
{
	pthread_mutex_lock(&c->lock);
	c->head++;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

/* Publishes the batch being filled if it holds anything. */
static void flush(struct mt_chunks *c, struct batch *b)
{
	if (b->n || b->nrelease)
		publish(c);
}

/* Room for one more event, publishing a full batch: NULL to stop. */
static struct batch *room(struct mt_chunks *c, struct batch *b)
{
	if (b->n < MT_BEV_BATCH && b->nrelease < MAX_RELEASE && b->nbytes < BATCH_BYTES)
		return b;
	publish(c);
	b = filling(c);
	if (b)
		b->n = b->nrelease = b->nbytes = 0;
	return b;
}

/* Room for an event and a copy of LEN bytes of its record, publishing the
 * batch if they do not fit: NULL to stop.  The copies of a batch never
 * move (its events point at them): the room grows only in an empty batch. */
static struct batch *room_bytes(struct mt_chunks *c, struct batch *b, size_t len)
{
	if (!(b = room(c, b)))
		return NULL;
	if (b->nbytes + len <= b->bytes_cap)
		return b;
	if (b->n) {
		publish(c);
		if (!(b = filling(c)))
			return NULL;
		b->n = b->nrelease = b->nbytes = 0;
	}
	if (len > b->bytes_cap) {
		size_t cap = b->bytes_cap ? b->bytes_cap : BATCH_BYTES;
		while (cap < len)
			cap *= 2;
		free(b->bytes);
		b->bytes = xmalloc(cap);
		b->bytes_cap = cap;
	}
	return b;
}

/* A field of the event the decoder has just stored, read as it was
 * stored, eight bytes alone.  Left to itself GCC reads two neighbouring
 * fields at once, sixteen bytes spanning two stores, which the processor
 * cannot forward from its store buffer: each such read waited for the
 * stores to reach the cache, two thirds of this thread's time. */
static inline uint64_t as_stored(uint64_t v)
{
	__asm__("" : "+r"(v));
	return v;
}

static void *run(void *arg)
{
	struct mt_chunks *c = arg;
	struct mt_file_reader *r = c->r;
	struct batch *b = filling(c);
	if (b)
		b->n = b->nrelease = b->nbytes = 0;
	uint32_t stream;
	const uint8_t *data;
	size_t len;
	struct mt_event ev;
	while (b && mt_file_next(r, &stream, &data, &len) > 0) {
		/* the binaries' chunks are handed on whole: take the buffer */
		uint8_t *own = NULL;
		if (stream == MT_STREAM_OBJECTS) {
			own = r->raw;
			r->raw = NULL;
			r->raw_cap = 0;
		}
		if (c->cur) { /* the previous chunk taken ends in this batch */
			if (!(b = room(c, b))) {
				free(own);
				break;
			}
			b->release[b->nrelease] = c->cur;
			b->release_len[b->nrelease++] = c->cur_len;
			c->cur = NULL;
		}
		if (own) {
			c->cur = own;
			c->cur_len = len;
			pthread_mutex_lock(&c->lock);
			c->inflight += len;
			int wait = c->inflight - len > MT_CHUNKS_INFLIGHT;
			pthread_mutex_unlock(&c->lock);
			if (wait) {
				/* the reader frees what it has been given, this batch
				 * included */
				flush(c, b);
				pthread_mutex_lock(&c->lock);
				while (c->inflight - len > MT_CHUNKS_INFLIGHT &&
				       c->head != c->tail && !c->stop)
					pthread_cond_wait(&c->cond, &c->lock);
				pthread_mutex_unlock(&c->lock);
				if (b->n || b->nrelease) {
					if (!(b = filling(c)))
						break;
					b->n = b->nrelease = b->nbytes = 0;
				}
			}
		}
		if (!(b = room(c, b)))
			break;
		b->ev[b->n++] = (struct mt_bev){ .type = MT_BEV_CHUNK,
						 .ptr = (uint64_t)(uintptr_t)own,
						 .size = own ? len : 0,
						 .stack = stream,
						 .old_ptr = r->chunk,
						 .ts = r->offset };
		struct mt_enc *st = state_of(c, stream);
		struct mt_dec d = { data, data + len, *st };
		int rc;
		/* (the reader decodes it again: here it is only checked) */
		while (own && (rc = mt_dec_next(&d, &ev)) > 0)
			;
		for (; !own;) {
			const uint8_t *at = d.p;
			struct mt_enc before = d.st;
			if ((rc = mt_dec_next(&d, &ev)) <= 0)
				break;
			int event = ev.type == MT_REC_ALLOC || ev.type == MT_REC_FREE ||
				    ev.type == MT_REC_REALLOC;
			size_t bytes = event ? 0 : (size_t)(d.p - at);
			if (!(b = room_bytes(c, b, bytes)))
				break;
			struct mt_bev *e = &b->ev[b->n++];
			if (event)
				*e = (struct mt_bev){ (uint8_t)ev.type,
						      (uint8_t)ev.fn,
						      ev.tid,
						      as_stored(ev.ts),
						      as_stored(ev.ptr),
						      as_stored(ev.old_ptr),
						      as_stored(ev.size),
						      as_stored(ev.stack) };
			else {
				/* (room_bytes made room for its copy) */
				*e = (struct mt_bev){ .type = MT_BEV_OTHER,
						      .tid = before.tid,
						      .ts = before.ts,
						      .size = bytes,
						      .ptr = (uint64_t)(uintptr_t)(b->bytes +
										   b->nbytes) };
				memcpy(b->bytes + b->nbytes, at, bytes);
				b->nbytes += bytes;
			}
		}
		*st = d.st;
		if (!b)
			break;
		if (rc < 0) {
			c->bad = 1;
			c->bad_chunk = r->chunk;
			c->bad_at = (size_t)(d.p - data);
			break;
		}
	}
	if (b) {
		if (c->cur) {
			if ((b = room(c, b))) {
				b->release[b->nrelease] = c->cur;
				b->release_len[b->nrelease++] = c->cur_len;
				c->cur = NULL;
			}
		}
		if (b)
			flush(c, b);
	}
	pthread_mutex_lock(&c->lock);
	c->done = 1;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

struct mt_chunks *mt_chunks_start(struct mt_file_reader *r)
{
	struct mt_chunks *c = xcalloc(1, sizeof *c);
	c->r = r;
	c->salt = mt_hash_salt();
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	if (pthread_create(&c->thread, NULL, run, c) != 0)
		mt_oom(sizeof *c); /* no thread: as good as no memory */
	return c;
}

/* Frees the chunks of the batch the reader is done with. */
static void release(struct mt_chunks *c)
{
	if (!c->taking)
		return;
	struct batch *b = &c->b[(c->tail - 1) % NBATCH];
	size_t bytes = 0;
	for (size_t i = 0; i < b->nrelease; i++) {
		free(b->release[i]);
		bytes += b->release_len[i];
	}
	b->nrelease = 0;
	c->inflight -= bytes;
	c->taking = 0;
}

const struct mt_bev *mt_chunks_next(struct mt_chunks *c, size_t *n)
{
	pthread_mutex_lock(&c->lock);
	release(c);
	pthread_cond_broadcast(&c->cond);
	while (c->tail == c->head && !c->done)
		pthread_cond_wait(&c->cond, &c->lock);
	if (c->tail == c->head) {
		pthread_mutex_unlock(&c->lock);
		return NULL;
	}
	struct batch *b = &c->b[c->tail % NBATCH];
	c->tail++;
	c->taking = 1;
	pthread_mutex_unlock(&c->lock);
	*n = b->n;
	return b->ev;
}

int mt_chunks_end(struct mt_chunks *c, uint64_t *chunk, size_t *bad)
{
	pthread_mutex_lock(&c->lock);
	release(c);
	c->stop = 1;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->thread, NULL);
	/* what was published and not taken */
	for (; c->tail != c->head; c->tail++) {
		struct batch *b = &c->b[c->tail % NBATCH];
		for (size_t i = 0; i < b->nrelease; i++)
			free(b->release[i]);
	}
	/* a batch being filled when told to stop */
	struct batch *b = &c->b[c->head % NBATCH];
	for (size_t i = 0; i < b->nrelease; i++)
		free(b->release[i]);
	free(c->cur);
	int r = c->bad ? -1 : 0;
	*chunk = c->bad_chunk;
	*bad = c->bad_at;
	for (size_t i = 0; i < NBATCH; i++)
		free(c->b[i].bytes);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cond);
	free(c->streams);
	free(c);
	return r;
}

int mt_bev_record(const struct mt_bev *b, struct mt_event *ev)
{
	const uint8_t *at = (const uint8_t *)(uintptr_t)b->ptr;
	struct mt_dec d = { at, at + b->size, { .ts = b->ts, .tid = b->tid } };
	return mt_dec_next(&d, ev) > 0 ? 1 : -1;
}
