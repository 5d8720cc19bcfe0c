/* output_log.c - `tailbus replay --output-log OUT`: the selected intervals
 * as one valid interval log.
 *
 * The lines are rewritten with their payloads untouched, sorted by start
 * time (ties in reading order), tags kept, relative to the earliest
 * StartTime of the inputs. The header keeps what the inputs said of their
 * data: which tags are open-loop (the whole-log mark when every tag is,
 * else one per-tag mark per open-loop tag), which input file each tag came
 * from (provenance comment lines), and the '#[env ...]' lines of the first
 * input that has them (with a warning when another input's differ).
 *
 * Invariants: the header and the lines are formatted by the lib
 * (tb_log_format_header_lines, tb_log_format_line_base64); a write error is
 * one sentence and a non-zero exit status.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cli.h"
#include "replay.h"
#include "tailbus/env.h"
#include "tailbus/log.h"
#include "tailbus/log_merge.h"
#include "tailbus/report.h"

/* HdrHistogram_c reads header lines 127 bytes at a time (env.h). */
#define HEADER_LINE_MAX TB_ENV_HEADER_LINE_MAX
/* Room for the header's own lines, beside what the inputs said. */
#define HEADER_MAX 1024

static int by_start(const void *a, const void *b)
{
	const struct kept *x = a, *y = b;
	if (x->start_abs != y->start_abs)
		return x->start_abs < y->start_abs ? -1 : 1;
	return x->order < y->order ? -1 : (x->order > y->order);
}

/* used[t * nfiles + i]: tag t has a kept line from file i. NULL: no memory. */
static bool *tag_sources(const struct state *st)
{
	bool *used = calloc(st->merge.ntags * st->nfiles + 1, sizeof(*used));
	for (size_t i = 0; used && i < st->nkept; i++)
		used[st->kept[i].tag * st->nfiles + st->kept[i].file] = true;
	return used;
}

/* The open-loop marks: the whole-log mark when every written tag is open-loop
 * in an input it came from, else one per-tag mark per such tag. */
static void write_open_loop_marks(FILE *f, struct state *st, const bool *used)
{
	size_t written = 0, open = 0;
	bool *is_open = calloc(st->merge.ntags + 1, sizeof(*is_open));
	if (!is_open) {
		fprintf(f, "%s\n", TB_OPEN_LOOP_MARK); /* refusing too much is the safe side */
		return;
	}
	for (size_t t = 0; t < st->merge.ntags; t++) {
		bool any = false;
		for (size_t i = 0; i < st->nfiles; i++) {
			if (!used[t * st->nfiles + i])
				continue;
			any = true;
			is_open[t] |= replay_open_loop(&st->files[i], st->merge.tags[t].name);
		}
		written += any;
		open += is_open[t];
	}
	if (open && open == written) {
		fprintf(f, "%s\n", TB_OPEN_LOOP_MARK);
	} else {
		char line[TB_LOG_TAG_MAX + sizeof(TB_OPEN_LOOP_TAG_PREFIX) + 2];
		for (size_t t = 0; t < st->merge.ntags; t++) {
			if (is_open[t] && tb_log_format_open_loop_tag(line, sizeof(line), st->merge.tags[t].name) > 0)
				fputs(line, f);
		}
	}
	free(is_open);
}

static void write_sources(FILE *f, const struct state *st, const bool *used)
{
	char line[HEADER_LINE_MAX + 1];
	for (size_t t = 0; t < st->merge.ntags; t++) {
		for (size_t i = 0; i < st->nfiles; i++) {
			if (used[t * st->nfiles + i] &&
			    tb_log_format_source(line, sizeof(line), st->merge.tags[t].name, st->files[i].path) > 0)
				fputs(line, f);
		}
	}
}

/* The env lines of the first used input that has them; a warning when
 * another used input was measured elsewhere (its env lines differ). */
static void write_env(FILE *f, const struct state *st)
{
	const struct file *from = NULL;
	for (size_t i = 0; i < st->nfiles; i++) {
		const struct file *g = &st->files[i];
		size_t pos = 0;
		tb_log_env_field field;
		if (!g->used || !tb_log_env_next(g->text, g->len, &pos, &field))
			continue;
		if (!from) {
			from = g;
			do
				fprintf(f, "%.*s\n", (int)field.line_len, field.line);
			while (tb_log_env_next(g->text, g->len, &pos, &field));
			continue;
		}
		if (!tb_log_env_same(from->text, from->len, g->text, g->len))
			tb_cli_error(VERB, "warning: %s and %s were measured on different machines or "
				     "builds (their env lines differ); %s keeps those of %s", from->path,
				     g->path, st->opt.output_log, from->path);
	}
}

/* What the inputs said of their data, as comment lines for the header (a
 * malloc'd string into *lines). 0 or -ENOMEM. */
static int header_lines(struct state *st, const bool *used, char **lines)
{
	size_t len;
	*lines = NULL;
	FILE *m = open_memstream(lines, &len);
	if (!m)
		return -ENOMEM;
	write_open_loop_marks(m, st, used);
	write_sources(m, st, used);
	write_env(m, st);
	if (fclose(m) != 0) {
		free(*lines);
		*lines = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* The header, then the kept lines sorted by start time. 0 or -ENOMEM. */
static int write_log(FILE *f, struct state *st, const char *lines)
{
	double base = st->have_start_time ? st->first_start_time : 0.0;
	size_t cap = strlen(lines) + HEADER_MAX;
	for (size_t i = 0; i < st->nkept; i++) {
		size_t bound = tb_log_line_base64_bound(st->kept[i].payload_len);
		cap = bound > cap ? bound : cap;
	}
	char *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	int n = tb_log_format_header_lines(buf, cap, "Written by tailbus replay", lines, base, base);
	if (n > 0)
		fwrite(buf, 1, (size_t)n, f);
	qsort(st->kept, st->nkept, sizeof(*st->kept), by_start);
	for (size_t i = 0; i < st->nkept; i++) {
		const struct kept *k = &st->kept[i];
		n = tb_log_format_line_base64(buf, cap, st->merge.tags[k->tag].name, k->start_abs - base,
					      k->length, k->max_field, k->payload, k->payload_len);
		if (n > 0)
			fwrite(buf, 1, (size_t)n, f);
	}
	free(buf);
	return 0;
}

int replay_write_output_log(struct state *st)
{
	bool *used = tag_sources(st);
	FILE *f = used ? fopen(st->opt.output_log, "w") : NULL;
	char *lines = NULL;
	int err = 0;
	if (!f)
		err = used ? errno : ENOMEM;
	else if (header_lines(st, used, &lines) < 0 || write_log(f, st, lines) < 0)
		err = ENOMEM;
	free(used);
	free(lines);
	if (err) {
		tb_cli_error(VERB, "cannot write %s: %s", st->opt.output_log, strerror(err));
		if (f)
			fclose(f);
		return -err;
	}
	if (fclose(f) != 0) {
		tb_cli_error(VERB, "cannot write %s: %s", st->opt.output_log, strerror(errno));
		return -EIO;
	}
	return 0;
}
