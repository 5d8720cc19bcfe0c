/* correct.c - `tailbus replay --correct-co I`: which tags may be corrected,
 * and the correction of each interval.
 *
 * Every bucket (its highest equivalent value v, count c) of each interval
 * is re-recorded as c samples of v back-filled with expected interval I
 * (tailbus/co.h; what Java's copyCorrectedForCoordinatedOmission does).
 * That is only right for data from a closed-loop client, so it is refused
 * on a tag its log marks open-loop (every tag of a tailbusd log;
 * tb_log_open_loop), except on closed-loop tags (tb_log_tag_is_closed_loop:
 * what `tailbus load --closed` records from the actual send). A refusal is said once per
 * file; a file with no mark at all gets a warning that the tool cannot
 * check what it corrects.
 *
 * Invariants: a file's marks are read once, when first asked (f->marks);
 * st->corrected is one scratch histogram, reused while the
 * intervals' layouts agree.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../cli.h"
#include "replay.h"
#include "tailbus/co.h"
#include "tailbus/hist.h"
#include "tailbus/log.h"

/* Does f mark tag open-loop? Its marks are read once, the first time. */
bool replay_open_loop(struct file *f, const char *tag)
{
	if (!f->marks_read)
		f->marks_read = tb_log_open_loop_scan(f->text, f->len, &f->marks) == 0 ? 1 : -1;
	return f->marks_read > 0 ? tb_log_open_loop_marked(&f->marks, tag)
				 : tb_log_open_loop(f->text, f->len, tag);
}

/* Whether --correct-co must leave tag of file f alone (it is marked
 * open-loop; the refusal is noted for replay_co_explain_refusal). */
bool replay_co_refuses(struct state *st, struct file *f, const char *tag)
{
	if (tb_log_tag_is_closed_loop(tag))
		return false;
	if (!replay_open_loop(f, tag)) {
		f->unmarked_corrected = true;
		return false;
	}
	if (!f->refused)
		snprintf(f->refused_tag, sizeof(f->refused_tag), "%s", tag);
	f->refused = st->refused = true;
	return true;
}

/* st->corrected = src corrected (tb_co_copy_corrected), in a scratch
 * histogram kept between lines while their layouts agree. */
int replay_co_correct(struct state *st, const tb_hist *src)
{
	tb_hist *c = &st->corrected;
	int rc = 0;
	if (st->have_corrected && tb_hist_same_layout(c, src)) {
		tb_hist_reset(c);
	} else {
		if (st->have_corrected)
			tb_hist_free(c);
		st->have_corrected = false;
		if ((rc = tb_hist_init_like(c, src)) < 0)
			return rc;
		st->have_corrected = true;
	}
	return tb_co_copy_corrected(c, src, st->opt.co_interval);
}

/* The refusal, once per open-loop file that had a selected tag to correct. */
void replay_co_explain_refusal(const struct state *st)
{
	for (size_t i = 0; i < st->nfiles; i++) {
		const struct file *f = &st->files[i];
		if (!f->refused)
			continue;
		char what[TB_LOG_TAG_MAX + 8];
		snprintf(what, sizeof(what), *f->refused_tag ? "tag '%s'" : "the untagged lines%s",
			 f->refused_tag);
		tb_cli_error(VERB, "--correct-co refused for %s of %s: the log is marked open-loop "
			     "(latencies measured from the intended send time already count the wait "
			     "behind a stall; back-filling would count it twice). Only closed-loop "
			     "data may be corrected: tags ending in '%s' (select them with --tag) or "
			     "logs of closed-loop tools.", what, f->path, TB_CLOSED_LOOP_SUFFIX);
	}
}

void replay_co_warn_unmarked(const struct state *st)
{
	for (size_t i = 0; i < st->nfiles; i++) {
		const struct file *f = &st->files[i];
		if (f->unmarked_corrected)
			tb_cli_error(VERB, "warning: %s has no open-loop mark; --correct-co assumes its "
				     "latencies come from a closed-loop client (timed from the actual "
				     "send), which this tool cannot check", f->path);
	}
}
