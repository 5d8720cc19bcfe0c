/* test_grow.c - growing buffers: doubling from the first capacity, nothing
 * done when there is room, element arrays counted in elements, and the
 * element sizes refused before any allocation.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "tailbus/grow.h"

static void bytes_double_from_first(void **state)
{
	(void)state;
	void *buf = NULL;
	size_t cap = 0;
	assert_int_equal(tb_grow(&buf, &cap, 1, 16), 0);
	assert_non_null(buf);
	assert_int_equal(cap, 16);
	void *same = buf;
	assert_int_equal(tb_grow(&buf, &cap, 16, 16), 0); /* room: untouched */
	assert_ptr_equal(buf, same);
	assert_int_equal(cap, 16);
	assert_int_equal(tb_grow(&buf, &cap, 17, 16), 0);
	assert_int_equal(cap, 32);
	assert_int_equal(tb_grow(&buf, &cap, 100, 16), 0);
	assert_int_equal(cap, 128);
	free(buf);
}

static void elements_double_from_first(void **state)
{
	(void)state;
	int64_t *a = NULL;
	size_t cap = 0;
	assert_int_equal(tb_grow_n((void **)&a, &cap, 1, 16, sizeof(*a)), 0);
	assert_int_equal(cap, 16);
	for (size_t i = 0; i < 16; i++)
		a[i] = (int64_t)i;
	assert_int_equal(tb_grow_n((void **)&a, &cap, 16, 16, sizeof(*a)), 0);
	assert_int_equal(cap, 16);
	assert_int_equal(tb_grow_n((void **)&a, &cap, 17, 16, sizeof(*a)), 0);
	assert_int_equal(cap, 32);
	a[31] = 31;
	for (size_t i = 0; i < 16; i++)
		assert_int_equal(a[i], (int64_t)i); /* kept */
	free(a);
}

static void elements_refused(void **state)
{
	(void)state;
	int64_t *a = NULL;
	size_t cap = 0;
	assert_int_equal(tb_grow_n((void **)&a, &cap, 1, 1, 0), -EINVAL);
	assert_int_equal(tb_grow_n((void **)&a, &cap, SIZE_MAX / 4, 1, sizeof(*a)), -ENOMEM);
	assert_null(a);
	assert_int_equal(cap, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bytes_double_from_first),
		cmocka_unit_test(elements_double_from_first),
		cmocka_unit_test(elements_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
