/*
 * symbols.h - turning recorded addresses into functions, files and lines.
 *
 * Symbolization happens at read time, from the modules (path, load bias,
 * build-id) the recording captured while the process ran.  A module whose
 * file changed since (build-id mismatch) or is gone still yields frames with
 * module and address, and no function.  Inlined functions come out as frames
 * of their own, innermost first; C++ and Rust names are demangled.
 */
#ifndef MEMTRACE_SYMBOLS_H
#define MEMTRACE_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

struct mt_frame {
	const char *function; /* demangled; NULL when unknown */
	const char *file;     /* source file; NULL when unknown */
	int line;	      /* 0 when unknown */
	const char *module;   /* path of the module; NULL when the address is in none */
	uint64_t address;     /* the address looked up (a call site: return address - 1) */
	uint64_t offset;      /* ADDRESS less the module's load bias: its link-time address,
			       * the same in every run, what `addr2line -e MODULE` takes */
	int inlined;	      /* 1 when this frame was inlined into the next one */
};

struct mt_symbolizer;

struct mt_symbolizer *mt_sym_new(void);
void mt_sym_free(struct mt_symbolizer *s);

/* Binaries embedded in the recording (objects.h), tried before the files
 * on this machine; set before the modules are declared. */
struct mt_objects;
void mt_sym_set_objects(struct mt_symbolizer *s, struct mt_objects *objects);

/* Declares a module mapped at [start, end) with load bias BIAS (the
 * difference between run-time and link-time addresses). */
void mt_sym_add_module(struct mt_symbolizer *s, const char *path, uint64_t bias, uint64_t start,
		       uint64_t end, const uint8_t *build_id, size_t build_id_len);

/* Forgets every module (the process's module list was re-sent). */
void mt_sym_reset_modules(struct mt_symbolizer *s);

/* Resolves ADDRESS (already a call-site address) into at most MAX frames,
 * innermost inlined frame first, the real function last.  Returns the number
 * of frames (at least 1).  Strings live as long as the symbolizer; results
 * are cached per address. */
int mt_sym_resolve(struct mt_symbolizer *s, uint64_t address, struct mt_frame *out, int max);

/* The name of frame F as every output writes it: its function; else
 * "MODULE+0xOFFSET" (the module's file name and F's offset: stable across
 * runs, fit for addr2line); else "0xADDRESS"; else "[unknown]".  Into BUF
 * when it is not the function. */
const char *mt_frame_label(const struct mt_frame *f, char *buf, size_t len);

/* One line per module whose file could not be used (missing, build-id
 * mismatch), for reports to show once; NULL-terminated, owned by S. */
const char *const *mt_sym_warnings(struct mt_symbolizer *s);

#endif
