/*
 * lean.c - lean mode's pairing of frees (mt_bpf_opts.lean: a recording).
 *
 * In lean mode the programs keep no live map: a hash map insert at every
 * allocation and a lookup and delete at every free cost more in the kernel,
 * on the traced thread, than a table here on the recorder's side.  What the
 * live map told the kernel, this tells the ring buffer's reader: whether a
 * free() the allocator made itself (MTB_RF_INTERNAL: glibc handing a dying
 * thread's cache back to its arena) is of a block the process was seen to
 * allocate.  If not, it is housekeeping and dropped, as the kernel drops it
 * otherwise; every other event passes.  One table of addresses per process.
 */
#include "capture_int.h"

#include <stdlib.h>

#include "base/util.h"

static struct mtb_leanproc *lean_proc(struct mt_bpf *b, uint32_t pid)
{
	if (b->lean_last < b->nlean && b->lean[b->lean_last].pid == pid)
		return &b->lean[b->lean_last];
	for (size_t i = 0; i < b->nlean; i++)
		if (b->lean[i].pid == pid) {
			b->lean_last = i;
			return &b->lean[i];
		}
	mt_grow(&b->lean, &b->caplean, b->nlean, sizeof(*b->lean));
	struct mtb_leanproc *p = &b->lean[b->nlean];
	p->pid = pid;
	mt_ptrmap_xinit(&p->live, 1u << 12);
	b->lean_last = b->nlean++;
	return p;
}

int mtb_lean_pass(struct mt_bpf *b, const struct mtb_rec *r)
{
	struct mtb_leanproc *p;
	uint64_t v;

	switch (r->type) {
	case MTB_REC_ALLOC:
		p = lean_proc(b, r->pid);
		mt_ptrmap_xput(&p->live, r->ptr, 1);
		return 1;
	case MTB_REC_REALLOC:
		p = lean_proc(b, r->pid);
		mt_ptrmap_take(&p->live, r->old_ptr, &v);
		mt_ptrmap_xput(&p->live, r->ptr, 1);
		return 1;
	case MTB_REC_FREE:
		p = lean_proc(b, r->pid);
		return mt_ptrmap_take(&p->live, r->ptr, &v) || !(r->flags & MTB_RF_INTERNAL);
	default:
		return 1;
	}
}

void mtb_lean_forget(struct mt_bpf *b, uint32_t pid)
{
	for (size_t i = 0; i < b->nlean; i++)
		if (b->lean[i].pid == pid) {
			mt_ptrmap_destroy(&b->lean[i].live);
			b->lean[i] = b->lean[--b->nlean];
			b->lean_last = 0;
			return;
		}
}

void mtb_lean_free(struct mt_bpf *b)
{
	for (size_t i = 0; i < b->nlean; i++)
		mt_ptrmap_destroy(&b->lean[i].live);
	free(b->lean);
	b->lean = NULL;
	b->nlean = b->caplean = 0;
}
