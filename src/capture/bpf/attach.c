/*
 * attach.c - which processes are traced and which objects get probes:
 * /proc/PID/maps, the allocator objects found there (or, before an exec,
 * through the program's DT_NEEDED, searched as ld.so does), and the uprobe
 * links.  Reads ELF objects through elf.c and drops or resets what a
 * process left in the BPF maps through maps.c; memtrace.c calls it, it
 * calls nothing back.
 *
 * An object is known by the device and inode /proc/PID/maps gives, so the
 * same libc mapped by many processes, or at several paths (containers), is
 * analysed once.  It is opened with mt_proc_open_object (procmaps.h):
 * through /proc/PID/map_files/, which names exactly the mapped file even
 * when it was deleted or lives in another mount namespace, or else by its
 * path resolved inside the process's root; only a regular file of the
 * mapped inode is read, and the kernel gets that file (/proc/self/fd/N),
 * never a path the process's owner could make name something else.
 *
 * Probes are attached per (object, process) with the process as the perf
 * event's pid filter: the kernel then puts breakpoints into that process
 * only, and every other process using the same libc runs untouched.  The
 * BPF programs also check the tgid against the traced map (untracing takes
 * effect at once, and mt_bpf_trace_all's probes have no pid filter).
 * Return probes are attached before entry probes and detached after them,
 * so that no call gets an entry without its return.
 */
#include "capture_int.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <linux/capability.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/hash.h"
#include "base/util.h"
#include "procmaps.h"

/* ---- objects ---------------------------------------------------------- */

/* The key of object (DEV, INO) in b->objidx: odd, so never 0. */
static uint64_t obj_key(uint64_t dev, uint64_t ino)
{
	return mt_hash64(dev * 0x9e3779b97f4a7c15ull ^ ino) | 1;
}

static int obj_find(struct mt_bpf *b, uint64_t dev, uint64_t ino)
{
	uint64_t v;

	if (mt_ptrmap_get(&b->objidx, obj_key(dev, ino), &v) && b->objs[v - 1].dev == dev &&
	    b->objs[v - 1].ino == ino)
		return (int)v - 1;
	return -1;
}

/* With MEMTRACE_BPF_DEBUG=1: where the probes of allocator O go, and why. */
static void print_probes(const struct mtb_object *o)
{
	const char *debug = getenv("MEMTRACE_BPF_DEBUG");

	if (!debug || !strcmp(debug, "0"))
		return;
	for (int f = 0; f < MTB_SYM_COUNT; f++)
		if (o->syms.found[f])
			fprintf(stderr, "memtrace: bpf: %s %s: offset 0x%llx probe 0x%llx: %s%s\n",
				o->path, mtb_sym_name[f], (unsigned long long)o->syms.offset[f],
				(unsigned long long)o->syms.probe[f], o->syms.why[f],
				o->syms.alias_of[f] >= 0 ? " (alias)" : "");
}

/* Analyses the file open on FD as object (DEV, INO) named PATH, which PID
 * mapped first (its unwind table is charged to it). */
static int obj_add(struct mt_bpf *b, uint64_t dev, uint64_t ino, const char *path, int fd,
		   pid_t pid)
{
	mt_grow(&b->objs, &b->capobjs, b->nobjs, sizeof(*b->objs));
	struct mtb_object *o = &b->objs[b->nobjs];

	*o = (struct mtb_object){ .dev = dev, .ino = ino, .path = xstrdup(path) };
	o->allocator = fd >= 0 && mtb_elf_analyze(fd, &o->syms) == 1;
	mtb_unwind_add(b, fd, dev, ino, path, pid);
	if (o->allocator)
		print_probes(o);
	/* Where its code is, for telling its own calls of free apart. */
	uint32_t idx = (uint32_t)b->nobjs;
	if (o->allocator && idx < MTB_MAX_OBJECTS) {
		struct mtb_objinfo oi = { 0 };
		if (o->syms.found[MTB_FN_FREE] && !o->syms.executable) {
			oi.free_vaddr = o->syms.vaddr[MTB_FN_FREE] +
					(o->syms.probe[MTB_FN_FREE] - o->syms.offset[MTB_FN_FREE]);
			oi.text_lo = o->syms.text_lo;
			oi.text_hi = o->syms.text_hi;
		}
		/* xallocx needs the old block's size: lean mode keeps it */
		if (o->syms.found[MTB_FN_XALLOCX])
			oi.flags |= MTB_OI_LIVE;
		bpf_map_update_elem(b->fd_objinfo, &idx, &oi, BPF_ANY);
	}
	mt_ptrmap_xput(&b->objidx, obj_key(dev, ino), ++b->nobjs);
	return (int)b->nobjs - 1;
}

void mtb_objects_init(struct mt_bpf *b)
{
	mt_ptrmap_xinit(&b->objidx, 64);
}

void mtb_free_objects(struct mt_bpf *b)
{
	for (size_t i = 0; i < b->nobjs; i++)
		free(b->objs[i].path);
	free(b->objs);
	mt_ptrmap_destroy(&b->objidx);
	mt_ptrmap_destroy(&b->utab_charged);
}

const char *mt_bpf_object_path(struct mt_bpf *b, uint32_t object)
{
	return object < b->nobjs ? b->objs[object].path : NULL;
}

/* ---- links ------------------------------------------------------------ */

/* The initial user namespace's inode number (the kernel's fixed
 * PROC_USER_INIT_INO): memtrace in another one is root of that one only. */
