/*
 * wire.h - the live-streaming protocol between `memtrace record --listen`
 * (or the standalone shim under MEMTRACE_ENABLE_SERVER) and `memtrace
 * gather` (memtrace-gather(1), STREAMING).  Both serving ends run the same
 * code from here, so it lives below them both: it uses no stdio and
 * allocates nothing but in getifaddrs(3), as the shim, which runs inside
 * the traced program, needs (its thread passes that through unrecorded).
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
 * then frames: 'D' u32le length, that many bytes of the file; 'K' alone,
 * a keepalive while nothing new is written; 'E' u64le the file's final
 * size, after which the gatherer answers "DONE\n" once its copy is on
 * disk.
 *
 * Who may gather: with a token, whoever gives it; without one (on
 * loopback only), the recorder's own user or root, told by the owner of
 * the gatherer's socket (base/net.h: mt_net_peer_uid), since every local
 * user can connect to loopback.  A gatherer has MT_WIRE_HELLO_MS from its
 * connection for its whole hello, and up to MT_WIRE_PENDING of them are
 * heard at once (struct mt_wire_pending), the oldest giving way to a new
 * one: half-open connections, or a hello sent a byte at a time, cannot
 * keep the real gatherer out.
 *
 * Discovery (record --broadcast): once a second the recorder sends a UDP
 * datagram to the broadcast address of each interface it listens on:
 *     MTANNOUNCE 1 PORT SESSION PID NAME
 * and `memtrace gather` with no address gathers from every sender it hears.
 * Anyone can send such a datagram, so gather never sends a token to a
 * sender it heard, only to an address it was given (cmd_gather.c).
 */
#ifndef MEMTRACE_WIRE_H
#define MEMTRACE_WIRE_H

#define MT_WIRE_HELLO "MTGATHER 1"
#define MT_WIRE_ANNOUNCE "MTANNOUNCE 1"
#define MT_WIRE_DEFAULT_PORT "8100"  /* bytehound's BASE_SERVER_PORT */
#define MT_WIRE_ANNOUNCE_PORT 8099   /* UDP, record --broadcast */
#define MT_WIRE_TOKEN_LEN 32	     /* hex digits of a generated token */
#define MT_WIRE_TOKEN_MAX 128	     /* characters of a given one */
#define MT_WIRE_FRAME_MAX (1u << 20) /* bytes of file per D frame */
#define MT_WIRE_LINE_MAX 512
#define MT_WIRE_KEEPALIVE_MS 5000 /* a 'K' frame when nothing new came for this long */
#define MT_WIRE_HELLO_MS 5000	  /* a gatherer's time for its hello, from its connection */
#define MT_WIRE_PENDING 16	  /* gatherers heard at once before their hello is in */

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

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

/* DIGITS random hex digits (and a NUL) into OUT: tokens and sessions. */
void mt_wire_random_hex(char *out, size_t digits);
/* A name fit for an announcement and a gatherer's file name: the last
 * component of IN (NULL: "recording"), other characters than [A-Za-z0-9._-]
 * made '_'. */
void mt_wire_clean_name(const char *in, char *out, size_t len);

/* The serving side: one recording, read back from its file as it is
 * written, to one gatherer at a time. */
struct mt_wire_source {
	int listen_fd;	   /* a gatherer coming meanwhile is refused at once */
	int file;	   /* the recording, open for reading */
	const char *token; /* "" when none is asked for (on loopback) */
	unsigned owner;	   /* then only this user's gatherers, and root's, are served */
	const char *session, *name;
	uint8_t *buf; /* MT_WIRE_FRAME_MAX bytes */
	/* 0 while the recording grows, 1 once it is complete (the gatherer
	 * then gets the rest and the end), -1 to stop serving now */
	int (*state)(void *ctx);
	void *ctx;
};
enum mt_wire_served {
	MT_WIRE_LEFT = 0,	/* the gatherer left, or was refused for another reason */
	MT_WIRE_DELIVERED = 1,	/* it has the whole recording on disk */
	MT_WIRE_NO_TOKEN = -1,	/* refused: it gave no token */
	MT_WIRE_BAD_TOKEN = -2, /* refused: it gave a wrong one */
	MT_WIRE_NOT_OWNER = -3	/* refused: no token asked, and another user's */
};
/* Serves the gatherer connected on FD, which said HELLO (its first line),
 * until it has everything or leaves. */
enum mt_wire_served mt_wire_serve(const struct mt_wire_source *s, int fd, const char *hello);

/* The gatherers connected and not heard yet, waiting for their hello. */
struct mt_wire_pending {
	int fd[MT_WIRE_PENDING]; /* -1: a free slot */
	uint64_t since[MT_WIRE_PENDING];
	size_t len[MT_WIRE_PENDING];
	char line[MT_WIRE_PENDING][MT_WIRE_LINE_MAX];
	/* called with 1 before a descriptor is opened or closed here, and 0
	 * after (the shim: its fork handlers must know every descriptor of
	 * its server's); NULL: none */
	void (*guard)(int lock);
};
void mt_wire_pending_init(struct mt_wire_pending *p, void (*guard)(int lock));
/* Waits up to MS for a gatherer's whole hello: accepts on LISTEN_FD, reads
 * what the ones connected sent, ends those past their time.  Returns the
 * slot of one whose hello is in (line[SLOT], fd[SLOT], a blocking socket,
 * still held: mt_wire_pending_drop once served), or -1. */
int mt_wire_pending_next(struct mt_wire_pending *p, int listen_fd, int ms);
/* Closes the connection in SLOT. */
void mt_wire_pending_drop(struct mt_wire_pending *p, int slot);
/* Closes them all. */
void mt_wire_pending_close(struct mt_wire_pending *p);

/* "MTANNOUNCE 1 PORT SESSION PID NAME" into BUF. */
void mt_wire_announcement(char *buf, size_t len, unsigned port, const char *session, int pid,
			  const char *name);
/* Sends MSG on the UDP socket FD (SO_BROADCAST set) to the broadcast
 * address of each interface BOUND lies on (every one for a wildcard). */
void mt_wire_announce(int fd, const struct sockaddr_storage *bound, const char *msg);

#endif
