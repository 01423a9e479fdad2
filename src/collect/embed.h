/*
 * embed.h - appending the binaries a recording's processes mapped to the
 * recording (record --embed-binaries, attach --embed-binaries; see embed.c).
 * The writer (writer.h) owns one when asked, notes every MODULE record its
 * streams carry, and embeds before it closes the file.
 */
#ifndef MEMTRACE_EMBED_H
#define MEMTRACE_EMBED_H

#include <stddef.h>
#include <stdint.h>

struct mt_embed;
struct mt_event;

/* Files held open until the end: a recording of a build maps thousands, and
 * the recorder's descriptors are its connections too.  Past these, a file's
 * device and inode are kept, and the file at its path must be that one. */
#define MT_EMBED_MAX_HELD 256

/* QUIET: files left out are counted, and named only when one was refused
 * for not being the file that was mapped. */
struct mt_embed *mt_embed_new(int quiet);
/* Process PID (as the recorder sees it; 0: unknown) declared the MODULE
 * record EV: the file it maps there is opened now, through the process's
 * own mapping, while it is mapped. */
void mt_embed_note(struct mt_embed *e, uint32_t pid, const struct mt_event *ev);
/* Appends the files noted, and their separate debug files where the system
 * has them, to the complete recording open on FD (its end), as chunks of
 * MT_STREAM_OBJECTS.  PATH names it in messages.  Returns 0, or -1 with a
 * one-line reason in ERR (the recording is then as it was, or has whole
 * object chunks appended, which readers take as they are). */
int mt_embed_write(struct mt_embed *e, int fd, const char *path, char *err, size_t errlen);
void mt_embed_free(struct mt_embed *e);

#endif