#define MTB_INIT_USER_NS 0xEFFFFFFDu

/* What a failure E to read a process's files says of why.  Only a lack of
 * CAP_SYS_PTRACE is a matter of privileges: with it (root), the kernel
 * refused for another reason, and "needs root" would send root in a
 * circle (it did for PID 1 of a sandbox whose kernel lets root with
 * CAP_SYS_PTRACE read every other process's maps but not that one's). */
static const char *privilege_hint(int e)
{
	if (e != EACCES && e != EPERM)
		return "";
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &h, d) != 0 ||
	    !((d[CAP_SYS_PTRACE / 32].effective >> (CAP_SYS_PTRACE % 32)) & 1))
		return geteuid() == 0 ?
			       " (needs CAP_SYS_PTRACE, which this root lacks, to read another process's files)" :
			       " (needs root, or CAP_SYS_PTRACE, to read what another user's or a setuid process maps)";
	struct stat st;
	if (stat("/proc/self/ns/user", &st) == 0 && st.st_ino != MTB_INIT_USER_NS)
		return " (memtrace runs in a user namespace: its CAP_SYS_PTRACE does not reach "
		       "processes outside it)";
	return " (memtrace runs with CAP_SYS_PTRACE: not a matter of privileges; a security "
	       "module's policy protects this process)";
}

static struct mtb_attach *att_find(struct mt_bpf *b, uint32_t obj, pid_t pid)
{
	for (size_t i = 0; i < b->natts; i++)
		if (b->atts[i].object == obj && b->atts[i].pid == pid)
			return &b->atts[i];
	return NULL;
}

/* Destroying a uprobe link waits for an RCU grace period, about 100 ms
 * here: one after the other, the 19 links of one libc took two seconds to
 * detach.  From parallel threads the waits overlap; a uprobe_multi link
 * waits once for all its probes. */
struct destroy_job {
	struct mtb_link *links;
	size_t n;
	size_t next; /* taken atomically */
};

static void *destroy_worker(void *arg)
{
	struct destroy_job *j = arg;

	for (;;) {
		size_t i = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
		if (i >= j->n)
			return NULL;
		if (j->links[i].l)
			bpf_link__destroy(j->links[i].l);
		else
			close(j->links[i].fd);
	}
}

static void destroy_links(struct mtb_link *links, size_t n)
{
	struct destroy_job j = { .links = links, .n = n };
	pthread_t t[32];
	size_t nt = 0;

	while (n > 1 && nt + 1 < n && nt < sizeof(t) / sizeof(t[0]) &&
	       pthread_create(&t[nt], NULL, destroy_worker, &j) == 0)
		nt++;
	destroy_worker(&j); /* this thread helps, or does it all */
	for (size_t i = 0; i < nt; i++)
		pthread_join(t[i], NULL);
}

/* Detaches the attachments for which DROP() is true (all if DROP is NULL):
 * entry probes first, then the return probes, so that no call that was
 * seen entering goes without its return; or, with AT_ONCE (closing: no
 * figure is read afterwards), all in one go. */
static void detach_where(struct mt_bpf *b, int (*drop)(const struct mtb_attach *a, pid_t pid),
			 pid_t pid, int at_once)
{
	struct mtb_link *links = NULL;
	size_t n = 0, cap = 0, j = 0;

	for (int phase = 0; phase < 2; phase++) {
		if (!at_once || phase == 0)
			n = 0;
		for (size_t i = 0; i < b->natts; i++) {
			struct mtb_attach *a = &b->atts[i];
			if (drop && !drop(a, pid))
				continue;
			unsigned k = phase ? a->nret : a->nentry;
			if (!k)
				continue;
			mt_grow(&links, &cap, n + k - 1, sizeof(*links));
			memcpy(links + n, phase ? a->ret : a->entry, k * sizeof(*links));
			n += k;
			if (phase)
				a->nret = 0;
			else
				a->nentry = 0;
		}
		if (!at_once || phase == 1)
			destroy_links(links, n);
	}
	free(links);
	for (size_t i = 0; i < b->natts; i++)
		if (!(drop ? drop(&b->atts[i], pid) : 1))
			b->atts[j++] = b->atts[i];
	b->natts = j;
}

static int of_pid(const struct mtb_attach *a, pid_t pid)
{
	return a->pid == pid;
}

/* Whether OBJ has probes for PID already (or for every process). */
static int attached(struct mt_bpf *b, uint32_t obj, pid_t pid)
{
	return att_find(b, obj, pid) || (pid != -1 && att_find(b, obj, -1));
}

/* BPF_LINK_CREATE of a uprobe_multi link, by hand (libbpf 1.1 predates
 * it): the layout of union bpf_attr's link_create in Linux 6.6. */
struct umulti_attr {
	uint32_t prog_fd, target_fd, attach_type, flags;
	uint64_t path, offsets, ref_ctr_offsets, cookies;
	uint32_t cnt, uflags, pid, pad;
};
_Static_assert(sizeof(struct umulti_attr) == 64, "link_create.uprobe_multi layout");

