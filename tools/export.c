/* export.c - `tailbus export`: the buses' live intervals as a Prometheus /metrics.
 *
 *   tailbus export [--bus B]... [--dir D] [--listen ADDR:PORT] [--host NAME]
 *                  [--schema S] [--poll DURATION]
 *
 * A process of its own, never a thread of tailbusd: it maps each bus
 * read-only and reads the live area without a system call or a write
 * (tailbus/live.h), as `tailbus top` does, and its threads keep off the CPUs
 * the buses' drain threads are pinned to (tailbus/cpus.h; looked at again
 * once a second, as collectors come and go), so that serving scrapes takes
 * no time from a drain thread. The main thread polls the live areas (tailbus/prom_export.h);
 * libmicrohttpd's one internal thread serves every connection from an epoll
 * loop, so a slow or hostile client holds a connection, not the server.
 * Both take one mutex: a poll and a render never overlap.
 *
 * Limits that keep a bad client in its place: a connection idle for
 * CONNECTION_TIMEOUT_S is closed; a request whose headers pass
 * CONNECTION_MEMORY bytes is refused by libmicrohttpd; at most
 * CONNECTION_LIMIT connections are open at once (the open-files limit is
 * raised to its hard limit to allow them), and at most PER_IP_LIMIT from
 * one address, so that one client cannot hold them all and lock every
 * Prometheus out. Only GET and HEAD of /metrics are served.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "tailbus/bus.h"
#include "tailbus/cpus.h"
#include "tailbus/prom_export.h"
#include "tailbus/read_guard.h"
#include "tailbus/segment.h"

#define VERB "export"
#define DEFAULT_LISTEN "127.0.0.1:9477"
#define BUSES_MAX 64
#define CONNECTION_TIMEOUT_S 10
#define CONNECTION_LIMIT 4096
#define PER_IP_LIMIT 256
/* libmicrohttpd's per-connection pool: the request line and headers must fit. */
#define CONNECTION_MEMORY (32 * 1024)
#define LISTEN_BACKLOG 1024
#define HOST_MAX 256

static const tb_unit_spec poll_spec = {TB_UNIT_DURATION, TB_UNIT_MS, 10 * TB_UNIT_MS, 10 * TB_UNIT_S};

struct options {
	const char *bus[BUSES_MAX];
	int nbus;
	const char *dir, *listen, *host;
	int schema;
	int64_t poll_ns;
};

struct server {
	pthread_mutex_t lock;
	tb_prom_export *exp;
	unsigned long scrapes;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: tailbus export [--bus B]... [--dir D] [--listen ADDR:PORT] [--host NAME]\n"
		"                      [--schema S] [--poll DURATION]\n\n"
		"Serves http://ADDR:PORT/metrics for Prometheus: each metric's latency histogram\n"
		"(every interval the collector published since the exporter started), its event\n"
		"and fold counters, the bus's drops and the collector's health.\n"
		"  --bus B        a bus to follow (repeatable; default $TAILBUS_BUS, else 'default')\n"
		"  --dir D        where the buses are (default: as tailbusd looks)\n"
		"  --listen A:P   address and port (default %s: this machine only;\n"
		"                 0.0.0.0:9477 or [::]:9477 for a Prometheus elsewhere)\n"
		"  --host NAME    the host label of every series (default: this machine's name)\n"
		"  --schema S     native-histogram schema 0..8 (default %d: 2^S buckets an octave,\n"
		"                 relative error of a quantile under 2^(2^-S) - 1)\n"
		"  --poll D       how often the live areas are read (default 100ms)\n"
		"Protobuf (native and classic buckets) to a client whose Accept asks for it,\n"
		"otherwise the text format 0.0.4 (classic buckets). docs/cli.md has the details.\n",
		DEFAULT_LISTEN, TB_PROM_SCHEMA_DEFAULT);
}

/* "A.B.C.D:PORT" or "[V6]:PORT" into a socket address. */
static bool parse_listen(const char *arg, struct sockaddr_storage *ss, bool *v6)
{
	const char *colon = strrchr(arg, ':');
	char host[INET6_ADDRSTRLEN + 2];
	if (!colon || (size_t)(colon - arg) >= sizeof(host)) {
		tb_cli_bad_value(VERB, "listen", arg, "expected ADDRESS:PORT, e.g. %s", DEFAULT_LISTEN);
		return false;
	}
	memcpy(host, arg, (size_t)(colon - arg));
	host[colon - arg] = '\0';
	int64_t port;
	if (!tb_cli_parse_i64(colon + 1, &port) || port < 1 || port > 65535) {
		tb_cli_bad_value(VERB, "listen", arg, "the port must be 1..65535");
		return false;
	}
	memset(ss, 0, sizeof(*ss));
	size_t n = strlen(host);
	*v6 = n >= 2 && host[0] == '[' && host[n - 1] == ']';
	if (*v6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
		host[n - 1] = '\0';
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host + 1, &a->sin6_addr) == 1)
			return true;
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;
		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)port);
		if (inet_pton(AF_INET, host, &a->sin_addr) == 1)
			return true;
	}
	tb_cli_bad_value(VERB, "listen", arg, "'%s' is not a numeric IPv4 or [IPv6] address", host);
	return false;
}

