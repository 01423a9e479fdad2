/*
 * binaries.c - MEMTRACE_WRITE_BINARIES_TO_OUTPUT: at exit, the standalone
 * shim appends to its recording the files of every module the process
 * mapped, as `memtrace record --embed-binaries` does (collect/embed.c), in
 * the same form: OBJECT records of at most 1 MiB of a file each, in chunks
 * of their own stream (MT_STREAM_OBJECTS), so that reports, exports and the
 * server symbolize from them on a machine without these files.
 *
 * embed.c cannot run here: it reads the recording back, and uses libelf,
 * zstd and the heap.  This file takes the modules from modules.c's list
 * instead (every one emitted, dlclose'd ones too), checks each file's
 * build-id against the one recorded by reading its program headers with
 * pread, maps the file and compresses it into the recording with the
 * shim's own deflate (channel.c), in buffers of its own mapping.  A file
 * that is gone or changed is left out (said at MEMTRACE_LOG=warn): a wrong
 * binary would name wrong functions.  A module's separate debug file, when
 * the system has one under /usr/lib/debug/.build-id, goes in too.
 */
#include "shim.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define PIECE (1u << 20)     /* file bytes per OBJECT record */
#define CHUNK_RAW (4u << 20) /* record bytes per chunk (channel.c takes 8 MiB) */
#define MAX_BUILD_ID 64
#define MAX_DONE 4096

struct writer {
	uint8_t *raw;
	size_t len;
	int failed;
	unsigned embedded;
	uint64_t bytes;
	uint64_t done[MAX_DONE]; /* hashes of the path+build-id written */
	unsigned ndone;
};

static void flush(struct writer *w)
{
	if (!w->len || w->failed)
		return;
	mt_channel_lock();
	if (mt_channel_append(MT_STREAM_OBJECTS, w->raw, w->len) != 0)
		w->failed = errno ? errno : EIO;
	mt_channel_unlock();
	w->len = 0;
}

/* The GNU build-id in the PT_NOTE segments of the ELF file open on FD,
 * into ID: its length, or 0. */
static size_t file_build_id(int fd, uint8_t id[MAX_BUILD_ID])
{
	ElfW(Ehdr) eh;
	if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_phentsize != sizeof(ElfW(Phdr)) ||
	    eh.e_phnum > 256)
		return 0;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		ElfW(Phdr) ph;
		if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)) !=
		    (ssize_t)sizeof ph)
			return 0;
		if (ph.p_type != PT_NOTE || ph.p_filesz > 65536)
			continue;
		uint8_t notes[4096];
		size_t n = ph.p_filesz < sizeof notes ? (size_t)ph.p_filesz : sizeof notes;
		if (pread(fd, notes, n, (off_t)ph.p_offset) != (ssize_t)n)
			continue;
		for (size_t at = 0; at + sizeof(ElfW(Nhdr)) <= n;) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)(notes + at);
			size_t namesz = (nh->n_namesz + 3) & ~3u, descsz = (nh->n_descsz + 3) & ~3u;
			size_t name = at + sizeof *nh, desc = name + namesz;
			if (desc + descsz > n)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    memcmp(notes + name, "GNU", 4) == 0 && nh->n_descsz > 0 &&
			    nh->n_descsz <= MAX_BUILD_ID) {
				memcpy(id, notes + desc, nh->n_descsz);
				return nh->n_descsz;
			}
			at = desc + descsz;
		}
	}
	return 0;
}

/* Appends the file open on FD (SIZE bytes) as KIND: 0, or -1. */
static int put_object(struct writer *w, int fd, uint64_t size, enum mt_object_kind kind,
		      const char *path, size_t plen, const uint8_t *id, size_t idlen)
{
	const uint8_t *file = NULL;
	if (size) {
		void *m = mt_sys_mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED)
			return -1;
		file = m;
	}
	uint64_t off = 0;
	do {
		size_t n = size - off < PIECE ? (size_t)(size - off) : PIECE;
		if (w->len + 64 + idlen + plen + n > CHUNK_RAW)
			flush(w);
		uint8_t *p = mt_enc_object_head(w->raw + w->len, kind, size, off, id, idlen, path,
						plen, n);
		memcpy(p, file + off, n);
		w->len = (size_t)(p + n - w->raw);
		off += n;
	} while (off < size);
	if (file)
		mt_sys_munmap((void *)file, (size_t)size);
	return 0;
}

