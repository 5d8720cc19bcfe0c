/* c_producer.c - a C engine that records latencies into a tailbus bus.
 *
 *     c_producer [BUS [COUNT]]      (BUS: $TAILBUS_BUS, else "default"; COUNT: 10000)
 *
 * The whole producer API in one thread: attach once, register a metric on
 * the cold path, record on the hot path, read the counters, detach. It
 * records COUNT requests of metric "c_fill" whose latencies are 1, 2, ...
 * 1000 us in turn, so a reader of the collector's log can check what it
 * finds: COUNT events, the largest 1000 us (once COUNT reaches 1000).
 *
 * It warns when no collector serves the bus (a mistyped name, or tailbusd
 * not started: the events wait in the ring, and a full ring folds or drops
 * them), prints "attempted written dropped folded", and exits 1 when the
 * bus could not be reached (tb_producer_error says why) or an event was
 * lost.
 */
#include <stdio.h>
#include <stdlib.h>

#include <tailbus/producer.h>

int main(int argc, char **argv)
{
	const char *bus = argc > 1 ? argv[1] : NULL;
	long count = argc > 2 ? strtol(argv[2], NULL, 10) : 10000;
	if (argc > 3 || count <= 0) {
		fprintf(stderr, "usage: c_producer [BUS [COUNT]]\n");
		return 2;
	}
	tb_producer *p = tb_attach(bus, "c-example");
	if (!p) {
		perror("c_producer: tb_attach");
		return 1;
	}
	const char *why = NULL;
	if (tb_producer_error(p, &why) != 0) {
		fprintf(stderr, "c_producer: cannot record into bus %s: %s\n", bus ? bus : "(default)", why);
		tb_detach(p);
		return 1;
	}
	if (tb_producer_collector(p, &why) != TB_COLLECTOR_SERVING)
		fprintf(stderr, "c_producer: warning: bus %s: %s\n", bus ? bus : "(default)", why);
	tb_metric_t fill = tb_metric(p, "c_fill");
	for (long i = 0; i < count; i++) {
		uint64_t done = tb_now(p);
		uint64_t latency_ns = (uint64_t)(i % 1000 + 1) * 1000;
		tb_span(p, fill, done - latency_ns, done);
	}
	tb_producer_stats st;
	tb_producer_stats_get(p, &st);
	printf("%llu %llu %llu %llu\n", (unsigned long long)st.attempted, (unsigned long long)st.written,
	       (unsigned long long)st.dropped, (unsigned long long)st.folded);
	tb_detach(p);
	return st.dropped == 0 ? 0 : 1;
}
