/*
 * wire.h - the live-streaming protocol between `memtrace record --listen`
 * and `memtrace gather` (memtrace-gather(1), STREAMING).
 *
 * What travels is the recording file itself, as the recorder writes it:
 * the file header, then whole chunks (format.h), so that the gatherer's
 * copy is at every moment a readable recording and, at the end, the same
 * bytes as the recorder's file.  Offsets are file offsets, so a gatherer
 * that reconnects asks for the rest from the size of what it has, and
 * nothing is lost: the recorder's file is the buffer.
 *
 * The gatherer opens with one line:
 *     MTGATHER 1 TOKEN SESSION OFFSET\n
 * (TOKEN and SESSION "-" when it has none; SESSION is what an earlier
 * connection to the same recording said), and the recorder answers
 *     OK SESSION NAME\n        or        ERR reason\n
 * then frames: 'D' u32le length, that many bytes of the file; 'E' u64le
 * the file's final size, after which the gatherer answers "DONE\n" once
 * its copy is on disk.
 *
 * Discovery (record --broadcast): once a second the recorder sends a UDP
 * datagram to the broadcast address of each interface it listens on:
 *     MTANNOUNCE 1 PORT SESSION PID NAME
 * and `memtrace gather` with no address gathers from every sender it hears.
 */
#ifndef MEMTRACE_WIRE_H
#define MEMTRACE_WIRE_H

#define MT_WIRE_HELLO "MTGATHER 1"
#define MT_WIRE_ANNOUNCE "MTANNOUNCE 1"
#define MT_WIRE_DEFAULT_PORT "8100"  /* bytehound's BASE_SERVER_PORT */
#define MT_WIRE_ANNOUNCE_PORT 8099   /* UDP, record --broadcast */
#define MT_WIRE_TOKEN_LEN 32	     /* hex digits of a generated token */
#define MT_WIRE_FRAME_MAX (1u << 20) /* bytes of file per D frame */
#define MT_WIRE_LINE_MAX 512

#include <stddef.h>
#include <stdint.h>

/* Sends all N bytes (no SIGPIPE): 0, or -1. */
int mt_wire_send(int fd, const void *p, size_t n);
/* Receives exactly N bytes, waiting at most MS for each piece: 0, or -1. */
int mt_wire_recv(int fd, void *p, size_t n, int ms);
/* One line, its newline replaced by a NUL: 0, or -1. */
int mt_wire_line(int fd, char *line, size_t len, int ms);
/* The compressed length in the chunk header H. */
uint32_t mt_wire_chunk_len(const uint8_t *h);
/* The end of the whole chunks of the recording open on FD from the chunk
 * boundary AT on, as far as the file is written now (AT itself until its
 * file header is). */
uint64_t mt_wire_whole_chunks(int fd, uint64_t at);

#endif
