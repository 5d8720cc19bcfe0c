/* read.c - `tailbus replay`'s reading: files in, lines selected, tags merged.
 *
 * Each file is loaded whole (tb_log_load: "-" is standard input, gzip
 * data is inflated) and its text kept: --warmup reads the lines twice and
 * --output-log copies their payloads. A line is selected by --tag and by
 * --start/--end (offsets from its file's StartTime, or absolute times),
 * then merged into its tag (tailbus/log_merge.h), corrected first with
 * --correct-co (correct.c), and becomes a row of per-interval figures when
 * the warm-up rule, --series or the plots need them.
 *
 * A bad line or a missing file is reported in one sentence and skipped;
 * everything good is still used, and st->status says something was wrong.
 * Reader errors are reported in the first pass only: the second pass of
 * --warmup reads the same lines.
 *
 * A tag beyond --max-tags ends the reading: every tag holds a histogram,
 * and a log of more tags than expected would otherwise take all memory.
 *
 * Invariants: st->info has room for every tag of st->merge; rows are in
 * reading order, and the second pass meets them in the same order.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../cli.h"
#include "replay.h"
#include "tailbus/co.h"
#include "tailbus/codec.h"
#include "tailbus/grow.h"
#include "tailbus/log.h"
#include "tailbus/log_merge.h"

/* The tag's index in st->merge, created (shaped like `first`) when `first`
 * is given: -1 when absent and not created, -ENOMEM, or -EUSERS when it
 * would be one tag more than --max-tags (st->too_many_tags set). */
static long tag_index(struct state *st, const char *name, const tb_hist *first)
{
	long t = tb_log_merge_find(&st->merge, name);
	if (t >= 0 || !first)
		return t;
	if (st->merge.ntags >= st->opt.max_tags) {
		st->too_many_tags = true;
		return -EUSERS;
	}
	size_t had = st->info_cap;
	if (tb_grow_n((void **)&st->info, &st->info_cap, st->merge.ntags + 1, 64,
		      sizeof(*st->info)) < 0)
		return -ENOMEM;
	memset(st->info + had, 0, (st->info_cap - had) * sizeof(*st->info));
	t = tb_log_merge_tag_of(&st->merge, name, first);
	return t == -EINVAL ? -ENOMEM : t;
}

static int keep_line(struct state *st, size_t tag, size_t file, const tb_log_entry *e,
		     const char *payload, size_t payload_len)
{
	if (tb_grow_n((void **)&st->kept, &st->kept_cap, st->nkept + 1, 1024,
		      sizeof(*st->kept)) < 0)
		return -ENOMEM;
	st->kept[st->nkept] = (struct kept){tag, file, e->start_abs_sec, e->length_sec, e->max_field,
					    payload, payload_len, st->nkept};
	st->nkept++;
	return 0;
}

static int add_row(struct state *st, size_t tag, const tb_hist *h, const tb_log_entry *e)
{
	if (tb_grow_n((void **)&st->rows, &st->rows_cap, st->nrows + 1, 1024,
		      sizeof(*st->rows)) < 0)
		return -ENOMEM;
	struct row *row = &st->rows[st->nrows++];
	row->tag = tag;
	tb_interval_figures_of(h, e->start_abs_sec, e->length_sec, &row->f);
	return 0;
}

/* Per-interval rows feed the warm-up rule, --series and the plots only. */
static bool rows_needed(const struct state *st)
{
	return st->opt.warmup != WARMUP_NONE || st->opt.series || st->opt.plot_dir;
}

static bool selected(const struct state *st, const tb_log_entry *e)
{
	double from = st->opt.start_wall ? e->start_abs_sec : e->offset_sec;
	double to = st->opt.end_wall ? e->start_abs_sec : e->offset_sec;
	return (!st->opt.tag || !strcmp(st->opt.tag, e->tag)) && from >= st->opt.start &&
	       to <= st->opt.end;
}

/* An interval merged into tag `index` (tb_log_merge counted it): kept for
 * --output-log. */
static int merged(struct state *st, const struct file *f, size_t index, const tb_log_entry *e)
{
	return st->opt.output_log ? keep_line(st, index, (size_t)(f - st->files), e, e->payload,
					      e->payload_len)
				  : 0;
}

