// cpp_producer.cpp - a C++ engine that records latencies into a tailbus bus.
//
//     cpp_producer [BUS [COUNT]]      (BUS: $TAILBUS_BUS, else "default"; COUNT: 10000)
//
// tailbus/producer.h is a C header with an extern "C" API; this file shows
// one way to hold its handle in C++: a small RAII class that attaches in its
// constructor and detaches in its destructor, one per engine thread, with
// the hot path (tb_span) inline. It records COUNT requests of metric
// "cpp_fill" whose latencies are 1, 2, ... 1000 us in turn, so a reader of
// the collector's log can check what it finds: COUNT events, the largest
// 1000 us (once COUNT reaches 1000).
//
// It warns when no collector serves the bus (a mistyped name, or tailbusd
// not started: the events wait in the ring, and a full ring folds or drops
// them), prints "attempted written dropped folded", and exits 1 when the
// bus could not be reached (tb_producer_error says why) or an event was
// lost.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <tailbus/producer.h>

namespace {

class Recorder {
public:
	Recorder(const char *bus, const char *thread_name) : p_(tb_attach(bus, thread_name)) {}
	~Recorder()
	{
		if (p_)
			tb_detach(p_);
	}
	Recorder(const Recorder &) = delete;
	Recorder &operator=(const Recorder &) = delete;

	// Empty when the handle records into a bus; else why it does not (a
	// handle that cannot reach its bus still takes events and counts them).
	std::string error() const
	{
		if (!p_)
			return "out of memory";
		const char *why = nullptr;
		return tb_producer_error(p_, &why) == 0 ? std::string() : std::string(why ? why : "unknown");
	}
	// Empty while a collector serves the bus; else what is the matter.
	std::string collector() const
	{
		const char *why = nullptr;
		return tb_producer_collector(p_, &why) == TB_COLLECTOR_SERVING ? std::string()
									: std::string(why ? why : "unknown");
	}
	tb_metric_t metric(const char *name) { return tb_metric(p_, name); }
	std::uint64_t now() const { return tb_now(p_); }
	void span(tb_metric_t m, std::uint64_t intended, std::uint64_t done) { tb_span(p_, m, intended, done); }
	tb_producer_stats stats() const
	{
		tb_producer_stats st = {};
		tb_producer_stats_get(p_, &st);
		return st;
	}

private:
	tb_producer *p_;
};

} // namespace

int main(int argc, char **argv)
{
	const char *bus = argc > 1 ? argv[1] : nullptr;
	long count = argc > 2 ? std::strtol(argv[2], nullptr, 10) : 10000;
	if (argc > 3 || count <= 0) {
		std::fprintf(stderr, "usage: cpp_producer [BUS [COUNT]]\n");
		return 2;
	}
	Recorder rec(bus, "cpp-example");
	std::string err = rec.error();
	if (!err.empty()) {
		std::fprintf(stderr, "cpp_producer: cannot record into bus %s: %s\n",
			     bus ? bus : "(default)", err.c_str());
		return 1;
	}
	std::string unserved = rec.collector();
	if (!unserved.empty())
		std::fprintf(stderr, "cpp_producer: warning: bus %s: %s\n", bus ? bus : "(default)",
			     unserved.c_str());
	tb_metric_t fill = rec.metric("cpp_fill");
	for (long i = 0; i < count; i++) {
		std::uint64_t done = rec.now();
		std::uint64_t latency_ns = static_cast<std::uint64_t>(i % 1000 + 1) * 1000;
		rec.span(fill, done - latency_ns, done);
	}
	tb_producer_stats st = rec.stats();
	std::printf("%llu %llu %llu %llu\n", static_cast<unsigned long long>(st.attempted),
		    static_cast<unsigned long long>(st.written), static_cast<unsigned long long>(st.dropped),
		    static_cast<unsigned long long>(st.folded));
	return st.dropped == 0 ? 0 : 1;
}
