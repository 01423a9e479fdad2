/*
 * framejson.c - a frame as JSON ("function", "file", "line", "module",
 * "address", "offset", "inlined", "name"), and the texts of the frames
 * already written, kept by frame.  A report of 65,536 sites 8 levels deep
 * writes more than a million frames, a few thousand of them distinct; each
 * written anew (a dozen stdio calls, three strings escaped) cost as much as
 * the rest of `report --json` together, and more than reading the
 * recording on stacks deeper than that.  A frame's strings are the
 * symbolizer's, which live as long as it does: their addresses name them,
 * and a cache lives no longer than the symbolizer it serves.
 */
#include "report.h"
#include "analyse/figures.h"
#include "base/hash.h"
#include "base/json.h"
#include "base/slots.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

struct entry {
	struct mt_frame key;
	size_t off, len; /* its text in the cache's buffer */
};

struct mt_frame_json {
	struct entry *e;
	size_t n, cap;
	uint32_t *slot;
	size_t mask;
	uint64_t salt; /* addresses come from the recording (mt_hash_salt) */
	FILE *text;    /* the texts, one after the other, into buf */
	char *buf;
	size_t size;
};

static void frame_json(FILE *f, const struct mt_frame *x)
{
	fputs("{\"function\": ", f);
	mt_json_str(f, x->function);
	fputs(", \"file\": ", f);
	mt_json_str(f, x->file);
	fputs(", \"line\": ", f);
	if (x->line)
		fprintf(f, "%d", x->line);
	else
		fputs("null", f);
	fputs(", \"module\": ", f);
	mt_json_str(f, x->module);
	fprintf(f, ", \"address\": \"0x%llx\", \"offset\": \"0x%llx\", \"inlined\": %s, \"name\": ",
		(unsigned long long)x->address, (unsigned long long)x->offset,
		x->inlined ? "true" : "false");
	char name[512];
	mt_json_str(f, mt_frame_label(x, name, sizeof name));
	fputc('}', f);
}

static uint64_t key_hash(const struct mt_frame_json *c, const struct mt_frame *x)
{
	uint64_t h = mt_hash_combine(c->salt, x->address);
	h = mt_hash_combine(h, (uintptr_t)x->function ^ (uint64_t)x->line << 32);
	h = mt_hash_combine(h, (uintptr_t)x->file ^ (uint64_t)(x->inlined != 0) << 63);
	return mt_hash_combine(h, (uintptr_t)x->module ^ x->offset);
}

static uint64_t entry_hash(const void *ctx, size_t i)
{
	const struct mt_frame_json *c = ctx;
	return key_hash(c, &c->e[i].key);
}

static int same(const struct mt_frame *a, const struct mt_frame *b)
{
	return a->address == b->address && a->function == b->function && a->file == b->file &&
	       a->line == b->line && a->module == b->module && a->offset == b->offset &&
	       !a->inlined == !b->inlined;
}

struct mt_frame_json *mt_frame_json_new(void)
{
	struct mt_frame_json *c = xcalloc(1, sizeof *c);
	c->salt = mt_hash_salt();
	c->text = open_memstream(&c->buf, &c->size);
	if (!c->text)
		mt_oom(sizeof *c);
	return c;
}

void mt_frame_json_free(struct mt_frame_json *c)
{
	if (!c)
		return;
	fclose(c->text);
	free(c->buf);
	free(c->e);
	free(c->slot);
	free(c);
}

/* Frame X's text, written into C's buffer the first time. */
static const struct entry *text_of(struct mt_frame_json *c, const struct mt_frame *x)
{
	uint64_t h = key_hash(c, x);
	size_t i = h & c->mask;
	for (; c->slot && c->slot[i]; i = (i + 1) & c->mask)
		if (same(&c->e[c->slot[i] - 1].key, x))
			return &c->e[c->slot[i] - 1];
	if (mt_slots_full(c->n, c->mask)) {
		mt_slots_grow(&c->slot, &c->mask, 1024, 0, c->n, entry_hash, c);
		i = mt_slots_empty(c->slot, c->mask, h);
	}
	mt_grow(&c->e, &c->cap, c->n, sizeof *c->e);
	struct entry *e = &c->e[c->n];
	e->key = *x;
	e->off = c->size;
	frame_json(c->text, x);
	if (fflush(c->text))
		mt_oom(c->size);
	e->len = c->size - e->off;
	c->slot[i] = (uint32_t)++c->n;
	return e;
}

void mt_json_frames_cached(FILE *f, const struct mt_frame *fr, int n, struct mt_frame_json *c)
{
	fputc('[', f);
	for (int i = 0; i < n; i++) {
		if (i)
			fputs(", ", f);
		if (c) {
			const struct entry *e = text_of(c, &fr[i]);
			fwrite(c->buf + e->off, 1, e->len, f);
		} else {
			frame_json(f, &fr[i]);
		}
	}
	fputc(']', f);
}

void mt_json_frames(FILE *f, const struct mt_frame *fr, int n)
{
	mt_json_frames_cached(f, fr, n, NULL);
}
