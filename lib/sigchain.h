/* sigchain.h - a SIGBUS guard's handler installed once, and a fault it
 * does not cover handed on to the handler that was there before (the
 * guards: producer/guard.c, lib/read_guard.c). Private to the libraries;
 * tb__sigchain is async-signal-safe. */
#ifndef TAILBUS_SIGCHAIN_H
#define TAILBUS_SIGCHAIN_H

#include <errno.h>
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

/* Install `handler` for SIGBUS once per `installed` flag (later calls do
 * nothing), keeping what was there in *previous. 0 or a negative errno. */
static inline int tb__sigbus_install(int *installed, struct sigaction *previous,
				     void (*handler)(int, siginfo_t *, void *))
{
	if (__atomic_exchange_n(installed, 1, __ATOMIC_ACQ_REL))
		return 0;
	struct sigaction sa = {.sa_sigaction = handler, .sa_flags = SA_SIGINFO};
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, previous) < 0) {
		int rc = -errno;
		__atomic_store_n(installed, 0, __ATOMIC_RELEASE);
		return rc;
	}
	return 0;
}

#endif
