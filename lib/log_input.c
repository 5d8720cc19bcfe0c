/* log_input.c - the bytes of a log as they come: a file, stdin, gzip.
 *
 * The log reader (log_reader.c) works on text in memory. This file gets that
 * text: it reads a whole file, or standard input when the path is "-", and
 * when the bytes begin with gzip's magic number (RFC 1952: 0x1f 0x8b) it
 * inflates them, whatever the file is called, so `x.hlog.gz`, a renamed
 * archive and `zcat`-less pipes all read alike. A gzip file may hold several
 * members one after the other (what `cat a.gz b.gz` or a rotating writer
 * appending members makes); their texts are concatenated, as gzip -d does.
 *
 * Inflated text is bounded by the caller's `max` (a small file can stand for
 * a huge text), and every buffer is grown by doubling, so the work stays
 * linear in what is read. The result is always NUL-terminated, so callers
 * may also treat it as a C string.
 */
#include "tailbus/log.h"
#include "tailbus/grow.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* RFC 1952 section 2.3.1: ID1, ID2. */
#define GZIP_ID1 0x1f
#define GZIP_ID2 0x8b
/* zlib: window bits 15 plus 16 means "expect a gzip wrapper". */
#define ZLIB_GZIP_WINDOW_BITS (15 + 16)
#define READ_CHUNK (64 * 1024)
/* zlib's avail_in/avail_out are 32-bit: feed it at most this much at once. */
#define ZLIB_STEP (1u << 30)

bool tb_log_is_gzip(const void *data, size_t len)
{
	const uint8_t *p = data;
	return len >= 2 && p[0] == GZIP_ID1 && p[1] == GZIP_ID2;
}

/* buf grown to hold at least `need` bytes; 0 or -ENOMEM. */
static int reserve(char **buf, size_t *cap, size_t need)
{
	return tb_grow((void **)buf, cap, need, READ_CHUNK);
}

/* One inflate pass over every member; 0 or a negative errno. */
static int gunzip_members(z_stream *z, const uint8_t *in, size_t n, size_t max, char **out,
			  size_t *cap, size_t *got)
{
	size_t used = 0;
	for (;;) {
		if (z->avail_in == 0 && used < n) {
			size_t step = n - used < ZLIB_STEP ? n - used : ZLIB_STEP;
			z->next_in = (Bytef *)(uintptr_t)(in + used);
			z->avail_in = (uInt)step;
			used += step;
		}
		/* room for more, and one byte for the NUL */
		if (reserve(out, cap, *got + READ_CHUNK + 1) < 0)
			return -ENOMEM;
		size_t room = *cap - *got - 1;
		z->next_out = (Bytef *)(*out + *got);
		z->avail_out = (uInt)(room < ZLIB_STEP ? room : ZLIB_STEP);
		uInt before = z->avail_out;
		int zrc = inflate(z, Z_NO_FLUSH);
		*got += before - z->avail_out;
		if (*got > max)
			return -EFBIG;
		if (zrc == Z_STREAM_END) {
			/* another member may follow; anything else after it is an error */
			if (z->avail_in == 0 && used == n)
				return 0;
			if (inflateReset(z) != Z_OK)
				return -EBADMSG;
			continue;
		}
		if (zrc == Z_MEM_ERROR)
			return -ENOMEM;
		if (zrc != Z_OK && zrc != Z_BUF_ERROR)
			return -EBADMSG;
		/* no progress with all input given: the stream is cut short */
		if (zrc == Z_BUF_ERROR && z->avail_in == 0 && used == n)
			return -EBADMSG;
	}
}

int tb_log_gunzip(const void *in, size_t n, size_t max, char **text, size_t *len)
{
	z_stream z;
	memset(&z, 0, sizeof(z));
	if (!tb_log_is_gzip(in, n))
		return -EINVAL;
	if (inflateInit2(&z, ZLIB_GZIP_WINDOW_BITS) != Z_OK)
		return -ENOMEM;
	char *out = NULL;
	size_t cap = 0, got = 0;
	int rc = gunzip_members(&z, in, n, max, &out, &cap, &got);
	inflateEnd(&z);
	if (rc < 0) {
		free(out);
		return rc;
	}
	out[got] = '\0';
	*text = out;
	*len = got;
	return 0;
}

/* Every byte of fd into a malloc'd buffer with room for a NUL. */
static int read_all(int fd, char **buf, size_t *len)
{
	char *b = NULL;
	size_t cap = 0, got = 0;
	for (;;) {
		if (reserve(&b, &cap, got + READ_CHUNK + 1) < 0) {
			free(b);
			return -ENOMEM;
		}
		ssize_t n = read(fd, b + got, cap - got - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = -errno;
			free(b);
			return err;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	b[got] = '\0';
	*buf = b;
	*len = got;
	return 0;
}

static int read_path(const char *path, char **buf, size_t *len)
{
	if (!strcmp(path, TB_LOG_STDIN))
		return read_all(STDIN_FILENO, buf, len);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	int rc = fstat(fd, &st) < 0 ? -errno : 0;
	if (rc == 0 && S_ISDIR(st.st_mode))
		rc = -EISDIR;
	if (rc == 0)
		rc = read_all(fd, buf, len);
	close(fd);
	return rc;
}

int tb_log_load(const char *path, size_t max, char **text, size_t *len)
{
	char *raw;
	size_t n;
	int rc = read_path(path, &raw, &n);
	if (rc < 0)
		return rc;
	if (!tb_log_is_gzip(raw, n)) {
		*text = raw;
		*len = n;
		return 0;
	}
	rc = tb_log_gunzip(raw, n, max, text, len);
	free(raw);
	return rc;
}

const char *tb_log_load_strerror(int rc)
{
	switch (rc) {
	case -EBADMSG: return "not valid gzip data (corrupt or cut short)";
	case -EFBIG: return "its gzip data inflates to more text than a log may hold";
	default: return strerror(-rc);
	}
}
