/* sigchain.h - handing a signal on to the handler that was installed
 * before ours (the SIGBUS guards: producer/guard.c, lib/read_guard.c).
 * Private to the libraries; async-signal-safe. */
#ifndef TAILBUS_SIGCHAIN_H
#define TAILBUS_SIGCHAIN_H

#include <signal.h>

/* A fault ours does not cover: to the previous handler, or, if that was
 * the default (or ignore, which a fault's SIGBUS cannot be), back to the
 * default action, so that the fault recurs and ends the process as it
 * would have. */
static inline void tb__sigchain(const struct sigaction *previous, int sig, siginfo_t *si, void *uc)
{
	if ((previous->sa_flags & SA_SIGINFO) && previous->sa_sigaction) {
		previous->sa_sigaction(sig, si, uc);
	} else if (!(previous->sa_flags & SA_SIGINFO) && previous->sa_handler != SIG_DFL &&
		   previous->sa_handler != SIG_IGN) {
		previous->sa_handler(sig);
	} else {
		struct sigaction dfl = {.sa_handler = SIG_DFL};
		sigemptyset(&dfl.sa_mask);
		sigaction(sig, &dfl, NULL);
	}
}

#endif
