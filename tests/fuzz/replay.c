/* replay.c - run a fuzz target over saved inputs, without libFuzzer.
 *
 * Linked with one target's LLVMFuzzerTestOneInput(), this main() feeds it
 * every regular file named on the command line or found (one level deep, in
 * name order) in a directory named there. It lets any compiler and any
 * sanitizer build run the targets over the corpus and the saved regressions
 * as an ordinary test, and replays a crash file under a debugger.
 *
 * The process runs under an address-space limit (REPLAY_ADDRESS_SPACE_LIMIT)
 * so that a decoder allocating from an unchecked length fails here too.
 * Each input is read into a buffer of exactly its size, so AddressSanitizer
 * flags a read one byte past the end as libFuzzer would. The target aborts
 * on a broken invariant; a run that finds no input at all is an error too,
 * so a mistyped path cannot pass for a clean run. Subdirectories are not
 * entered (regressions/<target>/open/ holds bugs not fixed yet).
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "tailbus/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Address space for the whole process: ten times what the largest valid
 * histogram needs (fuzz_check.h), far below what an unchecked 32-bit length
 * asks for (2 GiB and up), so such an allocation fails here and the target
 * sees -ENOMEM. AddressSanitizer reserves terabytes of shadow memory, so
 * under it the limit is left off (libFuzzer's -malloc_limit_mb covers it). */
#define REPLAY_ADDRESS_SPACE_LIMIT (UINT64_C(1) << 30)

#if defined(__SANITIZE_ADDRESS__)
#define REPLAY_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REPLAY_UNDER_ASAN 1
#endif
#endif

static void limit_memory(void)
{
#ifndef REPLAY_UNDER_ASAN
	struct rlimit lim = {REPLAY_ADDRESS_SPACE_LIMIT, REPLAY_ADDRESS_SPACE_LIMIT};
	struct rlimit now;
	if (getrlimit(RLIMIT_AS, &now) == 0 && now.rlim_cur != RLIM_INFINITY &&
	    now.rlim_cur < lim.rlim_cur)
		return; /* already tighter */
	if (setrlimit(RLIMIT_AS, &lim) < 0)
		fprintf(stderr, "replay: cannot limit address space: %s\n", strerror(errno));
#endif
}

static int run_file(const char *path)
{
	char *text;
	size_t len;
	int rc = tb_read_file(path, &text, &len);
	if (rc < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(-rc));
		return rc;
	}
	/* tb_read_file NUL-terminates; copy to an exact-size buffer so an
	 * over-read of the input is caught rather than landing on that NUL */
	uint8_t *exact = malloc(len ? len : 1);
	if (!exact) {
		free(text);
		return -ENOMEM;
	}
	memcpy(exact, text, len);
	free(text);
	LLVMFuzzerTestOneInput(exact, len);
	free(exact);
	return 0;
}

static int keep_entry(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

/* Returns the number of inputs run, or a negative errno. */
static long run_dir(const char *dir)
{
	struct dirent **names;
	int n = scandir(dir, &names, keep_entry, alphasort);
	if (n < 0) {
		fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
		return -errno;
	}
	long ran = 0;
	int rc = 0;
	for (int i = 0; i < n; i++) {
		char path[4096];
		struct stat st;
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		if (rc == 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
			rc = run_file(path);
			ran += rc == 0;
		}
		free(names[i]);
	}
	free(names);
	return rc < 0 ? rc : ran;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR|FILE...\n", argv[0]);
		return 2;
	}
	limit_memory();
	long total = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) < 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		long ran = S_ISDIR(st.st_mode) ? run_dir(argv[i]) : (run_file(argv[i]) == 0 ? 1 : -1);
		if (ran < 0)
			return 1;
		total += ran;
	}
	if (total == 0) {
		fprintf(stderr, "replay: no inputs found\n");
		return 1;
	}
	printf("replay: %ld inputs, no invariant broken\n", total);
	return 0;
}