/* A regular file at PATH, open, with its size; -1 otherwise. */
static int open_regular(const char *path, uint64_t *size)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	*size = (uint64_t)st.st_size;
	return fd;
}

static uint64_t hash(const char *p, size_t plen, const uint8_t *id, size_t idlen)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < plen; i++)
		h = (h ^ (uint8_t)p[i]) * 1099511628211ull;
	for (size_t i = 0; i < idlen; i++)
		h = (h ^ id[i]) * 1099511628211ull;
	return h;
}

static void embed_one(const char *p, size_t plen, const uint8_t *id, size_t idlen, void *ctx)
{
	struct writer *w = ctx;
	char path[4096];
	if (w->failed || !plen || p[0] != '/' || plen >= sizeof path ||
	    (plen > 7 && !memcmp(p, "/memfd:", 7)) || idlen > MAX_BUILD_ID)
		return; /* the vDSO, memfds: no file to take */
	uint64_t h = hash(p, plen, id, idlen);
	for (unsigned i = 0; i < w->ndone; i++)
		if (w->done[i] == h)
			return;
	if (w->ndone < MAX_DONE)
		w->done[w->ndone++] = h;
	memcpy(path, p, plen);
	path[plen] = '\0';
	uint64_t size;
	int fd = open_regular(path, &size);
	if (fd < 0) {
		mt_log(2, "WRITE_BINARIES_TO_OUTPUT: %s left out: %s", path,
		       errno == EINVAL ? "not a regular file" : strerror(errno));
		return;
	}
	uint8_t now[MAX_BUILD_ID];
	size_t nowlen = file_build_id(fd, now);
	if (idlen && (nowlen != idlen || memcmp(now, id, idlen) != 0)) {
		mt_log(2, "WRITE_BINARIES_TO_OUTPUT: %s left out: it changed since it was mapped",
		       path);
		close(fd);
		return;
	}
	int r = put_object(w, fd, size, MT_OBJECT_ELF, path, plen, id, idlen);
	close(fd);
	if (r < 0) {
		mt_log(2, "WRITE_BINARIES_TO_OUTPUT: %s left out: %s", path, strerror(errno));
		return;
	}
	w->embedded++;
	w->bytes += size;
	if (!idlen)
		return;
	char dbg[64 + 2 * MAX_BUILD_ID];
	int k = snprintf(dbg, sizeof dbg, "/usr/lib/debug/.build-id/%02x/", id[0]);
	for (size_t i = 1; i < idlen; i++)
		k += snprintf(dbg + k, sizeof dbg - (size_t)k, "%02x", id[i]);
	snprintf(dbg + k, sizeof dbg - (size_t)k, ".debug");
	if ((fd = open_regular(dbg, &size)) >= 0) {
		if (put_object(w, fd, size, MT_OBJECT_DEBUG, path, plen, id, idlen) == 0)
			w->bytes += size;
		close(fd);
	}
}

void mt_binaries_write(void)
{
	/* (a fork child that is not traced has no recording of its own) */
	if (!mt_channel_output()[0])
		return;
	struct writer *w = mt_map(sizeof *w);
	if (!w)
		return;
	w->raw = mt_map(CHUNK_RAW);
	if (w->raw) {
		mt_modules_each(embed_one, w);
		flush(w);
		if (w->failed)
			mt_log(1, "WRITE_BINARIES_TO_OUTPUT: %s: %s", mt_channel_output(),
			       strerror(w->failed));
		else
			mt_log(3, "embedded %u binaries (%.1f MB before compression)", w->embedded,
			       (double)w->bytes / 1e6);
		mt_sys_munmap(w->raw, CHUNK_RAW);
	}
	mt_sys_munmap(w, sizeof *w);
}