/* Count file `file` among those tag t was read from. */
static void note_file(struct tag_info *t, size_t file)
{
	if (t->last_file1 == file + 1)
		return;
	if (t->nfiles < SUBTITLE_FILES)
		t->files[t->nfiles] = file;
	t->nfiles++;
	t->last_file1 = file + 1;
}

/* A selected line with e->hist decoded: 0, or a negative errno; *merge_err
 * tells a merge failure (reported in the pass that merges) from the others
 * (reported in the first pass). */
static int take_entry(struct state *st, struct file *f, const tb_log_entry *e, enum pass pass,
		      bool *merge_err)
{
	if (st->opt.co_interval && replay_co_refuses(st, f, e->tag))
		return 0;
	const tb_hist *h = &e->hist;
	int rc = st->opt.co_interval ? replay_co_correct(st, &e->hist) : 0;
	if (rc < 0)
		return rc;
	if (st->opt.co_interval)
		h = &st->corrected;
	long index = tag_index(st, e->tag, h);
	if (index < 0)
		return (int)index;
	f->used = true;
	if (pass != PASS_STEADY)
		note_file(&st->info[index], (size_t)(f - st->files));
	if (pass == PASS_STEADY) {
		if (st->next_row >= st->nrows || st->rows[st->next_row++].f.warmup)
			return 0;
	} else if (rows_needed(st) && (rc = add_row(st, (size_t)index, h, e)) < 0) {
		return rc;
	}
	if (pass == PASS_ROWS)
		return 0;
	*merge_err = true;
	if ((rc = tb_log_merge_add(&st->merge, (size_t)index, h, e->start_abs_sec, e->length_sec)) < 0)
		return rc;
	return merged(st, f, (size_t)index, e);
}

/* The reader leaves payloads to us (defer_payload). A line outside the
 * selection is only vetted (its errors are reported all the same); a
 * selected one of a tag already met is added straight into the tag's merge
 * when nothing else needs its histogram, which spares a histogram's worth
 * of counters per line; any other is decoded and taken whole. 0, or a
 * negative errno: *bad_payload marks a malformed payload (*why says how),
 * *merge_err a merge failure. */
static int take_line(struct state *st, struct file *f, tb_log_entry *e, enum pass pass,
		     bool *bad_payload, bool *merge_err, const char **why)
{
	*bad_payload = *merge_err = false;
	int rc;
	if (!selected(st, e)) {
		/* the second pass reads the same lines: vetted already */
		rc = pass == PASS_STEADY ? 0 : tb_v2_check_base64(e->payload, e->payload_len, why);
		*bad_payload = rc < 0 && rc != -ENOMEM;
		return rc;
	}
	bool direct = pass == PASS_ONE && !st->opt.co_interval && !rows_needed(st);
	long index = direct ? tag_index(st, e->tag, NULL) : -1;
	if (index >= 0) {
		rc = tb_log_merge_add_payload(&st->merge, (size_t)index, e->payload, e->payload_len,
					      e->start_abs_sec, e->length_sec, why);
		if (rc != -ERANGE) {
			f->used |= rc == 0 || rc == -EOVERFLOW;
			if (rc == 0 || rc == -EOVERFLOW)
				note_file(&st->info[index], (size_t)(f - st->files));
			*merge_err = rc == -EOVERFLOW;
			*bad_payload = rc < 0 && rc != -EOVERFLOW && rc != -ENOMEM;
			return rc == 0 ? merged(st, f, (size_t)index, e) : rc;
		}
	}
	rc = tb_v2_decode_base64(e->payload, e->payload_len, &e->hist, why);
	if (rc < 0) {
		*bad_payload = rc != -ENOMEM;
		return rc;
	}
	return take_entry(st, f, e, pass, merge_err);
}

