/*
 * signum.h - signal numbers as recordings store them (an EXIT record's
 * -signal, a report's "signal").
 *
 * Recordings travel between machines, and Linux numbers some signals
 * differently on some architectures (MIPS: SIGBUS is 10, SIGCHLD 18...).
 * A recording holds Linux's common numbering (x86, ARM, AArch64, RISC-V,
 * PowerPC...) whatever machine made it: the recorder translates its own
 * numbers on the way in, and a reader names them from the common table, not
 * from its own <signal.h>.  Real-time and unknown signals pass as they are.
 */
#ifndef MEMTRACE_FORMAT_SIGNUM_H
#define MEMTRACE_FORMAT_SIGNUM_H

#include <signal.h>

/* SIG, this machine's number, in the recordings' numbering. */
static inline int mt_sig_recorded(int sig)
{
	switch (sig) {
	case SIGHUP:
		return 1;
	case SIGINT:
		return 2;
	case SIGQUIT:
		return 3;
	case SIGILL:
		return 4;
	case SIGTRAP:
		return 5;
	case SIGABRT:
		return 6;
	case SIGBUS:
		return 7;
	case SIGFPE:
		return 8;
	case SIGKILL:
		return 9;
	case SIGUSR1:
		return 10;
	case SIGSEGV:
		return 11;
	case SIGUSR2:
		return 12;
	case SIGPIPE:
		return 13;
	case SIGALRM:
		return 14;
	case SIGTERM:
		return 15;
#ifdef SIGSTKFLT
	case SIGSTKFLT:
		return 16;
#endif
	case SIGCHLD:
		return 17;
	case SIGCONT:
		return 18;
	case SIGSTOP:
		return 19;
	case SIGTSTP:
		return 20;
	case SIGTTIN:
		return 21;
	case SIGTTOU:
		return 22;
	case SIGURG:
		return 23;
	case SIGXCPU:
		return 24;
	case SIGXFSZ:
		return 25;
	case SIGVTALRM:
		return 26;
	case SIGPROF:
		return 27;
	case SIGWINCH:
		return 28;
	case SIGIO:
		return 29;
	case SIGPWR:
		return 30;
	case SIGSYS:
		return 31;
	default:
		return sig;
	}
}

/* The name of SIG in the recordings' numbering ("SIGSEGV"), or NULL. */
static inline const char *mt_sig_name(int sig)
{
	static const char *const names[] = {
		NULL,	    "SIGHUP",  "SIGINT",    "SIGQUIT", "SIGILL",  "SIGTRAP",   "SIGABRT",
		"SIGBUS",   "SIGFPE",  "SIGKILL",   "SIGUSR1", "SIGSEGV", "SIGUSR2",   "SIGPIPE",
		"SIGALRM",  "SIGTERM", "SIGSTKFLT", "SIGCHLD", "SIGCONT", "SIGSTOP",   "SIGTSTP",
		"SIGTTIN",  "SIGTTOU", "SIGURG",    "SIGXCPU", "SIGXFSZ", "SIGVTALRM", "SIGPROF",
		"SIGWINCH", "SIGIO",   "SIGPWR",    "SIGSYS",
	};
	return sig > 0 && (size_t)sig < sizeof names / sizeof *names ? names[sig] : NULL;
}

#endif
