/*
 * objwrite.c - the files of a process's modules as OBJECT records
 * (objwrite.h), for record --embed-binaries and the standalone shim alike.
 *
 * It runs inside the traced program too, so it reads with pread into the
 * caller's buffer (no mapping of the file: one that shrinks while it is
 * read is a short read, not a SIGBUS in someone else's program), and finds
 * the build-id in the program headers rather than through libelf, which
 * allocates.  The program headers are what the loader and the recorders
 * read the build-id of a mapped module from, so the two agree.
 */
#include "objwrite.h"
#include "format/codec.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int mt_obj_is_file(const char *path, size_t len)
{
	return len > 0 && path[0] == '/' && !(len > 7 && !memcmp(path, "/memfd:", 7));
}

int mt_obj_open(const char *path, uint64_t *size)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	*size = (uint64_t)st.st_size;
	return fd;
}

/* Exactly N bytes at OFF of FD into P: 0, or -1. */
static int read_at(int fd, void *p, size_t n, uint64_t off)
{
	return pread(fd, p, n, (off_t)off) == (ssize_t)n ? 0 : -1;
}

/* The build-id among the notes of the segment at OFF (SIZE bytes, notes
 * aligned to ALIGN), into ID: its length, or 0. */
static size_t note_build_id(int fd, uint64_t off, uint64_t size, uint64_t align,
			    uint8_t id[MT_OBJ_BUILD_ID_MAX])
{
	uint64_t a = align == 8 ? 8 : 4;
	for (uint64_t at = 0; at + sizeof(Elf64_Nhdr) <= size;) {
		Elf64_Nhdr nh; /* (the same as Elf32_Nhdr) */
		if (read_at(fd, &nh, sizeof nh, off + at) < 0)
			return 0;
		uint64_t desc = (at + sizeof nh + nh.n_namesz + a - 1) & ~(a - 1);
		uint64_t next = (desc + nh.n_descsz + a - 1) & ~(a - 1);
		if (next > size)
			return 0;
		char name[4];
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && nh.n_descsz > 0 &&
		    nh.n_descsz <= MT_OBJ_BUILD_ID_MAX &&
		    read_at(fd, name, 4, off + at + sizeof nh) == 0 && !memcmp(name, "GNU", 4) &&
		    read_at(fd, id, nh.n_descsz, off + desc) == 0)
			return nh.n_descsz;
		at = next;
	}
	return 0;
}

size_t mt_obj_build_id(int fd, uint8_t id[MT_OBJ_BUILD_ID_MAX])
{
	union {
		unsigned char ident[EI_NIDENT];
		Elf32_Ehdr e32;
		Elf64_Ehdr e64;
	} eh;
	memset(&eh, 0, sizeof eh);
	ssize_t got = pread(fd, &eh, sizeof eh, 0);
	if (got < (ssize_t)EI_NIDENT || memcmp(eh.ident, ELFMAG, SELFMAG) != 0)
		return 0;
	const int native = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
	if (eh.ident[EI_DATA] != native)
		return 0;
	int is64 = eh.ident[EI_CLASS] == ELFCLASS64;
	if (is64 ? got < (ssize_t)sizeof eh.e64 :
		   eh.ident[EI_CLASS] != ELFCLASS32 || got < (ssize_t)sizeof eh.e32)
		return 0;
	uint64_t phoff = is64 ? eh.e64.e_phoff : eh.e32.e_phoff;
	unsigned phnum = is64 ? eh.e64.e_phnum : eh.e32.e_phnum;
	size_t phent = is64 ? eh.e64.e_phentsize : eh.e32.e_phentsize;
	if (phent != (is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr)) || phnum > 256)
		return 0;
	for (unsigned i = 0; i < phnum; i++) {
		union {
			Elf32_Phdr p32;
			Elf64_Phdr p64;
		} ph;
		if (read_at(fd, &ph, phent, phoff + (uint64_t)i * phent) < 0)
			return 0;
		uint32_t type = is64 ? ph.p64.p_type : ph.p32.p_type;
		if (type != PT_NOTE)
			continue;
		size_t n = is64 ? note_build_id(fd, ph.p64.p_offset, ph.p64.p_filesz,
						ph.p64.p_align, id) :
				  note_build_id(fd, ph.p32.p_offset, ph.p32.p_filesz,
						ph.p32.p_align, id);
		if (n)
			return n;
	}
	return 0;
}

