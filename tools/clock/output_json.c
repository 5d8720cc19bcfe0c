/* output_json.c - `tailbus clock --json`: one object with the environment,
 * one entry per clock (TSC figures in ns and in cycles) and the advice.
 */
#include <inttypes.h>
#include <stdio.h>

#include "clock.h"
#include "tailbus/json.h"

static void json_raw(const struct run *run, size_t i, const char *key, int64_t raw)
{
	printf(", \"%s_ns\": %.3f", key, tb_clockcheck_ns(&run->c, i, raw));
	if (tb_clockcheck_is_tsc(run->c.r[i].kind))
		printf(", \"%s_cycles\": %" PRId64, key, raw);
}

static void json_clock(const struct run *run, size_t i)
{
	const tb_clock_result *r = &run->c.r[i];
	printf("{\"name\": ");
	tb_json_string(stdout, run->c.r[i].name);
	printf(", \"available\": %s", r->available ? "true" : "false");
	if (!r->available) {
		printf(", \"why_not\": ");
		tb_json_string(stdout, r->why_not);
		putchar('}');
		return;
	}
	printf(", \"used_by_tb_now\": %s, \"read_by\": \"%s\", \"system_call\": %s",
	       i == run->v.use ? "true" : "false", clock_read_by(run, i), run->v.syscall[i] ? "true" : "false");
	printf(", \"resolution_ns\": %.3f, \"cost_ns\": %.3f", r->res_ns, r->cost_ns);
	if (tb_clockcheck_is_tsc(run->c.r[i].kind))
		printf(", \"cost_cycles\": %.1f", r->cost_ns * run->c.tsc_hz / 1e9);
	json_raw(run, i, "p50", r->p50);
	json_raw(run, i, "p99", r->p99);
	json_raw(run, i, "max", r->max);
	if (r->min_nonzero)
		json_raw(run, i, "min_nonzero", r->min_nonzero);
	else
		printf(", \"min_nonzero_ns\": null");
	printf(", \"backwards\": %" PRId64 "}", r->backwards);
}

void clock_print_json(const struct run *run)
{
	printf("{\"clocksource\": ");
	tb_json_string(stdout, run->c.env.clocksource);
	printf(", \"clocksources\": ");
	tb_json_string(stdout, run->c.env.clocksources);
	printf(", \"tsc_flags\": ");
	tb_json_string(stdout, run->c.env.tsc_flags);
	printf(", \"tsc_invariant\": %s, \"vdso\": %s, \"samples\": %" PRId64,
	       run->v.tsc_invariant ? "true" : "false", run->c.vdso ? "true" : "false", run->c.samples);
	if (run->c.tsc_hz > 0)
		printf(", \"tsc_hz\": %.0f", run->c.tsc_hz);
	else
		printf(", \"tsc_hz\": null");
	printf(", \"pinned_cpu\": %d, \"syscall_ns\": %.3f, \"clocks\": [", run->c.pinned_cpu,
	       run->c.r[run->c.count - 1].cost_ns);
	for (size_t i = 0; i < run->c.count; i++) {
		if (i)
			printf(", ");
		json_clock(run, i);
	}
	printf("], \"recommendation\": ");
	tb_json_string(stdout, run->advice);
	printf("}\n");
}
