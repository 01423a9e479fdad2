/*
 * images.h - which process images of a recording a reader shows.
 *
 * A program run through wrappers (env, a shell script, pyenv's shims) is
 * several images of one pid, each exec replacing the one before: the
 * recording holds each as a process of its own, and --pid cannot tell them
 * apart.  Reports lead with the recording's main image (mt_recording_main:
 * the last image of the recorded command, the program the wrappers led to)
 * and name the others; --image picks images by the number reports give
 * them (their place in the recording, 1 first) or by name.
 */
#ifndef MEMTRACE_IMAGES_H
#define MEMTRACE_IMAGES_H

#include <stddef.h>

#include "recording.h"

/* Does SEL name image P?  NULL names every image; digits alone are an
 * image number (p->image); anything else is a name: P's (mt_process_name),
 * its executable's path or file name, or its argv[0]. */
int mt_image_named(const char *sel, const struct mt_process *p);

/* Whether SEL is an image number (digits alone), as usage errors and
 * "no such image" messages word it. */
int mt_image_is_number(const char *sel);

/* The image a reader leads with among those of REC for which WANTS(CTX, P)
 * holds: the main one when it is among them, else the last to start (the
 * program a chain of execs led to).  NULL when none is wanted. */
const struct mt_process *mt_image_lead(const struct mt_recording *rec,
				       int (*wants)(const void *ctx, const struct mt_process *p),
				       const void *ctx);

#endif