static int umulti_link(struct bpf_program *prog, const char *path, const uint64_t *offsets,
		       const uint64_t *cookies, uint32_t cnt, int ret, pid_t pid)
{
	struct umulti_attr a = {
		.prog_fd = (uint32_t)bpf_program__fd(prog),
		.attach_type = MTB_TRACE_UPROBE_MULTI,
		.path = (uintptr_t)path,
		.offsets = (uintptr_t)offsets,
		.cookies = (uintptr_t)cookies,
		.cnt = cnt,
		.uflags = ret ? 1 /* BPF_F_UPROBE_MULTI_RETURN */ : 0,
		.pid = pid > 0 ? (uint32_t)pid : 0,
	};

	return (int)syscall(__NR_bpf, 28 /* BPF_LINK_CREATE */, &a, sizeof(a));
}

/* Probes object OBJ, opened by the kernel as PATH, for process PID (-1:
 * every process). */
static int attach_object(struct mt_bpf *b, uint32_t obj, pid_t pid, const char *path, char *err,
			 size_t errlen)
{
	struct mtb_object *o = &b->objs[obj];
	struct mtb_attach a = { .object = obj, .pid = pid };
	/* multi: each program's probes, gathered */
	struct bpf_program *progs[4] = { b->p_return, b->p_entry, b->p_free, b->p_new };
	uint64_t offsets[4][MTB_SYM_COUNT], cookies[4][MTB_SYM_COUNT];
	uint32_t cnt[4] = { 0 };
	int e = 0;

	if (attached(b, obj, pid))
		return 0;
	for (int ret = 1; ret >= 0 && !e; ret--) {
		for (int f = 0; f < MTB_SYM_COUNT; f++) {
			int fn = mtb_sym_fn(f);

			/* free and new have no return probe (see memtrace.bpf.c);
			 * the calls that tune the allocator are events only */
			if (!o->syms.found[f] || o->syms.alias_of[f] >= 0 ||
			    (ret && (fn == MTB_FN_FREE || fn == MTB_FN_NEW)) ||
			    (!b->o.events && (fn == MTB_FN_MALLOPT || fn == MTB_FN_MALLOC_TRIM)))
				continue;
			int k = ret ? 0 : fn == MTB_FN_FREE ? 2 : fn == MTB_FN_NEW ? 3 : 1;
			uint64_t cookie = MTB_COOKIE(obj, fn);

			if (!ret && o->syms.moved[f])
				cookie |= MTB_COOKIE_REGS(o->syms.argreg[f][0],
							  o->syms.argreg[f][1],
							  o->syms.argreg[f][2]);
			if (fn == MTB_FN_NEW)
				cookie |= MTB_COOKIE_WITH_SIZE(o->syms.size[f]) |
					  (o->syms.entry_frame[f] ? MTB_COOKIE_ENTRY_FRAME : 0);
			else if (!ret)
				cookie |= MTB_COOKIE_WITH_LAYOUT(mtb_sym_layout(f));
			if (b->multi) {
				offsets[k][cnt[k]] = o->syms.probe[f];
				cookies[k][cnt[k]++] = cookie;
				continue;
			}
			LIBBPF_OPTS(bpf_uprobe_opts, uo, .bpf_cookie = cookie, .retprobe = ret);
			struct bpf_link *l = bpf_program__attach_uprobe_opts(progs[k], pid, path,
									     o->syms.probe[f], &uo);
			if (!l) {
				e = errno;
				break;
			}
			if (ret)
				a.ret[a.nret++] = (struct mtb_link){ .l = l };
			else
				a.entry[a.nentry++] = (struct mtb_link){ .l = l };
		}
	}
	/* Return probes first. */
	for (int k = 0; b->multi && k < 4 && !e; k++) {
		if (!cnt[k])
			continue;
		int fd = umulti_link(progs[k], path, offsets[k], cookies[k], cnt[k], k == 0, pid);
		if (fd < 0)
			e = errno;
		else if (k == 0)
			a.ret[a.nret++] = (struct mtb_link){ .fd = fd };
		else
			a.entry[a.nentry++] = (struct mtb_link){ .fd = fd };
	}
	if (e) {
		const char *hint =
			e != EACCES && e != EPERM ? "" :
			b->multi		  ? privilege_hint(e) :
				   " (uprobes through perf events need root or CAP_SYS_ADMIN)";

		if (pid == -1)
			snprintf(err, errlen, "cannot attach uprobes to %s: %s%s", o->path,
				 strerror(e), hint);
		else
			snprintf(err, errlen, "cannot attach uprobes to %s in process %d: %s%s",
				 o->path, (int)pid, strerror(e), hint);
		destroy_links(a.entry, a.nentry);
		destroy_links(a.ret, a.nret);
		errno = e;
		return -1;
	}
	mt_grow(&b->atts, &b->capatts, b->natts, sizeof(*b->atts));
	b->atts[b->natts++] = a;
	return 1;
}

static void detach_pid(struct mt_bpf *b, pid_t pid)
{
	detach_where(b, of_pid, pid, 0);
}

void mtb_detach_all(struct mt_bpf *b)
{
	detach_where(b, NULL, 0, 1);
}

/* ---- processes -------------------------------------------------------- */

/* Field FIELD (3 or more) of /proc/PID/stat; 0 if the process is gone. */
static uint64_t stat_field(pid_t pid, int field)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* the command may hold anything */
	if (!p)
		return 0;
	unsigned long long v = 0;
	/* after ") ": state is field 3 */
	p += 2;
	for (int f = 3; f < field && p; f++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (!p || sscanf(p, "%llu", &v) != 1)
		return 0;
	return v;
}

/* Start time of PID in clock ticks; 0 if gone. */
static uint64_t start_time(pid_t pid)
{
	return stat_field(pid, 22);
}

