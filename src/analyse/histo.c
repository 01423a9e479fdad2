/*
 * histo.c - see histo.h.
 */
#include "histo.h"

#include <string.h>

const double mt_life_bounds_s[MT_LIFE_BUCKETS - 1] = { 0.001, 0.01, 0.1, 1, 10 };

int mt_size_bucket(uint64_t size)
{
	int b = 0;
	while (b < MT_SIZE_BUCKETS - 1 && size > (1ull << b))
		b++;
	return b;
}

uint64_t mt_size_bucket_max(int b)
{
	return b >= MT_SIZE_BUCKETS - 1 ? UINT64_MAX : 1ull << b;
}

int mt_life_bucket(uint64_t ns)
{
	int b = 0;
	while (b < MT_LIFE_BUCKETS - 1 && (double)ns >= mt_life_bounds_s[b] * 1e9)
		b++;
	return b;
}

void mt_histo_init(struct mt_histo *h)
{
	memset(h, 0, sizeof *h);
	mt_blockrecs_init(&h->live);
}

void mt_histo_alloc(struct mt_histo *h, uint64_t ts, uint64_t ptr, uint64_t size)
{
	int b = mt_size_bucket(size);
	h->size_count[b]++;
	h->size_bytes[b] += size;
	struct mt_block old;
	/* a block handed out again without a free between: the free was lost,
	 * and how long it lived is not known */
	mt_blockrecs_take(&h->live, ptr, &old);
	mt_blockrecs_put(&h->live, &(struct mt_block){ .ptr = ptr, .ts = ts, .size = size });
}

void mt_histo_free(struct mt_histo *h, uint64_t ts, uint64_t ptr)
{
	struct mt_block b;
	if (!mt_blockrecs_take(&h->live, ptr, &b))
		return; /* allocated before tracing, or not matched */
	int k = mt_life_bucket(ts > b.ts ? ts - b.ts : 0);
	h->life_count[k]++;
	h->life_bytes[k] += b.size;
}

void mt_histo_finish(struct mt_histo *h)
{
	size_t pos = 0;
	const struct mt_block *b;
	while ((b = mt_blockrecs_next(&h->live, &pos))) {
		h->never_freed++;
		h->never_freed_bytes += b->size;
	}
	mt_blockrecs_destroy(&h->live);
}

static void on_alloc(void *ctx, size_t proc, uint64_t ts, uint32_t tid, uint64_t ptr, uint64_t size,
		     uint32_t site)
{
	(void)tid;
	(void)site;
	mt_histo_alloc(&((struct mt_histo *)ctx)[proc], ts, ptr, size);
}

static void on_free(void *ctx, size_t proc, uint64_t ts, uint32_t tid, uint64_t ptr)
{
	(void)tid;
	mt_histo_free(&((struct mt_histo *)ctx)[proc], ts, ptr);
}

int mt_histograms(struct mt_selection *sel, struct mt_histo *out, char *err, size_t errlen)
{
	for (size_t i = 0; i < sel->matched.nprocs; i++)
		mt_histo_init(&out[i]);
	struct mt_replay_ops ops = { .alloc = on_alloc, .free = on_free, .ctx = out };
	int rc = mt_select_replay(sel, &ops, err, errlen);
	for (size_t i = 0; i < sel->matched.nprocs; i++)
		mt_histo_finish(&out[i]);
	return rc < 0 ? -1 : 0;
}
