/*
 * rings.h - the shim's side of `memtrace record`: the socket every traced
 * process connects to, handing over the memfd of its event ring
 * (format/ring.h), and the loop that drains those rings into the recording
 * until the command has exited and every traced process has hung up.
 */
#ifndef MEMTRACE_RINGS_H
#define MEMTRACE_RINGS_H

#include <stddef.h>
#include <sys/types.h>

#include "fallback.h"
#include "writer.h"

struct mt_rings;

/* Listens on a fresh socket in the abstract namespace; its name, as
 * MEMTRACE_CONNECT gives it to the shim ("@memtrace-...#TOKEN": the name,
 * then a secret that admits the command's processes), is copied to NAME.
 * Returns NULL with a one-line reason in ERR. */
struct mt_rings *mt_rings_listen(char *name, size_t namelen, char *err, size_t errlen);
/* Records the connected processes into R until PID (the command, a child
 * of ours) has exited and every traced process has hung up.  Only PID and
 * its descendants are taken (or, once they are gone, processes holding the
 * token and running as a uid seen among them); others are refused with a
 * warning.  With FB (not NULL), PID's shim may ask for the BPF backend to
 * trace an image it cannot follow (fallback.h).  Returns PID's wait
 * status. */
int mt_rings_run(struct mt_rings *s, struct mt_writer *r, pid_t pid, struct mt_fallback *fb);
/* Closes the socket (NULL is fine). */
void mt_rings_close(struct mt_rings *s);

#endif
