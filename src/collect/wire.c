/*
 * wire.c - what both ends of live streaming share (wire.h): whole sends
 * and receives with a time limit, lines, and where a recording file's
 * whole chunks end.
 */
#include "wire.h"
#include "format/format.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

int mt_wire_send(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

int mt_wire_recv(int fd, void *p, size_t n, int ms)
{
	char *c = p;
	while (n) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		if (poll(&pf, 1, ms) <= 0)
			return -1;
		ssize_t k = recv(fd, c, n, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

int mt_wire_line(int fd, char *line, size_t len, int ms)
{
	for (size_t n = 0; n + 1 < len; n++) {
		if (mt_wire_recv(fd, line + n, 1, ms) < 0)
			return -1;
		if (line[n] == '\n') {
			line[n] = '\0';
			return 0;
		}
	}
	return -1;
}

uint32_t mt_wire_chunk_len(const uint8_t *h)
{
	return (uint32_t)h[12] | (uint32_t)h[13] << 8 | (uint32_t)h[14] << 16 |
	       (uint32_t)h[15] << 24;
}

uint64_t mt_wire_whole_chunks(int fd, uint64_t at)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return at;
	uint64_t size = (uint64_t)st.st_size;
	if (at < MT_FILE_HEADER_SIZE) {
		if (size < MT_FILE_HEADER_SIZE)
			return at;
		at = MT_FILE_HEADER_SIZE;
	}
	uint8_t h[MT_CHUNK_HEADER_SIZE];
	while (at + sizeof h <= size && pread(fd, h, sizeof h, (off_t)at) == (ssize_t)sizeof h &&
	       at + sizeof h + mt_wire_chunk_len(h) <= size)
		at += sizeof h + mt_wire_chunk_len(h);
	return at;
}