static int parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longs[] = {
		{"bus", required_argument, 0, 'b'},    {"dir", required_argument, 0, 'd'},
		{"listen", required_argument, 0, 'l'}, {"host", required_argument, 0, 'H'},
		{"schema", required_argument, 0, 's'}, {"poll", required_argument, 0, 'p'},
		{"help", no_argument, 0, 'h'},         {"version", no_argument, 0, 'V'},
		{0, 0, 0, 0}};
	*o = (struct options){.listen = DEFAULT_LISTEN, .schema = TB_PROM_SCHEMA_DEFAULT,
			      .poll_ns = 100 * TB_UNIT_MS};
	int c;
	int64_t v;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", longs, NULL)) != -1) {
		switch (c) {
		case 'b':
			if (o->nbus == BUSES_MAX) {
				tb_cli_error(VERB, "at most %d buses", BUSES_MAX);
				return TB_EXIT_USAGE;
			}
			o->bus[o->nbus++] = optarg;
			break;
		case 'd': o->dir = optarg; break;
		case 'l': o->listen = optarg; break;
		case 'H': o->host = optarg; break;
		case 's':
			if (!tb_cli_parse_i64(optarg, &v) || v < TB_PROM_SCHEMA_MIN || v > TB_PROM_SCHEMA_MAX) {
				tb_cli_bad_value(VERB, "schema", optarg, "a schema is %d..%d",
						 TB_PROM_SCHEMA_MIN, TB_PROM_SCHEMA_MAX);
				return TB_EXIT_USAGE;
			}
			o->schema = (int)v;
			break;
		case 'p':
			if (!tb_cli_unit(VERB, "poll", optarg, &poll_spec, &o->poll_ns))
				return TB_EXIT_USAGE;
			break;
		case 'h': usage(stdout); return -1;
		case 'V': tb_cli_version(); return -1;
		default: tb_cli_bad_option(VERB, c, argv[optind - 1], NULL); return TB_EXIT_USAGE;
		}
	}
	if (!tb_cli_no_operands(VERB, argc, argv)) {
		return TB_EXIT_USAGE;
	}
	if (o->host && (!*o->host || strlen(o->host) >= HOST_MAX)) {
		tb_cli_bad_value(VERB, "host", o->host, "1 to %d characters", HOST_MAX - 1);
		return TB_EXIT_USAGE;
	}
	if (o->nbus == 0) {
		const char *env = getenv("TAILBUS_BUS");
		o->bus[o->nbus++] = env && *env ? env : "default";
	}
	return TB_EXIT_OK;
}

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type, void *data,
			     size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, data, mode);
	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(data);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	enum MHD_Result ok = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ok;
}

static enum MHD_Result plain(struct MHD_Connection *c, unsigned status, const char *text)
{
	return reply(c, status, "text/plain; charset=utf-8", (void *)text, strlen(text),
		     MHD_RESPMEM_PERSISTENT);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			      const char *version, const char *upload_data, size_t *upload_data_size,
			      void **req_cls)
{
	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	(void)req_cls;
	struct server *srv = cls;
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return plain(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
	if (strcmp(url, "/metrics"))
		return plain(c, MHD_HTTP_NOT_FOUND, "tailbus export serves /metrics\n");
	const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	bool pb = tb_prom_accepts_protobuf(accept);
	tb_prom_buf out = {0};
	pthread_mutex_lock(&srv->lock);
	int rc = tb_prom_export_render(srv->exp, pb, mono_ns(), &out);
	srv->scrapes++;
	pthread_mutex_unlock(&srv->lock);
	if (rc < 0) {
		tb_prom_buf_free(&out);
		return plain(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	}
	return reply(c, MHD_HTTP_OK, pb ? TB_PROM_PB_TYPE : TB_PROM_TEXT_TYPE, out.data, out.len,
		     MHD_RESPMEM_MUST_FREE);
}

static void raise_open_files(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static struct MHD_Daemon *start_http(struct server *srv, const struct sockaddr_storage *ss, bool v6)
{
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL;
	if (v6)
		flags |= MHD_USE_IPv6;
	return MHD_start_daemon(flags, 0, NULL, NULL, handle, srv,
				MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)ss,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONNECTION_TIMEOUT_S,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)CONNECTION_LIMIT,
				MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)PER_IP_LIMIT,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY,
				MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)LISTEN_BACKLOG,
				MHD_OPTION_END);
}