/* A kernel thread (the kernel's PF_KTHREAD in the flags, field 9) maps
 * nothing of user space: no allocator, whatever a user expects of it. */
#define MTB_PF_KTHREAD 0x00200000u
static int kernel_thread(pid_t pid)
{
	return (stat_field(pid, 9) & MTB_PF_KTHREAD) != 0;
}

static struct mtb_proc *proc_find(struct mt_bpf *b, pid_t pid)
{
	for (size_t i = 0; i < b->nprocs; i++)
		if (b->procs[i].pid == pid)
			return &b->procs[i];
	return NULL;
}

static void set_bit(int fd, pid_t pid, int on)
{
	uint32_t w = (uint32_t)pid / 64;
	uint64_t v = 0, bit = 1ull << ((uint32_t)pid % 64);

	if (w >= MTB_PID_WORDS || bpf_map_lookup_elem(fd, &w, &v))
		return;
	v = on ? v | bit : v & ~bit;
	bpf_map_update_elem(fd, &w, &v, BPF_ANY);
}

/* V: MTB_TRACED, MTB_EXCLUDED (from trace_all), or 0 (neither). */
static void set_traced(struct mt_bpf *b, pid_t pid, uint32_t v)
{
	set_bit(b->fd_traced, pid, v == MTB_TRACED);
	set_bit(b->fd_excluded, pid, v == MTB_EXCLUDED);
}

/* A mapped file that could not be opened: the one reported, if the process
 * turns out to map no allocator that could. */
struct unreadable {
	char path[PATH_MAX + 32];
	int err; /* errno; 0: none */
	int is_libc;
};

/* The object PID maps at [LO, HI) from inode INO, named NAME, opened as
 * mt_proc_open_object opens it; -1 if it cannot be, with one warning when
 * it was refused (a FIFO, a symbolic link, another file planted where the
 * process's owner decides what a path names).  UNREAD (may be NULL) gets
 * it, libc first. */
static int open_mapped(pid_t pid, uint64_t lo, uint64_t hi, uint64_t ino, const char *name,
		       struct unreadable *unread)
{
	char why[128];
	int fd = mt_proc_open_object(pid, lo, hi, ino, name, why, sizeof(why));

	if (fd >= 0)
		return fd;
	int e = errno;
	const char *base = strrchr(name, '/');
	int is_libc = base && !strncmp(base, "/libc.so", 8);

	if (why[0])
		mt_proc_warn_skipped(pid, name, why);
	if (unread && (!unread->err || (is_libc && !unread->is_libc))) {
		if (why[0])
			snprintf(unread->path, sizeof(unread->path), "%s (%s)", name, why);
		else
			snprintf(unread->path, sizeof(unread->path), "/proc/%d/root%s", (int)pid,
				 name);
		unread->err = e;
		unread->is_libc = is_libc;
	}
	errno = e;
	return -1;
}

/* Reads /proc/PID/maps; every executable file mapping not seen before is
 * analysed, and allocator objects get probes for ATTACH_PID (PID, or -1 for
 * every process).  *NALLOC counts the allocator objects mapped; UNREAD (may
 * be NULL) gets a file that could not be opened, libc's first.  Returns the
 * number of objects newly probed, or -1 with ERR (maps unreadable, attach
 * failed).  Without PROBE, objects are only analysed (their unwind tables
 * loaded): a pass made before the probes go in, so that no stack is taken
 * while an object it runs through has no table yet. */
struct maps_pass {
	struct mt_bpf *b;
	pid_t pid, attach_pid;
	int probe, *nalloc, added;
	struct unreadable *unread;
	char *err;
	size_t errlen;
	uint64_t last_dev, last_ino; /* an object's mappings come together */
};

/* Its path without " (deleted)". */
static void undeleted(char *name)
{
	char *del = strstr(name, " (deleted)");
	if (del && !del[10])
		*del = 0;
}

/* One line of the maps for scan_maps; 1 stops the pass (ERR says why). */
static int maps_line(void *ctx, struct mt_maps_line *ml)
{
	struct maps_pass *mp = ctx;
	struct mt_bpf *b = mp->b;
	char *name = ml->path;

	if (!ml->ino || ml->perms[2] != 'x' || name[0] != '/')
		return 0;
	uint64_t dev = makedev(ml->maj, ml->min);
	if (dev == mp->last_dev && ml->ino == mp->last_ino)
		return 0;
	mp->last_dev = dev;
	mp->last_ino = ml->ino;

	int obj = obj_find(b, dev, ml->ino);
	if (!mp->probe) {
		int fd = obj < 0 ? open_mapped(mp->pid, ml->lo, ml->hi, ml->ino, name, NULL) : -1;
		if (fd >= 0) {
			undeleted(name);
			obj_add(b, dev, ml->ino, name, fd, mp->pid);
			close(fd);
		}
		return 0;
	}
	if (obj >= 0 && !b->objs[obj].allocator)
		return 0;
	if (obj >= 0 && attached(b, (uint32_t)obj, mp->attach_pid)) {
		++*mp->nalloc;
		return 0;
	}
	int fd = open_mapped(mp->pid, ml->lo, ml->hi, ml->ino, name, mp->unread);
	if (fd < 0)
		return 0; /* not remembered: it may be readable later */
	if (obj < 0) {
		undeleted(name);
		obj = obj_add(b, dev, ml->ino, name, fd, mp->pid);
	}
	if (!b->objs[obj].allocator) {
		close(fd);
		return 0;
	}
	++*mp->nalloc;
	/* The kernel is given the file we checked, not a path it would
	 * resolve again (in the process's root, or through symbolic links). */
	char fdpath[64];
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	int r = attach_object(b, (uint32_t)obj, mp->attach_pid, fdpath, mp->err, mp->errlen);
	close(fd);
	if (r < 0)
		return 1;
	mp->added += r;
	return 0;
}

