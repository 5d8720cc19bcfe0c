/* tailbus/prom_export.h - following buses' live areas for a Prometheus scrape.
 *
 * An exporter holds, per metric of each bus it follows, the sum of every
 * interval the collector published since the exporter began following it:
 * one HDR histogram and the counters the live area carries. tb_prom_export_poll
 * reads the new intervals (through tailbus/live.h, lock-free) and adds each
 * once; tb_prom_export_render writes the sums as one exposition. Intervals
 * published before the first poll are not counted: the figures are
 * cumulative from the exporter's start, as Prometheus counters expect.
 *
 * The exporter does no locking: a program that polls and renders from two
 * threads holds its own lock around both.
 */
#ifndef TAILBUS_PROM_EXPORT_H
#define TAILBUS_PROM_EXPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "tailbus/prom.h"
#include "tailbus/segment.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tb_prom_export tb_prom_export;

/* A new exporter whose series carry host="<host>", with native buckets at
 * `schema`. Returns 0, -EINVAL (schema, empty host) or -ENOMEM. */
int tb_prom_export_new(tb_prom_export **out, const char *host, int schema);
/* Follow a bus the caller opened (read-only is enough) and keeps open while
 * the exporter lives; `bus` is its label value. Returns 0 or -ENOMEM. */
int tb_prom_export_add_bus(tb_prom_export *e, const tb_seg *seg, const char *bus);
/* The segment `seg` (one added before, the same tb_seg) now maps another
 * file of the bus: `tailbus export` opened it afresh after the file was
 * replaced (tailbusd --fresh). Metric ids may differ in it: each metric's
 * sums go on under its name when that name appears in the new file, which
 * is read from its first interval (all of it is new). Returns 0, -ENOENT
 * (not added) or -ENOMEM. */
int tb_prom_export_replace_bus(tb_prom_export *e, const tb_seg *seg);
/* Add every interval published since the last poll. Returns 0, or the first
 * error of a live read (-EAGAIN: a collector stuck mid-write; the others
 * are still followed), -EBADMSG only when an interval whose histogram does
 * not decode was passed over and no read failed otherwise, or -ENOMEM. */
int tb_prom_export_poll(tb_prom_export *e);
/* Whose read gave the last poll's error: "bus <name>, metric <name>" (""
 * when none). Valid until the next poll. */
const char *tb_prom_export_where(const tb_prom_export *e);
/* How many intervals were passed over as corrupt since the exporter began
 * (every one, whatever other errors a poll had); *newest (if given) names
 * the bus and metric of the newest ("" when none). */
uint64_t tb_prom_export_passed_over(const tb_prom_export *e, const char **newest);
/* The whole exposition: protobuf (native and classic buckets) or text 0.0.4
 * (classic). `now_mono_ns` (CLOCK_MONOTONIC) dates the heartbeat ages.
 * Returns 0 or -ENOMEM. */
int tb_prom_export_render(const tb_prom_export *e, bool protobuf, int64_t now_mono_ns,
			  tb_prom_buf *out);
void tb_prom_export_free(tb_prom_export *e);

#ifdef __cplusplus
}
#endif
#endif
