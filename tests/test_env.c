/* test_env.c - the measurement environment: collected without failing,
 * printed as text, as JSON that parses back to the same strings, and as log
 * header lines that every HdrHistogram reader accepts (under 128 bytes,
 * "#[" ... "]", cut on a UTF-8 boundary).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cmocka.h>

#include "tailbus/env.h"

/* HdrHistogram_c reads header lines with fgets(line, 128, f). */
#define HDR_C_LINE_LIMIT 128

static void collect(tb_env *e)
{
	assert_int_equal(tb_env_collect(e), 0);
}

/* Every field of e set to `value` (a hand-made environment). */
static void fill_all(tb_env *e, const char *value)
{
	collect(e);
	for (size_t i = 0; i < tb_env_count(); i++) {
		char *field = (char *)tb_env_value(e, i);
		strcpy(field, value);
	}
}

static bool valid_utf8(const unsigned char *s, size_t len)
{
	for (size_t i = 0; i < len;) {
		unsigned char c = s[i];
		size_t n = c < 0x80 ? 0 : c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC2 ? 1 : 99;
		if (n == 99 || i + n >= len)
			return false;
		for (size_t k = 1; k <= n; k++)
			if ((s[i + k] & 0xC0) != 0x80)
				return false;
		i += n + 1;
	}
	return true;
}

static void collect_fills_every_field(void **state)
{
	(void)state;
	tb_env e;
	collect(&e);
	for (size_t i = 0; i < tb_env_count(); i++) {
		const char *v = tb_env_value(&e, i);
		assert_non_null(v);
		if (!*v)
			fail_msg("field %s is empty", tb_env_key(i));
		if (!valid_utf8((const unsigned char *)v, strlen(v)))
			fail_msg("field %s is not UTF-8", tb_env_key(i));
		for (const char *p = v; *p; p++)
			if ((unsigned char)*p < 0x20)
				fail_msg("field %s has a control character", tb_env_key(i));
	}
}

static void collect_reads_what_the_system_says(void **state)
{
	(void)state;
	tb_env e;
	collect(&e);
	struct utsname u;
	assert_int_equal(uname(&u), 0);
	assert_int_equal(strncmp(e.kernel, u.release, strlen(u.release)), 0);
	assert_string_equal(e.machine, u.machine);
	char cpus[32];
	snprintf(cpus, sizeof(cpus), "%ld", sysconf(_SC_NPROCESSORS_ONLN));
	assert_string_equal(e.cpus, cpus);
	assert_string_equal(e.version, "0.1.0");
	assert_true(strlen(e.commit) > 0);
}

static void collect_refuses_null(void **state)
{
	(void)state;
	assert_int_equal(tb_env_collect(NULL), -EINVAL);
}

static void accessors_walk_the_fields_in_order(void **state)
{
	(void)state;
	tb_env e;
	collect(&e);
	assert_true(tb_env_count() >= 20);
	assert_string_equal(tb_env_key(0), "hostname");
	assert_ptr_equal(tb_env_get(&e, "kernel"), e.kernel);
	assert_ptr_equal(tb_env_get(&e, "commit"), e.commit);
	assert_null(tb_env_get(&e, "no such key"));
	assert_null(tb_env_key(tb_env_count()));
	assert_null(tb_env_value(&e, tb_env_count()));
}

/* Each line: "#[env key=value]\n", under 128 bytes, valid UTF-8. Returns
 * how many lines there were. */
static size_t check_header_lines(const char *buf)
{
	size_t lines = 0;
	for (const char *p = buf; *p;) {
		const char *nl = strchr(p, '\n');
		assert_non_null(nl);
		size_t len = (size_t)(nl - p) + 1;
		if (len >= HDR_C_LINE_LIMIT)
			fail_msg("header line of %zu bytes: %.*s", len, (int)len, p);
		assert_true(len <= TB_ENV_HEADER_LINE_MAX);
		assert_int_equal(strncmp(p, TB_ENV_HEADER_PREFIX, strlen(TB_ENV_HEADER_PREFIX)), 0);
		assert_int_equal(strncmp(p, "#[", 2), 0);
		assert_int_equal(nl[-1], ']');
		assert_ptr_equal(memchr(p, ']', len), nl - 1); /* one closing bracket */
		assert_non_null(memchr(p, '=', len));
		assert_true(valid_utf8((const unsigned char *)p, len));
		lines++;
		p = nl + 1;
	}
	return lines;
}

