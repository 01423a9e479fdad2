/*
 * format_zstd.c - the zstd side of the chunk format (format.h), apart from
 * format.c because only the memtrace binary links libzstd: the shim, which
 * shares format.c, writes zlib chunks and never reads.
 */
#include "format.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>
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
