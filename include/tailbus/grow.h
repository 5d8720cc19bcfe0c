/* tailbus/grow.h - a heap buffer grown by doubling, the one rule every
 * growing buffer of the library, the collector and the tools follows.
 */
#ifndef TAILBUS_GROW_H
#define TAILBUS_GROW_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* *buf (realloc'd, or NULL) grown to hold at least `need` bytes: its
 * capacity *cap doubles from max(*cap, first) until it does (or becomes
 * `need` where doubling would overflow). Returns 0, or -ENOMEM with *buf
 * and *cap as they were. */
int tb_grow(void **buf, size_t *cap, size_t need, size_t first);

/* tb_grow for an array of `size`-byte elements: *cap, need and first count
 * elements, and grow by the same doubling. Returns 0, or -ENOMEM (also when
 * the bytes would overflow a size_t) with *buf and *cap as they were, or
 * -EINVAL for a zero size. */
int tb_grow_n(void **buf, size_t *cap, size_t need, size_t first, size_t size);

#ifdef __cplusplus
}
#endif

#endif
