/* tailbus/json.h - JSON string literals: the one escaper the library and
 * the tools write their JSON strings through.
 */
#ifndef TAILBUS_JSON_H
#define TAILBUS_JSON_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The n bytes at s written to f as a JSON string literal, quotes included:
 * '"' and '\' backslash-escaped, bytes below 0x20 (NUL included) as \u00XX,
 * every other byte (UTF-8 sequences included) as it is. Returns 0, or -EIO
 * when f has an error. */
int tb_json_string_n(FILE *f, const char *s, size_t n);

/* tb_json_string_n of the NUL-terminated s. */
int tb_json_string(FILE *f, const char *s);

#ifdef __cplusplus
}
#endif

#endif