static void header_lines_fit_hdrhistogram_readers(void **state)
{
	(void)state;
	tb_env e;
	collect(&e);
	char buf[TB_ENV_HEADER_CAP];
	int len = tb_env_format_header_lines(&e, buf, sizeof(buf));
	assert_true(len > 0);
	assert_int_equal((size_t)len, strlen(buf));
	assert_int_equal(check_header_lines(buf), tb_env_count());
	/* Not mistaken for the lines readers parse. */
	assert_null(strstr(buf, "#[StartTime"));
	assert_null(strstr(buf, "#[BaseTime"));
	assert_null(strstr(buf, "#[Histogram log format"));
}

static void long_values_are_cut_on_a_utf8_boundary(void **state)
{
	(void)state;
	tb_env e;
	fill_all(&e, "x");
	/* 2-byte and 3-byte characters, so some cut lands inside one. */
	for (size_t i = 0; i + 6 < sizeof(e.cmdline); i += 5)
		memcpy(e.cmdline + i, "\xc3\xa9\xe2\x82\xac", 5); /* é € */
	e.cmdline[sizeof(e.cmdline) - 1] = '\0';
	e.cmdline[(sizeof(e.cmdline) - 1) / 5 * 5] = '\0';
	snprintf(e.cpu_model, sizeof(e.cpu_model), "%s", "bracket ] inside");
	char buf[TB_ENV_HEADER_CAP];
	assert_true(tb_env_format_header_lines(&e, buf, sizeof(buf)) > 0);
	check_header_lines(buf);
	const char *line = strstr(buf, "#[env cmdline=");
	assert_non_null(line);
	const char *end = strchr(line, '\n');
	assert_int_equal(strncmp(end - 4, "...]", 4), 0);
	assert_non_null(strstr(buf, "#[env cpu_model=bracket ? inside]\n"));
}

static void header_lines_need_room(void **state)
{
	(void)state;
	tb_env e;
	fill_all(&e, "v");
	char buf[64];
	assert_int_equal(tb_env_format_header_lines(&e, buf, sizeof(buf)), -ENOSPC);
	assert_string_equal(buf, "#[env hostname=v]\n#[env machine=v]\n#[env kernel=v]\n");
	assert_int_equal(tb_env_format_header_lines(&e, buf, 0), -EINVAL);
	assert_int_equal(tb_env_format_header_lines(NULL, buf, sizeof(buf)), -EINVAL);
}

/* ---- a tiny JSON reader: one object whose values are all strings ---- */

struct json {
	const char *p;
};

static void skip_ws(struct json *j)
{
	while (*j->p == ' ' || *j->p == '\n' || *j->p == '\t' || *j->p == '\r')
		j->p++;
}

static int hex(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
			       : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* A JSON string into out (ASCII escapes only, which is all we write). */
static bool json_string(struct json *j, char *out, size_t cap)
{
	size_t n = 0;
	if (*j->p++ != '"')
		return false;
	while (*j->p != '"') {
		char c = *j->p++;
		if ((unsigned char)c < 0x20 || !c)
			return false;
		if (c == '\\') {
			char esc = *j->p++;
			if (esc == 'u') {
				int v = 0;
				for (int k = 0; k < 4; k++) {
					int h = hex(*j->p++);
					if (h < 0)
						return false;
					v = v * 16 + h;
				}
				if (v > 0x7f)
					return false;
				c = (char)v;
			} else if (esc == '"' || esc == '\\' || esc == '/')
				c = esc;
			else if (esc == 'n')
				c = '\n';
			else if (esc == 't')
				c = '\t';
			else
				return false;
		}
		if (n + 1 >= cap)
			return false;
		out[n++] = c;
	}
	j->p++;
	out[n] = '\0';
	return true;
}

/* Parses the object; each key must be the next field, with its value. */
static void assert_json_round_trips(const char *text, const tb_env *e)
{
	static char key[64], value[TB_ENV_CMDLINE_MAX];
	struct json j = {text};
	size_t i = 0;
	skip_ws(&j);
	assert_int_equal(*j.p++, '{');
	for (;; i++) {
		skip_ws(&j);
		if (!json_string(&j, key, sizeof(key)))
			fail_msg("bad key near: %.40s", j.p);
		skip_ws(&j);
		assert_int_equal(*j.p++, ':');
		skip_ws(&j);
		if (!json_string(&j, value, sizeof(value)))
			fail_msg("bad value of %s near: %.40s", key, j.p);
		assert_string_equal(key, tb_env_key(i));
		assert_string_equal(value, tb_env_value(e, i));
		skip_ws(&j);
		if (*j.p == '}')
			break;
		assert_int_equal(*j.p++, ',');
	}
	j.p++;
	skip_ws(&j);
	assert_int_equal(*j.p, '\0');
	assert_int_equal(i + 1, tb_env_count());
}

static char *format(int (*fn)(const tb_env *, FILE *), const tb_env *e)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_non_null(f);
	assert_int_equal(fn(e, f), 0);
	fclose(f);
	return text;
}