static int scan_maps(struct mt_bpf *b, pid_t pid, pid_t attach_pid, int probe, int *nalloc,
		     struct unreadable *unread, char *err, size_t errlen)
{
	struct maps_pass mp = { .b = b,
				.pid = pid,
				.attach_pid = attach_pid,
				.probe = probe,
				.nalloc = nalloc,
				.unread = unread,
				.err = err,
				.errlen = errlen };
	*nalloc = 0;
	int r = mt_maps_each(pid, maps_line, &mp);
	if (r < 0) {
		int e = errno;
		if (e == ENOENT)
			snprintf(err, errlen, "no such process: %d", (int)pid);
		else
			snprintf(err, errlen, "cannot read /proc/%d/maps: %s%s", (int)pid,
				 strerror(e), privilege_hint(e));
		errno = e;
	}
	mtb_unwind_flush(b); /* this process's tables, before its probes */
	return r ? -1 : mp.added;
}

/* Records process PID (start time START) as traced, in P if it was known. */
static void proc_record(struct mt_bpf *b, struct mtb_proc *p, pid_t pid, uint64_t start,
			int exec_pending)
{
	if (!p) {
		mt_grow(&b->procs, &b->capprocs, b->nprocs, sizeof(*b->procs));
		p = &b->procs[b->nprocs++];
	}
	*p = (struct mtb_proc){ .pid = pid, .start = start, .exec_pending = exec_pending };
}

/* Tracing PID (P if it was known) failed: it is not traced and keeps no
 * probes.  errno is kept. */
static void untrace_failed(struct mt_bpf *b, struct mtb_proc *p, pid_t pid)
{
	int e = errno;

	set_traced(b, pid, 0);
	detach_pid(b, pid);
	if (p)
		p->exited = 1;
	errno = e;
}

int mt_bpf_trace_pid(struct mt_bpf *b, pid_t pid, char *err, size_t errlen)
{
	uint64_t st = pid > 0 ? start_time(pid) : 0;

	if (!st) {
		snprintf(err, errlen, "no such process: %d", (int)pid);
		errno = ESRCH;
		return -1;
	}
	if (pid == b->self) {
		snprintf(err, errlen, "process %d is memtrace itself", (int)pid);
		errno = EINVAL;
		return -1;
	}
	if (kernel_thread(pid)) {
		snprintf(err, errlen,
			 "process %d is a kernel thread: it has no memory of its own to trace",
			 (int)pid);
		errno = EINVAL;
		return -1;
	}
	struct mtb_proc *p = proc_find(b, pid);
	int fresh = !p || p->start != st || p->exited;

	if (fresh) {
		if (p) {
			detach_pid(b, pid);
			mtb_drop_process(b, (uint32_t)pid);
		}
		mtb_reset_stats(b, (uint32_t)pid);
	}
	/* Traced before the first probe goes in: no call is half seen. */
	set_traced(b, pid, MTB_TRACED);
	int nalloc = 0;
	struct unreadable unread = { .err = 0 };
	int r = scan_maps(b, pid, b->all ? -1 : pid, 0, &nalloc, NULL, err, errlen);

	if (r >= 0)
		r = scan_maps(b, pid, b->all ? -1 : pid, 1, &nalloc, &unread, err, errlen);

	if (r >= 0 && nalloc == 0 && unread.err) {
		/* Perhaps it does, in what we could not read. */
		snprintf(err, errlen, "cannot read %s: %s%s", unread.path, strerror(unread.err),
			 privilege_hint(unread.err));
		errno = unread.err;
		r = -1;
	} else if (r >= 0 && nalloc == 0) {
		snprintf(err, errlen,
			 "process %d maps no allocator: a static program without its symbol table, "
			 "whose malloc cannot be found? (an unstripped build can be traced)",
			 (int)pid);
		errno = ENOENT;
		r = -1;
	}
	if (r < 0) {
		if (!p || fresh)
			untrace_failed(b, p, pid);
		return -1;
	}
	proc_record(b, p, pid, st, 0);
	return 0;
}

/* ---- before an exec --------------------------------------------------- */

/* The libraries a program will load, found as ld.so finds them: the
 * directories searched, and the names to load, breadth first. */
struct ld_search {
	char **dirs, **queue;
	size_t ndirs, capdirs, nq, capq;
};

static void ld_search_free(struct ld_search *s)
{
	for (size_t i = 0; i < s->nq; i++)
		free(s->queue[i]);
	free(s->queue);
	for (size_t i = 0; i < s->ndirs; i++)
		free(s->dirs[i]);
	free(s->dirs);
}

static void queue_name(struct ld_search *s, const char *name)
{
	mt_grow(&s->queue, &s->capq, s->nq, sizeof(char *));
	s->queue[s->nq++] = xstrdup(name);
}

