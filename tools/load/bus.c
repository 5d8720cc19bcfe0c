/* bus.c - the bus `tailbus load` records into: attach, and say at once when
 * it cannot deliver (unavailable, or no tailbusd draining it).
 *
 * Invariant: a bus that cannot deliver never stops the run; its figures are
 * then in-process only, and the report and the exit status say so.
 */
#include "../cli.h"
#include "load.h"

tb_producer *load_attach_bus(const struct config *c, struct bus_state *b)
{
	tb_producer *p = tb_attach(c->bus, "load");
	if (!p)
		return NULL;
	const char *why = NULL;
	if (tb_producer_error(p, &why) < 0) {
		b->error = why ? why : "unknown error";
		tb_cli_error(VERB, "bus '%s' is unavailable (%s): running anyway; the figures below "
			     "are in-process only and nothing reaches a log",
			     c->bus, b->error);
	} else if (tb_producer_collector(p, NULL) != TB_COLLECTOR_SERVING) {
		b->no_collector = true;
		tb_cli_error(VERB, "no tailbusd is draining bus '%s': events wait in the ring and "
			     "are dropped (and counted) once it is full",
			     c->bus);
	}
	return p;
}
