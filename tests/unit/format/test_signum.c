/*
 * test_signum.c - unit tests of the signal numbering of recordings
 * (format/signum.h): every signal of this machine's <signal.h> is named by
 * its own name once translated (so a recording made here names it right on
 * any other machine), the common numbers are x86-64's and ARM's whatever the
 * machine, and what has no translation passes as it is.  Runs natively and,
 * in the cross builds, under qemu-user on ARM and MIPS, whose numbers differ.
 */
#include "format/signum.h"
#include "../check.h"

#include <string.h>

#define NAMED(s)      \
	{             \
		s, #s \
	}

int main(void)
{
	static const struct {
		int sig;
		const char *name;
	} sigs[] = {
		NAMED(SIGHUP),	NAMED(SIGINT),	 NAMED(SIGQUIT), NAMED(SIGILL),	 NAMED(SIGTRAP),
		NAMED(SIGABRT), NAMED(SIGBUS),	 NAMED(SIGFPE),	 NAMED(SIGKILL), NAMED(SIGUSR1),
		NAMED(SIGSEGV), NAMED(SIGUSR2),	 NAMED(SIGPIPE), NAMED(SIGALRM), NAMED(SIGTERM),
		NAMED(SIGCHLD), NAMED(SIGCONT),	 NAMED(SIGSTOP), NAMED(SIGTSTP), NAMED(SIGTTIN),
		NAMED(SIGTTOU), NAMED(SIGURG),	 NAMED(SIGXCPU), NAMED(SIGXFSZ), NAMED(SIGVTALRM),
		NAMED(SIGPROF), NAMED(SIGWINCH), NAMED(SIGIO),	 NAMED(SIGPWR),	 NAMED(SIGSYS),
	};
	for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
		const char *got = mt_sig_name(mt_sig_recorded(sigs[i].sig));
		if (!got || strcmp(got, sigs[i].name)) {
			fprintf(stderr, "signal %d (%s) is recorded as %d, named %s\n", sigs[i].sig,
				sigs[i].name, mt_sig_recorded(sigs[i].sig), got ? got : "(none)");
			failures++;
		}
	}
	/* the common numbering, whatever this machine's */
	CHECK_EQ(mt_sig_recorded(SIGBUS), 7);
	CHECK_EQ(mt_sig_recorded(SIGUSR1), 10);
	CHECK_EQ(mt_sig_recorded(SIGCHLD), 17);
	CHECK_EQ(mt_sig_recorded(SIGSYS), 31);
	CHECK(!strcmp(mt_sig_name(11), "SIGSEGV"));
	CHECK(!strcmp(mt_sig_name(16), "SIGSTKFLT"));
	/* beyond the table: real-time signals pass, and have no name */
	CHECK_EQ(mt_sig_recorded(SIGRTMIN + 1), SIGRTMIN + 1);
	CHECK(mt_sig_name(0) == NULL);
	CHECK(mt_sig_name(64) == NULL);
	CHECK(mt_sig_name(-1) == NULL);
	return failures ? 1 : 0;
}