static void take_error(struct state *st, const struct file *f, const tb_log_entry *e, int rc)
{
	st->status = TB_EXIT_INPUT;
	if (rc == -EOVERFLOW)
		tb_cli_error(VERB, "%s: line %zu: tag '%s' would count more than 2^63 samples; "
			     "line not merged", f->path, e->line, e->tag);
	else if (rc == -E2BIG)
		tb_cli_error(VERB, "%s: line %zu: --correct-co %" PRId64 " would back-fill more than "
			     "%lld values for one bucket of tag '%s' (max %" PRId64 "); is the interval "
			     "in the log's unit?", f->path, e->line, st->opt.co_interval,
			     TB_CO_MAX_BACKFILL, e->tag, tb_hist_max(&e->hist));
	else
		tb_cli_error(VERB, "%s: line %zu: %s", f->path, e->line, strerror(-rc));
}

/* Read the selected lines of one file. Reader errors are reported in the
 * first pass only; the second pass sees the same lines. */
static void scan_file(struct state *st, struct file *f, enum pass pass)
{
	tb_log_reader r;
	tb_log_entry e;
	memset(&e, 0, sizeof(e));
	tb_log_reader_init(&r, f->text, f->len);
	r.defer_payload = true;
	bool first_pass = pass != PASS_STEADY;
	int rc;
	while ((rc = tb_log_reader_next(&r, &e)) != 0) {
		if (rc == -ENOMEM) {
			tb_cli_error(VERB, "%s: out of memory", f->path);
			st->status = TB_EXIT_INPUT;
			break;
		}
		if (rc < 0) {
			if (first_pass) {
				tb_cli_error(VERB, "%s: %s", f->path, r.err);
				st->status = TB_EXIT_INPUT;
			}
			continue;
		}
		bool bad_payload, merge_err;
		const char *why = "unknown";
		int taken = take_line(st, f, &e, pass, &bad_payload, &merge_err, &why);
		if (taken == -ENOMEM) {
			tb_cli_error(VERB, "%s: out of memory", f->path);
			st->status = TB_EXIT_INPUT;
			break;
		}
		if (st->too_many_tags) {
			tb_cli_error(VERB, "%s: line %zu: tag '%s' is one more than the %zu tags replay "
				     "holds; each tag keeps a histogram of its own (up to a few hundred KB): "
				     "--max-tags N raises the limit", f->path, e.line, e.tag,
				     st->opt.max_tags);
			st->status = TB_EXIT_INPUT;
			break;
		}
		if (bad_payload) {
			/* what the reader says of a line it decodes itself */
			if (first_pass) {
				tb_cli_error(VERB, "%s: line %zu: histogram payload: %s", f->path, r.line, why);
				st->status = TB_EXIT_INPUT;
			}
			continue;
		}
		if (taken < 0 && (first_pass || merge_err))
			take_error(st, f, &e, taken);
	}
	if (first_pass && r.have_start &&
	    (!st->have_start_time || r.start_time_sec < st->first_start_time)) {
		st->first_start_time = r.start_time_sec;
		st->have_start_time = true;
	}
	tb_log_entry_free(&e);
}

void replay_read_files(struct state *st, char **paths, size_t n)
{
	st->files = calloc(n ? n : 1, sizeof(*st->files));
	if (!st->files) {
		tb_cli_error(VERB, "out of memory");
		st->status = TB_EXIT_INPUT;
		return;
	}
	st->nfiles = n;
	bool stdin_read = false;
	for (size_t i = 0; i < n; i++) {
		struct file *f = &st->files[i];
		f->path = paths[i];
		if (!strcmp(f->path, TB_LOG_STDIN) && stdin_read) {
			tb_cli_error(VERB, "'-' (standard input) is given twice; it is read once");
			st->status = TB_EXIT_INPUT;
			continue;
		}
		stdin_read |= !strcmp(f->path, TB_LOG_STDIN);
		int rc = tb_log_load(f->path, TB_LOG_INFLATED_MAX, &f->text, &f->len);
		if (rc < 0) {
			tb_cli_error(VERB, "cannot read %s: %s", f->path, tb_log_load_strerror(rc));
			st->status = TB_EXIT_INPUT;
			f->text = NULL;
		}
	}
}

void replay_scan(struct state *st, enum pass pass)
{
	st->next_row = 0;
	for (size_t i = 0; i < st->nfiles && !st->too_many_tags; i++) {
		if (st->files[i].text)
			scan_file(st, &st->files[i], pass);
	}
}