static void add_dirs(struct ld_search *s, const char *list, const char *origin)
{
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", list);
	for (char *save = NULL, *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		char out[PATH_MAX];
		const char *o = strstr(d, "$ORIGIN")   ? "$ORIGIN" :
				strstr(d, "${ORIGIN}") ? "${ORIGIN}" :
							 NULL;

		if (o && origin) {
			const char *at = strstr(d, o);
			snprintf(out, sizeof(out), "%.*s%s%s", (int)(at - d), d, origin,
				 at + strlen(o));
		} else if (o) {
			continue;
		} else {
			snprintf(out, sizeof(out), "%s", d);
		}
		mt_grow(&s->dirs, &s->capdirs, s->ndirs, sizeof(char *));
		s->dirs[s->ndirs++] = xstrdup(out);
	}
}

/* Directories of /etc/ld.so.conf and what it includes. */
static void ld_so_conf(struct ld_search *s, const char *file, int depth)
{
	FILE *f = fopen(file, "re");
	char line[PATH_MAX];

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *l = line;
		while (isspace((unsigned char)*l))
			l++;
		l[strcspn(l, "#\n")] = 0;
		for (char *e = l + strlen(l); e > l && isspace((unsigned char)e[-1]);)
			*--e = 0;
		if (!*l)
			continue;
		if (!strncmp(l, "include", 7) && isspace((unsigned char)l[7])) {
			char *pat = l + 8;
			while (isspace((unsigned char)*pat))
				pat++;
			glob_t g;
			if (depth < 4 && glob(pat, 0, NULL, &g) == 0) {
				for (size_t i = 0; i < g.gl_pathc; i++)
					ld_so_conf(s, g.gl_pathv[i], depth + 1);
				globfree(&g);
			}
			continue;
		}
		add_dirs(s, l, NULL);
	}
	fclose(f);
}

/* $ORIGIN of the program at EXE_PATH: its directory. */
static void exe_origin(const char *exe_path, char origin[PATH_MAX])
{
	char real[PATH_MAX];

	if (realpath(exe_path, real))
		snprintf(origin, PATH_MAX, "%s", real);
	else
		snprintf(origin, PATH_MAX, "%s", exe_path);
	char *slash = strrchr(origin, '/');
	if (slash)
		*slash = 0;
	else
		snprintf(origin, PATH_MAX, ".");
}

/* Where ld.so will look, in its order: DT_RPATH (without DT_RUNPATH),
 * LD_LIBRARY_PATH, DT_RUNPATH, /etc/ld.so.conf, the default directories. */
static void search_dirs(struct ld_search *s, const struct mtb_elf_deps *deps, const char *origin)
{
	if (deps->rpath[0] && !deps->runpath[0])
		add_dirs(s, deps->rpath, origin);
	if (getenv("LD_LIBRARY_PATH"))
		add_dirs(s, getenv("LD_LIBRARY_PATH"), origin);
	if (deps->runpath[0])
		add_dirs(s, deps->runpath, origin);
	ld_so_conf(s, "/etc/ld.so.conf", 0);
#if defined(__x86_64__)
	add_dirs(s, "/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu", NULL);
#elif defined(__aarch64__)
	add_dirs(s, "/lib/aarch64-linux-gnu:/usr/lib/aarch64-linux-gnu", NULL);
#endif
	add_dirs(s, "/lib64:/usr/lib64:/lib:/usr/lib", NULL);
}

/* Preloaded objects first, as ld.so loads them: the child inherits our
 * environment; and the system-wide list. */
static void queue_preloads(struct ld_search *s)
{
	char pre[4096] = "";
	const char *env = getenv("LD_PRELOAD");
	FILE *pf = fopen("/etc/ld.so.preload", "re");

	if (env)
		snprintf(pre, sizeof(pre), "%s ", env);
	if (pf) {
		size_t l = strlen(pre);
		size_t got = fread(pre + l, 1, sizeof(pre) - l - 1, pf);
		pre[l + got] = 0;
		fclose(pf);
	}
	for (char *save = NULL, *t = strtok_r(pre, " :\t\n", &save); t;
	     t = strtok_r(NULL, " :\t\n", &save))
		queue_name(s, t);
}

/* Opens the object at PATH and, if it defines malloc, probes it for PID. */
static int attach_path(struct mt_bpf *b, const char *path, pid_t pid, int *found, char *err,
		       size_t errlen)
{
	int fd = mt_open_regular(path, 0, NULL, 0);
	struct stat st;

	if (fd < 0 || fstat(fd, &st)) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	uint64_t dev = makedev(major(st.st_dev), minor(st.st_dev));
	int obj = obj_find(b, dev, st.st_ino);

	if (obj < 0)
		obj = obj_add(b, dev, st.st_ino, path, fd, pid);
	close(fd);
	if (!b->objs[obj].allocator)
		return 0;
	++*found;
	return attach_object(b, (uint32_t)obj, b->all ? -1 : pid, path, err, errlen) < 0 ? -1 : 0;
}

/* The library NAME, looked for in the search directories: probed if found
 * (and an allocator), what it needs queued. */
static int attach_library(struct mt_bpf *b, pid_t pid, struct ld_search *s, const char *name,
			  int *found, char *err, size_t errlen)
{
	int ret = 0;

	for (size_t d = 0; d < s->ndirs; d++) {
		char path[PATH_MAX];

		if (strchr(name, '/'))
			snprintf(path, sizeof(path), "%s", name);
		else
			snprintf(path, sizeof(path), "%s/%s", s->dirs[d], name);
		int lfd = mt_open_regular(path, 0, NULL, 0); /* a FIFO there hung record */
		if (lfd < 0)
			continue;
		struct mtb_elf_deps *ld = xcalloc(1, sizeof(*ld));
		int ok = mtb_elf_deps(lfd, ld) == 0;
		close(lfd);
		if (ok) {
			ret = attach_path(b, path, pid, found, err, errlen);
			for (unsigned i = 0; i < ld->nneeded; i++)
				queue_name(s, ld->needed[i]);
		}
		free(ld);
		if (ok)
			break;
	}
	return ret;
}

