/* replay.h - what the parts of `tailbus replay` share (main.c describes the
 * verb): its options, the state one run builds, and each part's entry.
 *
 * Data flows one way: main.c parses the options (options.c), reads and
 * merges the files (read.c, with correct.c for --correct-co and warmup.c
 * for the warm-up), then prints (output.c, prom_native.c), draws
 * (plots.c) and writes --output-log (output_log.c). Only main.c calls
 * across parts; the output parts read the state and never change it.
 *
 * Invariants of struct state: merge holds one tag per name, in the order
 * first met; info[i] (info_cap >= merge.ntags) is the replay-only side of
 * merge.tags[i]; rows and kept refer to tags by that index.
 */
#ifndef TAILBUS_TOOLS_REPLAY_H
#define TAILBUS_TOOLS_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../cli.h"
#include "tailbus/log.h"
#include "tailbus/log_merge.h"
#include "tailbus/warmup.h"

#define VERB "replay"

enum format { FMT_TEXT, FMT_JSON, FMT_CSV, FMT_HGRM, FMT_HGRM_CSV, FMT_PROM_NATIVE };
enum warmup_mode { WARMUP_NONE, WARMUP_FIXED, WARMUP_AUTO };

struct options {
	const char *tag; /* NULL: every tag */
	double start, end;
	bool start_wall, end_wall; /* start/end are seconds since the epoch */
	enum format format;
	const char *output_log;
	int digits; /* TB_LOG_MERGE_FIRST_LAYOUT, or --digits */
	double unit_ratio;
	int ticks;
	enum warmup_mode warmup;
	double warmup_s;
	bool series;
	int64_t co_interval; /* 0: no correction */
	const char *plot_dir;
	int schema; /* --format prom-native */
	bool schema_given;
	size_t max_tags; /* refuse a log of more tags */
};

/* --max-tags: a tag's histogram takes up to a few hundred KB (an hour's
 * range at 3 digits), so this many stay within a few GB. */
#define MAX_TAGS_DEFAULT 10000

/* File names a plot's subtitle lists before "and N more". */
#define SUBTITLE_FILES 3

/* What replay keeps of a tag besides its merge (tailbus/log_merge.h). */
struct tag_info {
	/* the files it was read from (for the plots): how many, the first few
	 * (indices into state.files), and 1 + the last one (files are read one
	 * after the other, so a change of file is a new one) */
	size_t nfiles, files[SUBTITLE_FILES], last_file1;
	tb_interval_figures **run; /* every selected interval, in time order */
	size_t nrun;
	tb_warmup_result warm;
};

/* One selected interval's figures and its tag. */
struct row {
	tb_interval_figures f;
	size_t tag;
};

struct file {
	const char *path;
	char *text; /* NULL: unreadable */
	size_t len;
	tb_log_open_loop_marks marks; /* its open-loop marks, read when first asked */
	int marks_read;               /* 0: not yet; 1: read; -1: no memory, ask the text */
	bool used;      /* an interval of it was selected */
	bool unmarked_corrected; /* --correct-co applied to a tag it does not mark */
	bool refused; /* --correct-co refused on an open-loop tag of this file */
	char refused_tag[TB_LOG_TAG_MAX]; /* the first tag refused */
};

/* PASS_ONE rows and merges everything; with --warmup, PASS_ROWS only takes
 * the rows and PASS_STEADY (same lines, same order) merges those not marked. */
enum pass { PASS_ONE, PASS_ROWS, PASS_STEADY };

/* A selected line, kept for --output-log by reference into its file text. */
struct kept {
	size_t tag;
	size_t file;
	double start_abs, length, max_field;
	const char *payload;
	size_t payload_len;
	size_t order;
};

struct state {
	struct options opt;
	tb_log_merge merge;
	struct tag_info *info;
	size_t info_cap;
	struct kept *kept;
	size_t nkept, kept_cap;
	struct file *files;
	size_t nfiles;
	struct row *rows;
	size_t nrows, rows_cap, next_row;
	tb_hist corrected; /* scratch for --correct-co */
	bool have_corrected;
	bool refused;
	double first_start_time;
	bool have_start_time;
	bool too_many_tags; /* a tag beyond --max-tags was met: reading stopped */
	int status;
};

/* Room for a tag escaped for a terminal (tb_cli_text). */
#define TAG_ESCAPED_MAX TB_CLI_ESCAPED_MAX(TB_LOG_TAG_MAX)

/* A tag as the reports name it. */
static inline const char *tag_label(const char *name)
{
	return *name ? name : "(untagged)";
}

/* options.c: 0, 1 (--help or --version done), or -EINVAL (said why). */
int replay_parse_options(int argc, char **argv, struct options *o);

/* read.c: load the files, then read their lines in one of the passes. */
void replay_read_files(struct state *st, char **paths, size_t n);
void replay_scan(struct state *st, enum pass pass);

/* correct.c: --correct-co, for read.c, and what main.c says of it. */
bool replay_co_refuses(struct state *st, struct file *f, const char *tag);
int replay_co_correct(struct state *st, const tb_hist *src);
bool replay_open_loop(struct file *f, const char *tag);
void replay_co_explain_refusal(const struct state *st);
void replay_co_warn_unmarked(const struct state *st);

/* warmup.c: each tag's rows in time order, and where its warm-up ends. */
int replay_group_rows(struct state *st);
int replay_decide_warmup(struct state *st);

/* output.c: the reports; prom_native.c: native Prometheus buckets. */
void replay_print_text(FILE *out, const struct state *st);
void replay_print_json(FILE *out, const struct state *st);
void replay_print_csv(FILE *out, const struct state *st);
void replay_print_series_csv(FILE *out, const struct state *st);
int replay_print_hgrm(FILE *out, const struct state *st, bool csv);
void replay_note_warmup(const struct state *st);
int replay_print_prom_native(FILE *out, const struct state *st);

/* plots.c: --plot DIR. */
int replay_write_plots(const struct state *st, FILE *note);

/* output_log.c: --output-log OUT. */
int replay_write_output_log(struct state *st);

#endif