static int open_buses(const struct options *o, tb_seg *segs, tb_prom_export *exp)
{
	for (int i = 0; i < o->nbus; i++) {
		const char *why = "unknown error";
		int rc = tb_seg_open(&segs[i], o->dir, o->bus[i], NULL, TB_SEG_READONLY, &why);
		if (rc < 0) {
			tb_cli_error(VERB, "bus '%s': %s (%s)", o->bus[i], why, strerror(-rc));
			return rc;
		}
		(void)tb_read_guard_add(&segs[i]); /* a file cut under us: zeros, then mapped afresh */
		rc = tb_prom_export_add_bus(exp, &segs[i], o->bus[i]);
		if (rc < 0) {
			tb_cli_error(VERB, "bus '%s': %s", o->bus[i], strerror(-rc));
			return rc;
		}
	}
	return 0;
}

/* Keep every thread of the exporter off the CPUs the drain threads of the
 * buses' serving collectors are each pinned to (tailbus/cpus.h), starting
 * from the CPUs it was given; what it keeps off is said on stderr when it
 * changes. A collector whose threads cannot be read (another PID namespace,
 * /proc mounted hidepid) is said once. A set that could not be applied is
 * tried again at the next call. */
struct cpu_watch {
	tb_cpus allowed; /* the CPUs the exporter was given */
	tb_cpus off;     /* the drain CPUs it keeps off now */
	int32_t unseen;  /* the last collector whose threads could not be read */
};

static void keep_off_drains(const tb_seg *segs, int nbus, struct cpu_watch *w)
{
	tb_cpus now;
	memset(&now, 0, sizeof(now));
	for (int i = 0; i < nbus; i++) {
		int32_t pid;
		int rc = tb_bus_drain_cpus(&segs[i], mono_ns(), &now, &pid);
		if (rc < 0 && pid != w->unseen) {
			tb_cli_error(VERB, "cannot see the threads of the collector of %s (pid %d: %s): "
				     "its drain CPUs are not kept clear", segs[i].path, (int)pid, strerror(-rc));
			w->unseen = pid;
		}
	}
	if (!memcmp(&now, &w->off, sizeof(now)))
		return;
	char list[256];
	int rc = tb_cpus_keep_off(&w->allowed, &now);
	if (rc < 0) {
		tb_cli_error(VERB, "cannot keep off the drain threads' CPUs: %s", strerror(-rc));
		return;
	}
	if (rc == 1)
		fprintf(stderr, "tailbus export: keeping off CPU(s) %s, the drain threads'\n",
			tb_cpus_count(&now) ? tb_cpus_format(&now, list, sizeof(list)) : "none");
	else
		fprintf(stderr, "tailbus export: the drain threads hold every CPU it may use (%s)\n",
			tb_cpus_format(&now, list, sizeof(list)));
	w->off = now;
}

/* Poll until a signal; say when the live areas cannot be read, and when
 * they can again; once a second, follow the drain threads' CPUs. */
/* A segment file cut under the exporter (the read guard covered a fault
 * with zeros) is mapped afresh; one replaced by tailbusd --fresh (another
 * file at its path, looked for only while its collector is not serving, so
 * a healthy poll makes no system call) is followed, each metric's sums
 * going on under its name. The swap is under the server's lock: the HTTP
 * thread renders from the same segments. */
static void follow_segments(struct server *srv, const struct options *o, tb_seg *segs)
{
	for (int i = 0; i < o->nbus; i++) {
		bool cut = tb_read_guard_cut(&segs[i]), other = false;
		if (cut || tb_bus_collector_state((const tb_seg_header *)segs[i].base, mono_ns(), NULL) !=
				   TB_COLLECTOR_SERVING) {
			struct stat now, ours;
			other = stat(segs[i].path, &now) == 0 && fstat(segs[i].fd, &ours) == 0 &&
				(now.st_ino != ours.st_ino || now.st_dev != ours.st_dev);
		}
		tb_seg fresh;
		const char *why = NULL;
		if ((!cut && !other) || tb_seg_open(&fresh, o->dir, o->bus[i], NULL, TB_SEG_READONLY, &why) < 0)
			continue; /* a cut not yet mended: looked at again next time */
		pthread_mutex_lock(&srv->lock);
		tb_read_guard_remove(&segs[i]);
		tb_seg_close(&segs[i]);
		segs[i] = fresh;
		(void)tb_read_guard_add(&segs[i]);
		int rc = other ? tb_prom_export_replace_bus(srv->exp, &segs[i]) : 0;
		pthread_mutex_unlock(&srv->lock);
		tb_cli_error(VERB, "bus '%s': its segment file was %s; mapped afresh%s", o->bus[i],
			     other ? "replaced (tailbusd --fresh?)" : "cut under the exporter",
			     rc < 0 ? " (out of memory: its sums start again)" : "");
	}
}

