/*
 * reader.c - reading the chunked recording file (format.h): chunks are
 * checked (length, CRC) and decompressed one at a time, a piece of the
 * compressed bytes after another into the chunk's one buffer; damage at the
 * end of the file is truncation, damage with data after it is corruption.
 */
#include "format.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The compressed bytes of a chunk are read this much at a time. */
#define PIECE (64u << 10)

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---- reader ---- */

int mt_file_open(struct mt_file_reader *r, const char *path, char *err, size_t errlen)
{
	memset(r, 0, sizeof *r);
	r->path = path;
	/* a FIFO would block the open until a writer comes, and a pipe cannot
	 * be read again, as a recording is (filters read it more than once) */
	struct stat pre;
	if (stat(path, &pre) == 0 && (S_ISFIFO(pre.st_mode) || S_ISSOCK(pre.st_mode))) {
		snprintf(err, errlen, "%s is a %s, not a recording file (save it to a file first)",
			 path, S_ISFIFO(pre.st_mode) ? "pipe" : "socket");
		return -1;
	}
	r->f = fopen(path, "rb");
	if (!r->f) {
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(fileno(r->f), &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s is a directory, not a recording", path);
		goto fail;
	}
	r->size = (uint64_t)st.st_size;
	r->sized = S_ISREG(st.st_mode);
	uint8_t h[MT_FILE_HEADER_SIZE];
	size_t n = fread(h, 1, sizeof h, r->f);
	if (n == 0) {
		snprintf(err, errlen, "%s is empty, not a recording", path);
		goto fail;
	}
	if (n < 8 || memcmp(h, MT_FILE_MAGIC, 8) != 0) {
		snprintf(err, errlen, "%s is not a memtrace recording", path);
		goto fail;
	}
	if (n < sizeof h) {
		snprintf(err, errlen, "%s is truncated: its header is incomplete", path);
		goto fail;
	}
	if (h[8] != MT_FILE_VERSION || h[9] != 0) {
		snprintf(err, errlen, "%s has format version %u; this memtrace reads version %u",
			 path, h[8] | h[9] << 8, MT_FILE_VERSION);
		goto fail;
	}
	r->offset = h[10] | (uint64_t)h[11] << 8;
	if (r->offset < MT_FILE_HEADER_SIZE || fseeko(r->f, (off_t)r->offset, SEEK_SET)) {
		snprintf(err, errlen, "%s has a damaged header", path);
		goto fail;
	}
	if (inflateInit(&r->zs) != Z_OK) {
		snprintf(err, errlen, "zlib initialisation failed");
		goto fail;
	}
	return 0;
fail:
	fclose(r->f);
	r->f = NULL;
	return -1;
}

static int grow(uint8_t **buf, size_t *cap, size_t need)
{
	if (*cap >= need)
		return 0;
	uint8_t *p = realloc(*buf, need);
	if (!p)
		return -1;
	*buf = p;
	*cap = need;
	return 0;
}

/* A damaged chunk that reaches the end of the file is what a crash of the
 * writer leaves: the file is truncated.  Damage with data after it is not. */
static int damaged(struct mt_file_reader *r, const char *why, uint64_t chunk_end)
{
	if (chunk_end < r->size)
		r->corrupt = 1;
	r->truncated = 1;
	snprintf(r->why, sizeof r->why, "%s at offset %llu", why, (unsigned long long)r->offset);
	return 0;
}

int mt_file_next(struct mt_file_reader *r, uint32_t *stream, const uint8_t **data, size_t *len)
{
	uint8_t h[MT_CHUNK_HEADER_SIZE];
	if (!r->f || r->truncated || (r->limit && r->offset >= r->limit))
		return 0;
	size_t n = fread(h, 1, sizeof h, r->f);
	if (n == 0)
		return 0;
	if (n < sizeof h)
		return damaged(r, "incomplete chunk header", r->size);
	if (get32(h) != MT_CHUNK_MAGIC)
		return damaged(r, "bad chunk magic", r->offset + sizeof h);
	uint32_t rawlen = get32(h + 8), clen = get32(h + 12), crc = get32(h + 16);
	uint32_t flags = get32(h + 20);
	uint64_t end = r->offset + MT_CHUNK_HEADER_SIZE + clen;
	if (rawlen > MT_CHUNK_MAX_RAW || clen > mt_chunk_bound(rawlen) ||
	    (flags != 0 && flags != MT_CHUNK_FLAG_ZLIB && flags != MT_CHUNK_FLAG_ZSTD))
		return damaged(r, "implausible chunk header", r->offset + sizeof h);
	/* Memory follows the file: no buffer for more than the file holds (or
	 * holds by now, if it is still being written). */
	struct stat st;
	if (r->sized && end > r->size && fstat(fileno(r->f), &st) == 0)
		r->size = (uint64_t)st.st_size;
	if (r->sized && end > r->size)
		return damaged(r, "incomplete chunk", end);
	if (grow(&r->raw, &r->raw_cap, rawlen + 1) || grow(&r->comp, &r->comp_cap, PIECE) ||
	    ((flags & MT_CHUNK_FLAG_ZSTD) && !r->zd && !(r->zd = mt_zstd_stream_new())))
		return damaged(r, "out of memory for a chunk", end);
	/* The compressed bytes a piece at a time, checked and decompressed as
	 * they come: the checksum is known right only at the end, and nothing
	 * of the chunk is handed on before. */
	if (flags & MT_CHUNK_FLAG_ZLIB) {
		inflateReset(&r->zs);
		r->zs.next_out = r->raw;
		r->zs.avail_out = rawlen;
	} else if (flags & MT_CHUNK_FLAG_ZSTD) {
		mt_zstd_stream_begin(r->zd);
	}
	uint32_t sum = 0;
	size_t pos = 0;
	int state = 0; /* 1: the data is complete, -1: it does not decompress */
	for (uint32_t left = clen; left;) {
		uint32_t n = left < PIECE ? left : PIECE;
		if (fread(r->comp, 1, n, r->f) != n)
			return damaged(r, "incomplete chunk", end);
		left -= n;
		sum = (uint32_t)crc32(sum, r->comp, n);
		if (state < 0)
			continue;
		if (flags & MT_CHUNK_FLAG_ZLIB) {
			if (state)
				continue; /* (what follows the stream's end is not read) */
			r->zs.next_in = r->comp;
			r->zs.avail_in = n;
			int zr = inflate(&r->zs, Z_NO_FLUSH);
			if (zr == Z_STREAM_END)
				state = r->zs.avail_out == 0 ? 1 : -1;
			else if (zr != Z_OK)
				state = -1;
		} else if (flags & MT_CHUNK_FLAG_ZSTD) {
			state = mt_zstd_stream_piece(r->zd, r->raw, rawlen, &pos, r->comp, n);
		} else if (clen == rawlen) {
			memcpy(r->raw + pos, r->comp, n);
			pos += n;
		}
	}
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
	/* (a fuzzer's mutations must reach the decoder, not stop here) */
	if (sum != crc)
		return damaged(r, "chunk checksum mismatch", end);
#else
	(void)crc;
	(void)sum;
#endif
	if (!flags && clen != rawlen)
		return damaged(r, "stored chunk of the wrong size", end);
	if (flags && state != 1)
		return damaged(r, "chunk does not decompress", end);
	*data = r->raw;
	r->chunk = r->offset;
	r->offset += MT_CHUNK_HEADER_SIZE + clen;
	*stream = get32(h + 4);
	*len = rawlen;
	return 1;
}

int mt_file_seek(struct mt_file_reader *r, uint64_t offset)
{
	if (!r->f || fseeko(r->f, (off_t)offset, SEEK_SET) != 0)
		return -1;
	r->offset = offset;
	r->truncated = r->corrupt = 0;
	return 0;
}

void mt_file_close(struct mt_file_reader *r)
{
	if (r->f) {
		fclose(r->f);
		inflateEnd(&r->zs);
	}
	if (r->zd)
		mt_zstd_stream_free(r->zd);
	r->zd = NULL;
	free(r->raw);
	free(r->comp);
	r->f = NULL;
	r->raw = r->comp = NULL;
}
