/* test_json.c - the JSON string escaper: control bytes, quote, backslash,
 * UTF-8 passed through, an embedded NUL written by length, the empty string.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tailbus/json.h"

/* tb_json_string_n of (s, n) compared with want. */
static void escapes_to(const char *s, size_t n, const char *want)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(tb_json_string_n(f, s, n), 0);
	assert_int_equal(fclose(f), 0);
	assert_string_equal(buf, want);
	free(buf);
}

static void plain_text_is_quoted(void **state)
{
	(void)state;
	escapes_to("abc", 3, "\"abc\"");
	escapes_to("", 0, "\"\"");
}

static void quote_and_backslash(void **state)
{
	(void)state;
	escapes_to("a\"b\\c", 5, "\"a\\\"b\\\\c\"");
}

static void control_bytes(void **state)
{
	(void)state;
	escapes_to("\n\t\r\x01\x1f", 5, "\"\\u000a\\u0009\\u000d\\u0001\\u001f\"");
	escapes_to(" \x7f", 2, "\" \x7f\""); /* 0x20 and DEL as they are */
}

static void utf8_passes_through(void **state)
{
	(void)state;
	const char *s = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80";
	escapes_to(s, strlen(s), "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
}

static void embedded_nul_by_length(void **state)
{
	(void)state;
	escapes_to("a\0b", 3, "\"a\\u0000b\"");
	escapes_to("ab", 1, "\"a\""); /* only n bytes */
}

static void whole_string(void **state)
{
	(void)state;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(tb_json_string(f, "x\"y"), 0);
	assert_int_equal(fclose(f), 0);
	assert_string_equal(buf, "\"x\\\"y\"");
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(plain_text_is_quoted),
		cmocka_unit_test(quote_and_backslash),
		cmocka_unit_test(control_bytes),
		cmocka_unit_test(utf8_passes_through),
		cmocka_unit_test(embedded_nul_by_length),
		cmocka_unit_test(whole_string),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
