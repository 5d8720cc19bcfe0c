/* log_merge.c - intervals merged per tag (tailbus/log_merge.h).
 *
 * A tag's histogram starts at the smallest H its L allows (2L) and grows to
 * each merged interval's max, never to the H the interval declares: its
 * counts end at the largest value seen. layout_highest follows the H that
 * a merge starting from the first interval's layout would have: it starts
 * there and, as tb_hist_add_growing grows only to a max beyond H, it is
 * the larger of itself and the grown histogram's H after every merge.
 *
 * Names are found through an open-addressing table of tag indices (FNV-1a
 * of the name, linear probing), kept at most half full.
 *
 * Invariants: nslots is 0 or a power of two above 2 * ntags; every tag is
 * in exactly one slot.
 */
#include "tailbus/log_merge.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tailbus/codec.h"
#include "tailbus/grow.h"

#define FIRST_SLOTS 64
#define FNV_OFFSET 14695981039346656037ULL
#define FNV_PRIME 1099511628211ULL
/* --digits D: a fresh auto-resizing histogram from 1 up, like `new Histogram(D)`. */
#define DIGITS_LOWEST 1
#define DIGITS_INITIAL_HIGHEST 2

void tb_log_merge_init(tb_log_merge *m, int digits)
{
	memset(m, 0, sizeof(*m));
	m->digits = digits;
}

void tb_log_merge_free(tb_log_merge *m)
{
	for (size_t i = 0; i < m->ntags; i++)
		tb_hist_free(&m->tags[i].hist);
	free(m->tags);
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

static size_t hash(const char *s)
{
	uint64_t h = FNV_OFFSET;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * FNV_PRIME;
	return (size_t)h;
}

/* The slot holding `tag`, or the empty slot where it would go. */
static size_t slot_of(const tb_log_merge *m, const char *tag)
{
	size_t i = hash(tag) & (m->nslots - 1);
	while (m->slots[i] && strcmp(m->tags[m->slots[i] - 1].name, tag))
		i = (i + 1) & (m->nslots - 1);
	return i;
}

long tb_log_merge_find(const tb_log_merge *m, const char *tag)
{
	if (!m->nslots)
		return -1;
	size_t i = slot_of(m, tag);
	return m->slots[i] ? (long)(m->slots[i] - 1) : -1;
}

/* Room for one more tag, in the array and in the table. */
static int make_room(tb_log_merge *m)
{
	if (tb_grow_n((void **)&m->tags, &m->cap, m->ntags + 1, FIRST_SLOTS / 2,
		      sizeof(*m->tags)) < 0)
		return -ENOMEM;
	if (2 * (m->ntags + 1) < m->nslots)
		return 0;
	size_t n = m->nslots ? 2 * m->nslots : FIRST_SLOTS;
	size_t *old = m->slots, nold = m->nslots;
	m->slots = calloc(n, sizeof(*m->slots));
	if (!m->slots) {
		m->slots = old;
		return -ENOMEM;
	}
	m->nslots = n;
	for (size_t i = 0; i < nold; i++) {
		if (old[i])
			m->slots[slot_of(m, m->tags[old[i] - 1].name)] = old[i];
	}
	free(old);
	return 0;
}

long tb_log_merge_tag_of(tb_log_merge *m, const char *tag, const tb_hist *first)
{
	long found = tb_log_merge_find(m, tag);
	if (found >= 0)
		return found;
	int rc = make_room(m);
	if (rc < 0)
		return rc;
	tb_log_merge_tag *t = &m->tags[m->ntags];
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", tag);
	t->from = INFINITY;
	t->to = -INFINITY;
	if (m->digits == TB_LOG_MERGE_FIRST_LAYOUT) {
		rc = tb_hist_init(&t->hist, first->lowest, 2 * first->lowest, first->sig_digits);
		t->hist.conversion_ratio = first->conversion_ratio;
		t->layout_highest = first->highest;
	} else {
		rc = tb_hist_init(&t->hist, DIGITS_LOWEST, DIGITS_INITIAL_HIGHEST, m->digits);
		t->layout_highest = DIGITS_INITIAL_HIGHEST;
	}
	if (rc < 0)
		return rc;
	m->slots[slot_of(m, tag)] = m->ntags + 1;
	return (long)m->ntags++;
}

/* After a merge into t (rc its result): counted, and the layout followed. */
static int merged(tb_log_merge_tag *t, int rc)
{
	if (t->hist.highest > t->layout_highest)
		t->layout_highest = t->hist.highest;
	t->intervals += rc == 0;
	return rc;
}

static void note_span(tb_log_merge_tag *t, double start, double length)
{
	t->from = fmin(t->from, start);
	t->to = fmax(t->to, start + length);
}

int tb_log_merge_add(tb_log_merge *m, size_t t, const tb_hist *h, double start, double length)
{
	tb_log_merge_tag *tag = &m->tags[t];
	note_span(tag, start, length);
	return merged(tag, tb_hist_add_growing(&tag->hist, h));
}

int tb_log_merge_add_payload(tb_log_merge *m, size_t t, const char *payload, size_t n,
			     double start, double length, const char **why)
{
	tb_log_merge_tag *tag = &m->tags[t];
	int rc = tb_v2_decode_base64_add(payload, n, &tag->hist, why);
	if (rc == -ERANGE)
		return rc;
	note_span(tag, start, length);
	return merged(tag, rc);
}

int tb_log_merge_java_layout(const tb_log_merge *m, size_t t, tb_hist *out)
{
	const tb_log_merge_tag *tag = &m->tags[t];
	int rc = tb_hist_init(out, tag->hist.lowest, tag->layout_highest, tag->hist.sig_digits);
	if (rc < 0)
		return rc;
	out->conversion_ratio = tag->hist.conversion_ratio;
	return tb_hist_add(out, &tag->hist);
}
