/* fuzz_accept.c - libFuzzer target for the exporter's Accept header reading.
 *
 * `tailbus export` hands the Accept header of every HTTP request, bytes any
 * client chooses, to tb_prom_accepts_protobuf (lib/prom_text.c). The input is
 * that header's value; libmicrohttpd gives it NUL-terminated, so the target
 * copies it into a buffer of exactly its size plus the NUL (AddressSanitizer
 * sees a read one past it). Embedded NULs end the value early, as they would.
 *
 * What must hold on every call:
 *   - the answer is the same when asked twice (no hidden state);
 *   - a value that does not contain "protobuf" (any case) is never protobuf;
 *   - a media range put in front ("text/plain;q=0.5,") changes nothing:
 *     each range is read on its own.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tailbus/prom.h"

#define PREFIX "text/plain;q=0.5,"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool mentions_protobuf(const char *s)
{
	for (; *s; s++) {
		if (!strncasecmp(s, "protobuf", 8))
			return true;
	}
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *value = malloc(size + 1);
	char *prefixed = malloc(sizeof(PREFIX) + size);
	if (!value || !prefixed)
		abort();
	memcpy(value, data, size);
	value[size] = '\0';
	memcpy(prefixed, PREFIX, sizeof(PREFIX) - 1);
	memcpy(prefixed + sizeof(PREFIX) - 1, data, size);
	prefixed[sizeof(PREFIX) - 1 + size] = '\0';

	bool pb = tb_prom_accepts_protobuf(value);
	if (pb != tb_prom_accepts_protobuf(value))
		abort();
	if (pb && !mentions_protobuf(value))
		abort();
	if (pb != tb_prom_accepts_protobuf(prefixed))
		abort();
	free(value);
	free(prefixed);
	return 0;
}
