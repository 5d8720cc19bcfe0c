/* grow.c - tb_grow and tb_grow_n (tailbus/grow.h). */
#include "tailbus/grow.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

int tb_grow(void **buf, size_t *cap, size_t need, size_t first)
{
	if (need <= *cap && *buf)
		return 0;
	size_t c = *cap > first ? *cap : first;
	if (c == 0)
		c = 1;
	while (c < need)
		c = c > SIZE_MAX / 2 ? need : 2 * c;
	void *grown = realloc(*buf, c);
	if (!grown)
		return -ENOMEM;
	*buf = grown;
	*cap = c;
	return 0;
}

int tb_grow_n(void **buf, size_t *cap, size_t need, size_t first, size_t size)
{
	if (!size)
		return -EINVAL;
	size_t most = SIZE_MAX / size;
	if (need > most || *cap > most || first > most)
		return -ENOMEM;
	size_t bytes = *cap * size;
	int rc = tb_grow(buf, &bytes, need * size, first * size);
	if (rc < 0)
		return rc;
	*cap = bytes / size;
	return 0;
}
