/* read_guard.c - read-only segment mappings surviving a cut file
 * (tailbus/read_guard.h): listed in the guard shared with the producer
 * library (map_guard.c), as mappings it covers and never repairs. */
#include "tailbus/read_guard.h"
#include "map_guard.h"

_Static_assert(TB_READ_GUARD_SEGMENTS == TB_MAP_GUARD_MAPPINGS, "one table");

int tb_read_guard_install(void)
{
	return tb__map_guard_install();
}

int tb_read_guard_add(const tb_seg *s)
{
	return tb__map_guard_add(s->base, s->size, s->fd, false);
}

void tb_read_guard_remove(const tb_seg *s)
{
	tb__map_guard_remove(s->base);
}

bool tb_read_guard_cut(const tb_seg *s)
{
	return tb__map_guard_covered(s->base) > 0;
}
