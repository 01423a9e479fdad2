/*
 * zstd.c - the zstd side of the chunk format (format.h), apart from
 * format.c because only the memtrace binary links libzstd: the shim, which
 * shares format.c, writes zlib chunks and never reads.
 */
#include "format.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>
/* ZSTD_d_stableOutBuffer: experimental in name, in every zstd since 1.4.4
 * and read by ZSTD_DCtx_setParameter of the shared library */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

int mt_chunk_write_zstd(int fd, void *cctx, uint32_t stream, const void *raw, size_t len,
			void *scratch, size_t scratch_len)
{
	uint8_t *out = scratch;
	size_t clen = ZSTD_compress2(cctx, out + MT_CHUNK_HEADER_SIZE,
				     scratch_len - MT_CHUNK_HEADER_SIZE, raw, len);
	if (ZSTD_isError(clen)) {
		errno = ENOBUFS;
		return -1;
	}
	return mt_chunk_put(fd, out, stream, len, (uint32_t)clen, MT_CHUNK_FLAG_ZSTD);
}

int mt_zstd_decompress(void *dst, size_t dstlen, const void *src, size_t srclen)
{
	size_t n = ZSTD_decompress(dst, dstlen, src, srclen);
	return ZSTD_isError(n) || n != dstlen ? -1 : 0;
}

void *mt_zstd_stream_new(void)
{
	ZSTD_DCtx *z = ZSTD_createDCtx();
	/* output straight into the caller's buffer, which stays the same for
	 * the whole chunk: no window buffer of the chunk's size beside it */
	if (z && ZSTD_isError(ZSTD_DCtx_setParameter(z, ZSTD_d_stableOutBuffer, 1))) {
		ZSTD_freeDCtx(z);
		z = NULL;
	}
	return z;
}

void mt_zstd_stream_free(void *z)
{
	ZSTD_freeDCtx(z);
}

void mt_zstd_stream_begin(void *z)
{
	ZSTD_DCtx_reset(z, ZSTD_reset_session_only);
}

int mt_zstd_stream_piece(void *z, void *dst, size_t dstlen, size_t *pos, const void *src,
			 size_t srclen)
{
	ZSTD_outBuffer out = { dst, dstlen, *pos };
	ZSTD_inBuffer in = { src, srclen, 0 };
	size_t r = 1;
	while (in.pos < in.size) {
		size_t was_in = in.pos, was_out = out.pos;
		r = ZSTD_decompressStream(z, &out, &in);
		if (ZSTD_isError(r) || (in.pos == was_in && out.pos == was_out))
			return -1;
		/* a frame ended: another may follow (ZSTD_decompress reads
		 * them all too) */
	}
	*pos = out.pos;
	return r == 0 && out.pos == dstlen ? 1 : 0;
}
