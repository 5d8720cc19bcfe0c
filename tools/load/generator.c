/* generator.c - `tailbus load`'s generator: when each request is meant to be
 * sent, sending it, and why a send went late.
 *
 * The schedule is computed from the request's index alone (tb_schedule_at),
 * or, with --poisson, is the running sum of exponential gaps drawn from a
 * sequence seeded by --seed (tb_schedule_poisson_next). The generator sends every request that is due,
 * all at once when behind, and keeps each one's intended time; it never
 * sleeps and never skips.
 *
 * Late sends. A send more than --late-ns after its intended time is late, and
 * goes into one of three bins: "held back" when the generator saw it due but
 * could not send (the queue was full, or a closed loop was waiting for its
 * response); "descheduled" when it fell due in a gap of the sending thread's
 * spin loop (spin.c: the OS or a hypervisor had the core); "busy" otherwise
 * (it fell due while the thread was sending or serving others: more than one
 * thread can schedule). Descheduled measures the machine; held back and busy
 * measure the load. Open loop with a deep enough queue is never held back,
 * however slow the engine: its latency grows instead. A bounded queue is the
 * admission buffer of a real system; when an overloaded engine fills it the
 * generator is held back and its sends go late, which is how a machine that
 * cannot hold the rate shows up in the late count.
 *
 * Invariants: intended times never depend on when earlier requests were
 * sent; the same seed gives the same schedule; load_gen_poll neither
 * allocates nor makes a system call.
 */
#include <stdint.h>
#include <string.h>

#include "load.h"
#include "tailbus/analysis.h"

/* The shortest gap in the spin loop counted as the thread not running: an
 * idle turn is one clock read, a short turn a few hundred ns. */
#define GAP_MIN_NS 1000

/* Intended time of request g->i into g->due. */
static void schedule_next(struct gen *g)
{
	int rc;
	if (g->poisson)
		rc = tb_schedule_poisson_next(g->i == 0 ? g->start : g->due, g->rate, &g->prng,
					      &g->due);
	else
		rc = tb_schedule_at(g->start, g->rate, g->i, &g->due);
	if (rc < 0)
		g->due = INT64_MAX; /* past any end: the schedule is over */
}

void load_gen_init(struct gen *g, const struct config *c, int64_t start)
{
	memset(g, 0, sizeof(*g));
	g->start = start;
	g->end = start + c->duration_ns;
	g->measure_from = start + c->warmup_ns;
	g->rate = c->rate;
	g->poisson = c->poisson;
	g->closed = c->closed;
	g->prng = c->seed;
	g->late_ns = c->late_ns;
	g->held_at = INT64_MIN;
	g->spin.last_read = start;
	g->spin.threshold = c->late_ns > GAP_MIN_NS ? c->late_ns : GAP_MIN_NS;
	schedule_next(g);
	g->finished = g->due >= g->end;
}

/* Count a send and, when late, why: held back (it was due at a turn that
 * could not send it), descheduled (it fell due in the latest gap of the
 * loop), or busy (it fell due while the thread was at work on others). */
static void account_send(struct gen *g, int64_t due, int64_t now)
{
	g->sent++;
	if (due < g->measure_from)
		return;
	int64_t lag = now - due;
	g->sent_measured++;
	g->last_send = now;
	if (lag > g->max_lag_ns)
		g->max_lag_ns = lag;
	if (lag <= g->late_ns)
		return;
	g->late++;
	if (due <= g->held_at)
		g->late_held++;
	else if (due >= g->spin.gap_from && due < g->spin.gap_to)
		g->late_descheduled++;
	else
		g->late_busy++;
}

/* One turn of the generator: send every request that is due (all at once
 * when behind), unless the queue is full or a closed loop is waiting.
 * Returns the number sent. */
int load_gen_poll(struct run *r, int64_t now)
{
	struct gen *g = &r->gen;
	int sent = 0;
	while (!g->finished && g->due <= now) {
		tb_load_req q = {g->due, now};
		/* acquire: pairs with the engine's release of its count */
		bool waiting = g->closed && __atomic_load_n(&r->completed, __ATOMIC_ACQUIRE) < g->sent;
		if (waiting || !ck_ring_enqueue_spsc_tb_load_req(&r->ring, r->buf, &q)) {
			g->held_at = now; /* held back: this send and those due by now go late */
			break;
		}
		account_send(g, g->due, now);
		g->i++;
		schedule_next(g);
		g->finished = g->due >= g->end;
		sent++;
	}
	return sent;
}

/* Counts the requests the generator never sent, intended before the end of
 * the schedule, and finishes it. */
uint64_t load_gen_unsent(struct gen *g)
{
	uint64_t unsent = 0;
	if (!g->finished && !g->poisson) {
		unsent = tb_schedule_count(g->end - g->start, g->rate) - g->i;
		g->finished = true;
	}
	while (!g->finished) {
		unsent++;
		g->i++;
		schedule_next(g);
		g->finished = g->due >= g->end;
	}
	return unsent;
}
