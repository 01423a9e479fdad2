/*
 * objects.h - the binaries embedded in a recording (record
 * --embed-binaries), found by build-id or path and handed to the
 * symbolizer as file descriptors.
 *
 * Loading a recording only notes where each object's pieces are (chunk
 * offsets); an object's bytes are read, into an anonymous memory file, the
 * first time a symbolizer asks for it and its own file is missing or
 * differs, so a recording full of binaries costs nothing to report when
 * the machine has them.
 */
#ifndef MEMTRACE_OBJECTS_H
#define MEMTRACE_OBJECTS_H

#include <stddef.h>
#include <stdint.h>

#include "format/codec.h"

struct mt_objects;

/* An empty set for the recording at PATH (copied). */
struct mt_objects *mt_objects_new(const char *path);
void mt_objects_free(struct mt_objects *o);
/* Notes the OBJECT records of the chunk at file offset CHUNK (DATA, LEN:
 * its decompressed records).  Returns 0, or -1 on a malformed record. */
int mt_objects_note(struct mt_objects *o, uint64_t chunk, const uint8_t *data, size_t len);
/* How many objects were embedded (of kind MT_OBJECT_ELF). */
size_t mt_objects_count(const struct mt_objects *o);

/* A file descriptor (read-only, seekable, the caller's to close) on the
 * embedded object of KIND with build-id ID (when LEN > 0) or else recorded
 * at PATH; -1 when there is none or it cannot be read. */
int mt_objects_open(struct mt_objects *o, enum mt_object_kind kind, const uint8_t *id, size_t len,
		    const char *path);

#endif
