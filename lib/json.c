/* json.c - JSON string literals (tailbus/json.h). */
#include "tailbus/json.h"

#include <errno.h>
#include <string.h>

int tb_json_string_n(FILE *f, const char *s, size_t n)
{
	fputc('"', f);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
	return ferror(f) ? -EIO : 0;
}

int tb_json_string(FILE *f, const char *s)
{
	return tb_json_string_n(f, s, strlen(s));
}