void mt_obj_debug_path(const uint8_t *id, size_t len, char *out, size_t outlen)
{
	static const char dir[] = "/usr/lib/debug/.build-id/", ext[] = ".debug";
	static const char hex[] = "0123456789abcdef";
	char path[sizeof dir + 2 * MT_OBJ_BUILD_ID_MAX + 1 + sizeof ext];
	size_t k = sizeof dir - 1;
	memcpy(path, dir, k);
	for (size_t i = 0; i < len && i < MT_OBJ_BUILD_ID_MAX; i++) {
		path[k++] = hex[id[i] >> 4];
		path[k++] = hex[id[i] & 15];
		if (i == 0)
			path[k++] = '/';
	}
	memcpy(path + k, ext, sizeof ext);
	k += sizeof ext; /* with the NUL */
	if (!outlen)
		return;
	if (k > outlen)
		k = outlen;
	memcpy(out, path, k);
	out[k - 1] = '\0';
}

void mt_obj_flush(struct mt_obj_out *w)
{
	if (w->len && !w->failed && w->write(w->ctx, w->raw, w->len) != 0)
		w->failed = errno ? errno : EIO;
	w->len = 0;
}

/* Appends the file open on FD (SIZE bytes) as KIND of the module PATH:
 * 0, or -1 with errno set when it could not be read. */
static int put(struct mt_obj_out *w, int fd, uint64_t size, enum mt_object_kind kind,
	       const char *path, size_t plen, const uint8_t *id, size_t idlen)
{
	uint64_t off = 0;
	do {
		size_t n = size - off < MT_OBJ_PIECE ? (size_t)(size - off) : MT_OBJ_PIECE;
		if (w->len + 64 + idlen + plen + n > w->cap)
			mt_obj_flush(w);
		uint8_t *p = mt_enc_object_head(w->raw + w->len, kind, size, off, id, idlen, path,
						plen, n);
		for (size_t got = 0; got < n;) {
			ssize_t k = pread(fd, p + got, n - got, (off_t)(off + got));
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0) {
				if (k == 0)
					errno = EIO; /* shrank while read */
				return -1;
			}
			got += (size_t)k;
		}
		w->len = (size_t)(p + n - w->raw);
		off += n;
	} while (off < size);
	return 0;
}

enum mt_obj_result mt_obj_embed_fd(struct mt_obj_out *w, int fd, const char *path,
				   const uint8_t *id, size_t idlen)
{
	static const uint8_t none[1];
	size_t plen = strlen(path);
	struct stat st;
	if (!idlen)
		id = none; /* (NULL is no argument for memcpy, even of 0 bytes) */
	if (idlen > MT_OBJ_BUILD_ID_MAX || plen >= 4096) {
		errno = ENAMETOOLONG;
		return MT_OBJ_NO_FILE;
	}
	if (fstat(fd, &st) != 0)
		return MT_OBJ_UNREADABLE;
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		return MT_OBJ_NO_FILE;
	}
	uint64_t size = (uint64_t)st.st_size;
	uint8_t now[MT_OBJ_BUILD_ID_MAX];
	size_t nowlen = mt_obj_build_id(fd, now);
	if (idlen && (nowlen != idlen || memcmp(now, id, idlen) != 0))
		return MT_OBJ_CHANGED;
	if (put(w, fd, size, MT_OBJECT_ELF, path, plen, id, idlen) < 0)
		return MT_OBJ_UNREADABLE;
	w->embedded++;
	w->bytes += size;
	if (idlen) {
		char dbg[64 + 2 * MT_OBJ_BUILD_ID_MAX];
		int dfd;
		mt_obj_debug_path(id, idlen, dbg, sizeof dbg);
		if ((dfd = mt_obj_open(dbg, &size)) >= 0) {
			if (put(w, dfd, size, MT_OBJECT_DEBUG, path, plen, id, idlen) == 0)
				w->bytes += size;
			close(dfd);
		}
	}
	return MT_OBJ_EMBEDDED;
}

enum mt_obj_result mt_obj_embed(struct mt_obj_out *w, const char *path, const uint8_t *id,
				size_t idlen)
{
	uint64_t size;
	if (strlen(path) >= 4096) {
		errno = ENAMETOOLONG;
		return MT_OBJ_NO_FILE;
	}
	int fd = mt_obj_open(path, &size);
	if (fd < 0)
		return MT_OBJ_NO_FILE;
	enum mt_obj_result r = mt_obj_embed_fd(w, fd, path, id, idlen);
	int err = errno;
	close(fd);
	errno = err;
	return r;
}

const char *mt_obj_why(enum mt_obj_result r, int err)
{
	switch (r) {
	case MT_OBJ_EMBEDDED:
		return "embedded";
	case MT_OBJ_CHANGED:
		return "it changed since it was mapped (build-id differs)";
	case MT_OBJ_NO_FILE:
		if (err == EINVAL)
			return "not a regular file";
		break;
	case MT_OBJ_UNREADABLE:
		break;
	}
	return strerror(err);
}
