/* clock.h - what the parts of `tailbus clock` share (main.c describes the
 * verb): one run's figures, verdicts and advice, and each part's entry.
 *
 * main.c parses the options, measures and judges (tailbus/clockcheck.h),
 * then has advice.c put the verdicts into words and output_text.c or
 * output_json.c print them. Only main.c calls across parts; the output
 * parts read the run and never change it.
 */
#ifndef TAILBUS_TOOLS_CLOCK_H
#define TAILBUS_TOOLS_CLOCK_H

#include <stdbool.h>
#include <stddef.h>

#include "tailbus/clockcheck.h"

#define ADVICE_MAX 2048

struct run {
	tb_clockcheck c;
	tb_clock_verdict v;
	bool json;
	char advice[ADVICE_MAX]; /* advice.c's paragraph */
};

/* advice.c: the verdicts in words. */
void clock_advise(struct run *run);
/* "vDSO", "system call" or "instruction": how row i is read. */
const char *clock_read_by(const struct run *run, size_t i);

/* output_text.c, output_json.c */
void clock_print_text(const struct run *run);
void clock_print_json(const struct run *run);

#endif
