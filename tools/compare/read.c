/* read.c - `tailbus compare`'s runs: each file's intervals merged per tag
 * (tailbus/log_merge.h, with the layout of the first, as replay does), and
 * where it was measured (its header's env lines).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "tailbus/log.h"

/* The env lines of a log header (tailbusd's) that say where a run was measured. */
static const char *const env_keys[] = {"hostname", "kernel", "cpu_model", "cpus", "clocksource",
				       "governor", "commit"};

/* Merge every interval of the file, per tag. 0; -1 after saying what was
 * wrong with some lines; READ_FAILED when the file cannot be read at all. */
#define READ_FAILED (-2)
static int read_run(struct run *r, const char *tag)
{
	char *text;
	size_t len;
	tb_log_merge_init(&r->merge, TB_LOG_MERGE_FIRST_LAYOUT);
	int rc = tb_log_load(r->path, TB_LOG_INFLATED_MAX, &text, &len);
	if (rc < 0) {
		tb_cli_error(VERB, "cannot read %s: %s; run left out", r->path, tb_log_load_strerror(rc));
		return READ_FAILED;
	}
	tb_log_env_summary(text, len, env_keys, sizeof(env_keys) / sizeof(env_keys[0]), r->env,
			   sizeof(r->env));
	tb_log_reader rd;
	tb_log_entry e;
	memset(&e, 0, sizeof(e));
	tb_log_reader_init(&rd, text, len);
	int status = 0;
	while ((rc = tb_log_reader_next(&rd, &e)) != 0) {
		if (rc == -ENOMEM)
			break;
		if (rc < 0) {
			tb_cli_error(VERB, "%s: %s", r->path, rd.err);
			status = -1;
			continue;
		}
		if (tag && strcmp(tag, e.tag))
			continue;
		long t = tb_log_merge_tag_of(&r->merge, e.tag, &e.hist);
		if (t < 0) {
			rc = -ENOMEM;
			break;
		}
		if ((rc = tb_log_merge_add(&r->merge, (size_t)t, &e.hist, e.start_abs_sec,
					   e.length_sec)) < 0) {
			tb_cli_error(VERB, "%s: line %zu: cannot merge tag '%s': %s", r->path, e.line,
				     e.tag, strerror(-rc));
			status = -1;
		}
	}
	if (rc == -ENOMEM) {
		tb_cli_error(VERB, "%s: out of memory", r->path);
		status = -1;
	}
	tb_log_entry_free(&e);
	free(text);
	return status;
}

void cmp_free_sides(struct side *sides)
{
	for (int s = 0; s < SIDES; s++) {
		for (size_t i = 0; i < sides[s].nruns; i++) {
			tb_log_merge_free(&sides[s].runs[i].merge);
		}
		free(sides[s].runs);
	}
}

/* Read every run; a file that cannot be read is left out (and said). */
int cmp_read_sides(const struct options *o, struct side *sides)
{
	int status = TB_EXIT_OK;
	bool stdin_read = false;
	for (int s = 0; s < SIDES; s++) {
		sides[s].runs = calloc(o->nfiles[s], sizeof(*sides[s].runs));
		if (!sides[s].runs)
			return -ENOMEM;
		for (size_t i = 0; i < o->nfiles[s]; i++) {
			struct run *r = &sides[s].runs[sides[s].nruns];
			r->path = o->files[s][i];
			bool is_stdin = !strcmp(r->path, TB_LOG_STDIN);
			if (is_stdin && stdin_read) {
				tb_cli_error(VERB, "'-' (standard input) is given twice; it is read once, "
					     "the second run left out");
				status = TB_EXIT_INPUT;
				continue;
			}
			stdin_read |= is_stdin;
			int rc = read_run(r, o->tag);
			if (rc < 0)
				status = TB_EXIT_INPUT;
			if (rc != READ_FAILED)
				sides[s].nruns++;
		}
	}
	return status;
}