static void json_parses_back_to_the_fields(void **state)
{
	(void)state;
	tb_env e;
	collect(&e);
	char *text = format(tb_env_format_json, &e);
	assert_json_round_trips(text, &e);
	free(text);
}

static void json_escapes_quotes_backslashes_and_controls(void **state)
{
	(void)state;
	tb_env e;
	fill_all(&e, "plain");
	strcpy(e.cmdline, "a=\"quoted\" b=back\\slash");
	strcpy(e.hostname, "tab\there\nnewline");
	char *text = format(tb_env_format_json, &e);
	assert_non_null(strstr(text, "\"a=\\\"quoted\\\" b=back\\\\slash\""));
	assert_non_null(strstr(text, "\"tab\\u0009here\\u000anewline\""));
	assert_json_round_trips(text, &e);
	free(text);
}

static void text_has_one_line_per_field(void **state)
{
	(void)state;
	tb_env e;
	collect(&e);
	char *text = format(tb_env_format_text, &e);
	size_t lines = 0;
	for (const char *p = text; (p = strchr(p, '\n')); p++)
		lines++;
	assert_int_equal(lines, tb_env_count());
	char want[TB_ENV_KERNEL_MAX + 32];
	snprintf(want, sizeof(want), "\nkernel        %s\n", e.kernel);
	assert_non_null(strstr(text, want));
	free(text);
}

static bool has(const char *list, const char *word)
{
	return tb_env_has_word(list, strlen(list), word);
}

static void has_word_matches_whole_words(void **state)
{
	(void)state;
	const char *flags = "fpu tsc rdtscp constant_tsc nonstop_tsc";
	assert_true(has(flags, "fpu"));
	assert_true(has(flags, "tsc"));
	assert_true(has(flags, "nonstop_tsc"));
	assert_false(has(flags, "nonstop"));
	assert_false(has(flags, "rdtsc"));
	assert_false(has("constant_tsc", "tsc"));
	assert_true(has("  a\tb\n", "b")); /* any blank separates */
	assert_true(has("ro tsc=unstable quiet", "tsc=unstable"));
	assert_false(has("", "tsc"));
	assert_false(tb_env_has_word("tscx", 3, "tscx")); /* only len bytes */
	assert_true(tb_env_has_word("tscx", 3, "tsc"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(collect_fills_every_field),
		cmocka_unit_test(collect_reads_what_the_system_says),
		cmocka_unit_test(collect_refuses_null),
		cmocka_unit_test(accessors_walk_the_fields_in_order),
		cmocka_unit_test(header_lines_fit_hdrhistogram_readers),
		cmocka_unit_test(long_values_are_cut_on_a_utf8_boundary),
		cmocka_unit_test(header_lines_need_room),
		cmocka_unit_test(json_parses_back_to_the_fields),
		cmocka_unit_test(json_escapes_quotes_backslashes_and_controls),
		cmocka_unit_test(text_has_one_line_per_field),
		cmocka_unit_test(has_word_matches_whole_words),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