/* The libraries of the queue, breadth first (at most 256 names). */
static int attach_queue(struct mt_bpf *b, pid_t pid, struct ld_search *s, int *found, char *err,
			size_t errlen)
{
	int ret = 0;

	for (size_t qi = 0; ret == 0 && qi < s->nq && qi < 256; qi++) {
		const char *name = s->queue[qi];
		int dup = 0;

		for (size_t k = 0; k < qi; k++)
			dup |= !strcmp(s->queue[k], name);
		if (!dup)
			ret = attach_library(b, pid, s, name, found, err, errlen);
	}
	return ret;
}

/* Nothing found through the search (an unusual ld.so setup): the program
 * will use the C library we use. */
static int attach_our_libc(struct mt_bpf *b, pid_t pid, int *found, char *err, size_t errlen)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[PATH_MAX + 256];
	int ret = 0;

	while (f && !*found && ret == 0 && fgets(line, sizeof(line), f)) {
		char *name = strchr(line, '/');
		if (!name || !strstr(line, " r-xp ") || !strstr(name, "/libc.so"))
			continue;
		name[strcspn(name, "\n")] = 0;
		ret = attach_path(b, name, pid, found, err, errlen);
	}
	if (f)
		fclose(f);
	return ret;
}

/* What the program at EXE_PATH needs, into DEPS: 0, or -1 with ERR. */
static int read_exe_deps(const char *exe_path, struct mtb_elf_deps *deps, char *err, size_t errlen)
{
	int fd = mt_open_regular(exe_path, 0, NULL, 0);

	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot open %s: %s", exe_path,
			 e == EINVAL ? "not a regular file" : strerror(e));
		errno = e;
		return -1;
	}
	int is_elf = mtb_elf_deps(fd, deps) == 0;
	close(fd);
	if (!is_elf) {
		snprintf(err, errlen, "%s is not an ELF executable of this machine", exe_path);
		errno = ENOEXEC;
		return -1;
	}
	return 0;
}

int mt_bpf_trace_exec(struct mt_bpf *b, pid_t pid, const char *exe_path, char *err, size_t errlen)
{
	uint64_t st = pid > 0 ? start_time(pid) : 0;
	struct mtb_elf_deps *deps = NULL;
	struct ld_search s = { .dirs = NULL };
	struct mtb_proc *p;
	int found = 0, ret = -1, e;

	if (!st) {
		snprintf(err, errlen, "no such process: %d", (int)pid);
		errno = ESRCH;
		return -1;
	}
	deps = xcalloc(1, sizeof(*deps));
	if (read_exe_deps(exe_path, deps, err, errlen))
		goto cleanup;
	p = proc_find(b, pid);
	if (p) {
		detach_pid(b, pid);
		mtb_drop_process(b, (uint32_t)pid);
	}
	mtb_reset_stats(b, (uint32_t)pid);
	set_traced(b, pid, MTB_TRACED);

	ret = attach_path(b, exe_path, pid, &found, err, errlen);
	if (deps->dynamic) {
		char origin[PATH_MAX];

		exe_origin(exe_path, origin);
		search_dirs(&s, deps, origin);
		queue_preloads(&s);
		for (unsigned i = 0; i < deps->nneeded; i++)
			queue_name(&s, deps->needed[i]);
		if (ret == 0)
			ret = attach_queue(b, pid, &s, &found, err, errlen);
		if (ret == 0 && !found)
			ret = attach_our_libc(b, pid, &found, err, errlen);
	}
	if (ret == 0 && !found) {
		snprintf(
			err, errlen,
			"%s defines no allocator and links none: a static program without its symbol "
			"table, whose malloc cannot be found (record an unstripped build; the shim "
			"needs a dynamically linked one)",
			exe_path);
		errno = ENOENT;
		ret = -1;
	}
	mtb_unwind_flush(b);
	if (ret < 0)
		untrace_failed(b, p, pid);
	else
		proc_record(b, p, pid, st, 1);
cleanup:
	e = errno;
	ld_search_free(&s);
	free(deps);
	errno = e;
	return ret;
}

/* ---- every process ---------------------------------------------------- */

static int scan_all(struct mt_bpf *b, char *err, size_t errlen)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int added = 0;

	if (!d) {
		snprintf(err, errlen, "cannot read /proc: %s", strerror(errno));
		return -1;
	}
	/* a stop signal ends a long scan: the session ends at once after */
	while (!mt_stop && (de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		int nalloc;
		char e2[256];

		if (*end || pid <= 0 || pid == b->self)
			continue;
		/* Processes that vanish or refuse are skipped; a failed
		 * attach is reported. */
		int r = scan_maps(b, (pid_t)pid, -1, 1, &nalloc, NULL, e2, sizeof(e2));
		if (r > 0)
			added += r;
		else if (r < 0 && strstr(e2, "cannot attach")) {
			snprintf(err, errlen, "%s", e2);
			closedir(d);
			return -1;
		}
	}
	closedir(d);
	return added;
}

