/* spin.c - gaps in a spin loop of `tailbus load`: the time its thread was
 * not running our code.
 *
 * A gap is either the time between two turns of the loop (clock reads more
 * than max(--late-ns, 1 us) apart with no work of ours between them: the OS
 * or a hypervisor had the core), or a short turn (few actions, well under a
 * microsecond of work) that took longer than that. The generator's gaps
 * decide which late sends were descheduled; the longest gap of the engine's
 * thread is a stall the machine added, which the sweep's rules and the
 * growth verdict do not count.
 *
 * Invariant: an idle turn costs one clock read; only gaps after the
 * schedule's start are counted.
 */
#include <stdint.h>

#include "load.h"

/* A turn of at most this many sends, starts and completions is well under a
 * microsecond of our own work; one that took longer was interrupted. */
#define SHORT_TURN_ACTIONS 8

/* Notes the time from `from` to `to` as a gap when longer than the threshold. */
void load_spin_gap(struct spin *s, int64_t from, int64_t to, int64_t start)
{
	int64_t gap = to - from;
	if (to < start || gap <= s->threshold)
		return;
	s->gaps++;
	s->stolen_ns += gap;
	if (gap > s->max_gap_ns)
		s->max_gap_ns = gap;
	s->gap_from = from;
	s->gap_to = to;
}

/* After a turn that began at `now` and did `actions` sends, starts and
 * completions: read the clock again (only when there was work, so an idle
 * turn costs one read) and note a short turn that took too long. */
void load_spin_end(struct spin *s, int64_t now, int actions, int64_t start, tb_producer *p)
{
	if (!actions) {
		s->last_read = now;
		return;
	}
	int64_t end = (int64_t)tb_now(p);
	if (actions <= SHORT_TURN_ACTIONS)
		load_spin_gap(s, now, end, start);
	s->last_read = end;
}