static void poll_loop(struct server *srv, const struct options *o, tb_seg *segs,
		      struct cpu_watch *cpus)
{
	int last = 0;
	uint64_t passed_said = 0;
	struct timespec ts = {(time_t)(o->poll_ns / TB_UNIT_S), (long)(o->poll_ns % TB_UNIT_S)};
	int64_t polls_a_second = TB_UNIT_S / o->poll_ns, n = 0;
	while (!stop) {
		if (cpus && ++n % (polls_a_second > 0 ? polls_a_second : 1) == 0)
			keep_off_drains(segs, o->nbus, cpus);
		follow_segments(srv, o, segs);
		pthread_mutex_lock(&srv->lock);
		int rc = tb_prom_export_poll(srv->exp);
		pthread_mutex_unlock(&srv->lock);
		/* intervals passed over as corrupt, every poll that had any;
		 * other errors when they change */
		const char *newest;
		uint64_t passed = tb_prom_export_passed_over(srv->exp, &newest);
		if (passed != passed_said)
			tb_cli_error(VERB, "%llu interval%s passed over: a histogram in the live area is "
				     "corrupt (the newest: %s; %llu in all)",
				     (unsigned long long)(passed - passed_said), passed - passed_said == 1 ? "" : "s",
				     newest, (unsigned long long)passed);
		passed_said = passed;
		if (rc == -EBADMSG)
			rc = 0; /* said above */
		if (rc != last && rc == -ENOMEM)
			tb_cli_error(VERB, "reading the live areas: out of memory");
		else if (rc != last && rc)
			tb_cli_error(VERB, "reading a live area: %s: %s", tb_prom_export_where(srv->exp),
				     rc == -EAGAIN ? "no stable copy (a collector stuck mid-write?)"
						   : strerror(-rc));
		else if (rc != last)
			tb_cli_error(VERB, "live areas readable again");
		last = rc;
		nanosleep(&ts, NULL);
	}
}

int tb_cmd_export(int argc, char **argv)
{
	struct options o;
	int rc = parse_options(argc, argv, &o);
	if (rc)
		return rc < 0 ? TB_EXIT_OK : rc;
	struct sockaddr_storage ss;
	bool v6;
	if (!parse_listen(o.listen, &ss, &v6))
		return TB_EXIT_USAGE;
	char host[HOST_MAX];
	if (!o.host) {
		if (gethostname(host, sizeof(host)) < 0 || !*host)
			snprintf(host, sizeof(host), "unknown");
		host[sizeof(host) - 1] = '\0';
		o.host = host;
	}
	struct server srv = {.lock = PTHREAD_MUTEX_INITIALIZER};
	if (tb_prom_export_new(&srv.exp, o.host, o.schema) < 0) {
		tb_cli_error(VERB, "out of memory");
		return TB_EXIT_INPUT;
	}
	tb_seg segs[BUSES_MAX];
	memset(segs, 0, sizeof(segs));
	int exit_status = TB_EXIT_INPUT;
	(void)tb_read_guard_install();
	if (open_buses(&o, segs, srv.exp) < 0)
		goto out;
	tb_prom_export_poll(srv.exp); /* the baseline, before the first scrape */
	/* off the drain CPUs before the HTTP thread starts, which inherits it */
	struct cpu_watch cpus;
	memset(&cpus, 0, sizeof(cpus));
	bool follow_cpus = tb_cpus_allowed(&cpus.allowed) == 0;
	if (follow_cpus)
		keep_off_drains(segs, o.nbus, &cpus);
	else
		tb_cli_error(VERB, "cannot read its own CPUs (more than %d?): drain CPUs not kept clear",
			     TB_CPUS_MAX);
	raise_open_files();
	signal(SIGPIPE, SIG_IGN);
	struct MHD_Daemon *d = start_http(&srv, &ss, v6);
	if (!d) {
		tb_cli_error(VERB, "cannot listen on %s (in use, or not an address of this machine?)",
			     o.listen);
		goto out;
	}
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	fprintf(stderr, "tailbus export: serving http://%s/metrics (host \"%s\", schema %d)\n", o.listen,
		o.host, o.schema);
	poll_loop(&srv, &o, segs, follow_cpus ? &cpus : NULL);
	MHD_stop_daemon(d);
	fprintf(stderr, "tailbus export: stopped after %lu scrapes\n", srv.scrapes);
	exit_status = TB_EXIT_OK;
out:
	tb_prom_export_free(srv.exp);
	for (int i = 0; i < o.nbus; i++) {
		tb_read_guard_remove(&segs[i]);
		if (segs[i].base)
			tb_seg_close(&segs[i]);
	}
	return exit_status;
}