int mt_bpf_trace_all(struct mt_bpf *b, char *err, size_t errlen)
{
	b->all = 1;
	mtb_set_trace_all(b, 1);
	/* One pass, tables and probes together: a pass for the tables first
	 * would leave the machine untraced for seconds (every object of every
	 * process: 3 million rows, 48 MB, on a build machine).  Stacks through
	 * a process's objects before the scan reaches it are counted as
	 * stack_no_table. */
	int r = scan_all(b, err, errlen);

	if (r < 0) {
		mtb_set_trace_all(b, 0);
		b->all = 0;
		return -1;
	}
	return 0;
}

/* trace_all: processes that exited keep nothing. */
struct gone_walk {
	struct mt_bpf *b;
	struct mt_ptrmap seen; /* tgid + 1 -> alive (1) or gone (2) */
	uint32_t *gone;
	size_t n, cap;
};

static int gone_cb(void *ctx, const void *key, const void *val)
{
	struct gone_walk *w = ctx;
	uint32_t tgid = ((const struct mtb_site_key *)key)->tgid;
	uint64_t v;
	char path[32];
	struct stat st;

	(void)val;
	if (mt_ptrmap_get(&w->seen, (uint64_t)tgid + 1, &v))
		return 0;
	snprintf(path, sizeof(path), "/proc/%u", tgid);
	v = stat(path, &st) == 0 || proc_find(w->b, (pid_t)tgid) ? 1 : 2;
	mt_ptrmap_xput(&w->seen, (uint64_t)tgid + 1, v);
	if (v == 2) {
		mt_grow(&w->gone, &w->cap, w->n, sizeof(uint32_t));
		w->gone[w->n++] = tgid;
	}
	return 0;
}

int mt_bpf_rescan(struct mt_bpf *b)
{
	int added = 0;
	char err[512];

	mtb_reap_dead_threads(b);
	if (b->all) {
		int r = scan_all(b, err, sizeof(err));
		if (r > 0)
			added += r;
		struct gone_walk w = { .b = b };

		mt_ptrmap_xinit(&w.seen, 64);
		if (mtb_map_walk(b->fd_sites, sizeof(struct mtb_site_key), sizeof(struct mtb_site),
				 gone_cb, &w) == 0)
			mtb_drop_processes(b, w.gone, w.n);
		free(w.gone);
		mt_ptrmap_destroy(&w.seen);
	}
	for (size_t i = 0; i < b->nprocs; i++) {
		struct mtb_proc *p = &b->procs[i];
		int nalloc;

		if (p->exited)
			continue;
		if (start_time(p->pid) != p->start) {
			/* Exited (or its pid is someone else's now). */
			detach_pid(b, p->pid);
			if (!b->all)
				set_traced(b, p->pid, 0);
			p->exited = 1;
			continue;
		}
		int r = scan_maps(b, p->pid, b->all ? -1 : p->pid, 0, &nalloc, NULL, err,
				  sizeof(err));

		if (r >= 0)
			r = scan_maps(b, p->pid, b->all ? -1 : p->pid, 1, &nalloc, NULL, err,
				      sizeof(err));
		if (r > 0)
			added += r;
		if (r >= 0)
			p->exec_pending = 0;
	}
	return added;
}

void mtb_note_new_code(struct mt_bpf *b, pid_t pid)
{
	struct mtb_proc *p = proc_find(b, pid);

	if (p && !p->exited)
		p->new_code = b->new_code = 1;
}

void mtb_note_exit(struct mt_bpf *b, pid_t pid, int64_t status, uint64_t ts)
{
	struct mtb_proc *p = proc_find(b, pid);

	if (p) {
		p->has_status = 1;
		p->status = status;
		p->exit_ts = ts;
	}
}

/* (a pid traced anew is recorded anew by proc_record: its status forgotten) */
int mt_bpf_exit_status(struct mt_bpf *b, uint32_t pid, int64_t *status, uint64_t *ts)
{
	struct mtb_proc *p = proc_find(b, (pid_t)pid);

	if (!p || !p->has_status)
		return 0;
	*status = p->status;
	if (ts)
		*ts = p->exit_ts;
	return 1;
}

int mt_bpf_new_code_pending(struct mt_bpf *b)
{
	return b->new_code;
}

int mt_bpf_rescan_new_code(struct mt_bpf *b)
{
	uint32_t before = b->nutabs;
	char err[512];

	if (!b->new_code)
		return 0;
	b->new_code = 0;
	for (size_t i = 0; i < b->nprocs; i++) {
		struct mtb_proc *p = &b->procs[i];
		int nalloc;

		if (!p->new_code || p->exited)
			continue;
		p->new_code = 0;
		/* tables first, then probes (a dlopen'd allocator) */
		if (scan_maps(b, p->pid, b->all ? -1 : p->pid, 0, &nalloc, NULL, err,
			      sizeof(err)) >= 0)
			scan_maps(b, p->pid, b->all ? -1 : p->pid, 1, &nalloc, NULL, err,
				  sizeof(err));
	}
	return (int)(b->nutabs - before);
}

void mt_bpf_untrace_pid(struct mt_bpf *b, pid_t pid)
{
	set_traced(b, pid, b->all ? MTB_EXCLUDED : 0);
	detach_pid(b, pid);
	size_t j = 0;
	for (size_t i = 0; i < b->nprocs; i++)
		if (b->procs[i].pid != pid)
			b->procs[j++] = b->procs[i];
	b->nprocs = j;
	mtb_drop_process(b, (uint32_t)pid);
}
