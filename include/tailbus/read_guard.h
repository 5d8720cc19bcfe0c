/* read_guard.h - a tool that maps segments read-only (tailbus top, tailbus
 * export) surviving a segment file cut under it.
 *
 * Anyone who may write a segment file may shrink it, and a load from a
 * mapped page past the new end is a SIGBUS, whose default action ends the
 * process. The collector gives the file its size back within about a
 * millisecond, but a reader that loads in that window, or while no
 * collector runs, would die. A tool that installs this guard lists each
 * segment it maps; a fault inside a listed mapping gets a private page of
 * zeros mapped over the faulting page (so the load is retried and reads
 * zeros, which no reader takes for a published interval: sequence counters
 * and frames are checked), and the segment is marked cut. The tool then
 * maps the file afresh (tb_read_guard_cut). A fault anywhere else goes to
 * the handler that was there before, or to the default action.
 *
 * Not for producers: an engine chooses its own process-wide handlers
 * (tb_guard_segment_faults in producer.h is its opt-in).
 */
#ifndef TAILBUS_READ_GUARD_H
#define TAILBUS_READ_GUARD_H

#include <stdbool.h>

#include "tailbus/segment.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Mappings listed at a time; one more is not guarded. */
#define TB_READ_GUARD_SEGMENTS 1024

/* Install the process-wide SIGBUS handler (once; later calls do nothing).
 * 0 or a negative errno (sigaction's). */
int tb_read_guard_install(void);
/* List s's mapping (after tb_seg_open) / take it off (before tb_seg_close).
 * add returns 0, or -ENOSPC when the list is full. */
int tb_read_guard_add(const tb_seg *s);
void tb_read_guard_remove(const tb_seg *s);
/* Whether a fault in s's mapping was covered since it was listed: its
 * file was cut, and the mapping holds private zeros where it was. */
bool tb_read_guard_cut(const tb_seg *s);

#ifdef __cplusplus
}
#endif

#endif
