/* output_json.c - `tailbus clock --json`: one object with the environment,
 * one entry per clock (TSC figures in ns and in cycles) and the advice.
 */
#include <inttypes.h>
#include <stdio.h>

#include "clock.h"

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			putchar('\\');
		if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

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
	json_str(run->c.r[i].name);
	printf(", \"available\": %s", r->available ? "true" : "false");
	if (!r->available) {
		printf(", \"why_not\": ");
		json_str(r->why_not);
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
	json_str(run->c.env.clocksource);
	printf(", \"clocksources\": ");
	json_str(run->c.env.clocksources);
	printf(", \"tsc_flags\": ");
	json_str(run->c.env.tsc_flags);
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
	json_str(run->advice);
	printf("}\n");
}
