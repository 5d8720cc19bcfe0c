/* grow.c - tb_grow (tailbus/grow.h). */
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
