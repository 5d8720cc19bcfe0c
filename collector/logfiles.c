/* logfiles.c - the log files' names and their place on disk: creating the
 * log directory, the next <dir>/<bus>.<UTC start>[-N].hlog and its
 * .health.csv sidecar, when rotation is due, retention (the newest
 * `keep_files` logs of this bus kept, with their sidecars), and which of
 * them is the newest.
 *
 * Invariants: a pair is created new (O_EXCL), never reused; retention only
 * ever removes files whose names parse as this bus's logs, and never the
 * current one.
 */
#include "writer_impl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tailbus/grow.h"

/* "-N" suffixes tried for one start second before giving up. */
#define NAME_SUFFIX_MAX 1000
/* UTC start in file names: YYYYmmddTHHMMSSZ */
#define STAMP_FORMAT "%Y%m%dT%H%M%SZ"
#define STAMP_LEN 16
#define LOG_SUFFIX ".hlog"
#define FILE_FLAGS (O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC)
#define FILE_MODE 0640
#define DIR_MODE 0750
#define NS_PER_SEC 1000000000LL

/* mkdir -p, then make sure what is there is a directory. */
int wr_make_dirs(const char *dir, const char **why)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path)) {
		*why = "the log directory's path is too long";
		return -ENAMETOOLONG;
	}
	for (char *p = path + 1;; p++) {
		bool end = *p == '\0';
		if (*p != '/' && !end)
			continue;
		*p = '\0';
		struct stat st;
		/* an existing directory may still refuse mkdir (EACCES, EROFS) */
		if (mkdir(path, DIR_MODE) < 0 && errno != EEXIST &&
		    (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))) {
			*why = "cannot create the log directory";
			return -errno;
		}
		if (end)
			break;
		*p = '/';
	}
	struct stat st;
	if (stat(dir, &st) < 0) {
		*why = "cannot create the log directory";
		return -errno;
	}
	if (!S_ISDIR(st.st_mode)) {
		*why = "the log directory's path names something that is not a directory";
		return -ENOTDIR;
	}
	return 0;
}

static void format_stamp(int64_t start_ns, char stamp[STAMP_LEN + 1])
{
	int64_t sec = start_ns / NS_PER_SEC;
	if (start_ns % NS_PER_SEC < 0)
		sec--; /* floor, for starts before the epoch */
	time_t t = (time_t)sec;
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(stamp, STAMP_LEN + 1, STAMP_FORMAT, &tm);
}

const char *wr_base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* Create <dir>/<bus>.<stamp>[-N].hlog and its sidecar, both new: the first
 * N (none, 1, 2, ...) for which neither name exists. */
int wr_open_pair(const tb_writer *w, int64_t start_ns, struct wfile out[FILE_COUNT],
		     const char **why)
{
	char stamp[STAMP_LEN + 1];
	format_stamp(start_ns, stamp);
	for (int n = 0; n < NAME_SUFFIX_MAX; n++) {
		char suffix[16] = "";
		if (n)
			snprintf(suffix, sizeof(suffix), "-%d", n);
		int a = snprintf(out[FILE_LOG].path, PATH_MAX, "%s/%s.%s%s" LOG_SUFFIX, w->dir,
				 w->bus, stamp, suffix);
		int b = snprintf(out[FILE_SIDECAR].path, PATH_MAX, "%s/%s.%s%s" TB_SIDECAR_SUFFIX,
				 w->dir, w->bus, stamp, suffix);
		if (a >= PATH_MAX || b >= PATH_MAX) {
			*why = "the log file's path is too long";
			return -ENAMETOOLONG;
		}
		int log_fd = open(out[FILE_LOG].path, FILE_FLAGS, FILE_MODE);
		if (log_fd < 0) {
			if (errno == EEXIST)
				continue;
			*why = "cannot create the log file";
			return -errno;
		}
		int side_fd = open(out[FILE_SIDECAR].path, FILE_FLAGS, FILE_MODE);
		if (side_fd < 0) {
			int e = errno;
			close(log_fd);
			unlink(out[FILE_LOG].path);
			if (e == EEXIST)
				continue;
			*why = "cannot create the health sidecar";
			return -e;
		}
		out[FILE_LOG].fd = log_fd;
		out[FILE_SIDECAR].fd = side_fd;
		out[FILE_LOG].size = out[FILE_SIDECAR].size = 0;
		return 0;
	}
	*why = "every log file name for this start second is taken";
	return -EEXIST;
}

struct log_name {
	char name[NAME_MAX + 1];
	char stamp[STAMP_LEN + 1];
	unsigned long suffix; /* 0: none */
};

/* <bus>.<YYYYmmddTHHMMSSZ>[-N].hlog, nothing else. */
static bool parse_log_name(const char *name, const char *bus, struct log_name *out)
{
	static const char shape[STAMP_LEN + 1] = "ddddddddTddddddZ"; /* d: a digit */
	size_t bl = strlen(bus);
	if (strncmp(name, bus, bl) != 0 || name[bl] != '.')
		return false;
	const char *s = name + bl + 1;
	for (int i = 0; i < STAMP_LEN; i++) {
		char want = shape[i];
		if (want == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != want)
			return false;
	}
	const char *p = s + STAMP_LEN;
	unsigned long n = 0;
	if (*p == '-') {
		p++;
		if (*p < '1' || *p > '9')
			return false;
		for (; *p >= '0' && *p <= '9'; p++)
			n = n * 10 + (unsigned long)(*p - '0');
	}
	if (strcmp(p, LOG_SUFFIX) != 0 || strlen(name) > NAME_MAX)
		return false;
	snprintf(out->name, sizeof(out->name), "%s", name);
	memcpy(out->stamp, s, STAMP_LEN);
	out->stamp[STAMP_LEN] = '\0';
	out->suffix = n;
	return true;
}

/* Oldest first: by start second, then by suffix (-2 before -10). */
static int older_first(const void *a, const void *b)
{
	const struct log_name *x = a, *y = b;
	int c = strcmp(x->stamp, y->stamp);
	if (c)
		return c;
	return (x->suffix > y->suffix) - (x->suffix < y->suffix);
}

static int remove_log(int dfd, const char *name)
{
	char side[NAME_MAX + sizeof(TB_SIDECAR_SUFFIX)];
	size_t stem = strlen(name) - strlen(LOG_SUFFIX);
	snprintf(side, sizeof(side), "%.*s" TB_SIDECAR_SUFFIX, (int)stem, name);
	if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
		return -errno;
	if (unlinkat(dfd, side, 0) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

static int list_logs(DIR *d, const char *bus, struct log_name **out, size_t *count)
{
	size_t cap = 0, n = 0;
	struct log_name *v = NULL, one;
	struct dirent *e;
	errno = 0;
	while ((e = readdir(d))) {
		if (!parse_log_name(e->d_name, bus, &one))
			continue;
		if (tb_grow_n((void **)&v, &cap, n + 1, 16, sizeof(*v)) < 0) {
			free(v);
			return -ENOMEM;
		}
		v[n++] = one;
	}
	*out = v;
	*count = n;
	return 0;
}

int tb_writer_newest_log(const char *dir, const char *bus, char *path, size_t cap)
{
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	struct log_name *v = NULL;
	size_t n = 0;
	int rc = list_logs(d, bus, &v, &n);
	closedir(d);
	if (rc < 0)
		return rc;
	if (n == 0) {
		free(v);
		return -ENOENT;
	}
	qsort(v, n, sizeof(*v), older_first);
	rc = snprintf(path, cap, "%s/%s", dir, v[n - 1].name) < (int)cap ? 0 : -ENAMETOOLONG;
	free(v);
	return rc;
}

/* Keep the newest keep_files logs of this bus, the current one always. */
void wr_apply_retention(tb_writer *w)
{
	if (w->cfg.keep_files <= 0)
		return;
	DIR *d = opendir(w->dir);
	if (!d) {
		note_error(w, -errno, "cannot list the log directory to remove old logs");
		return;
	}
	struct log_name *v;
	size_t n;
	int rc = list_logs(d, w->bus, &v, &n);
	if (rc < 0) {
		note_error(w, rc, "cannot list the log directory to remove old logs");
		closedir(d);
		return;
	}
	qsort(v, n, sizeof(*v), older_first);
	const char *current = wr_base_name(w->files[FILE_LOG].path);
	size_t keep = (size_t)w->cfg.keep_files;
	size_t excess = n > keep ? n - keep : 0;
	for (size_t i = 0; i < n && excess > 0; i++) {
		if (strcmp(v[i].name, current) == 0)
			continue;
		rc = remove_log(dirfd(d), v[i].name);
		if (rc < 0)
			note_error(w, rc, "cannot remove an old log file");
		else
			w->stats.files_removed++;
		excess--;
	}
	free(v);
	closedir(d);
}

bool wr_rotation_due(const tb_writer *w, int64_t interval_start_ns)
{
	const struct wfile *log = &w->files[FILE_LOG];
	if (w->cfg.rotate_ns > 0 && interval_start_ns - w->file_start_ns >= w->cfg.rotate_ns)
		return true;
	/* a file holding nothing but its header is not rotated for size */
	return w->cfg.rotate_bytes > 0 && log->size >= w->cfg.rotate_bytes &&
	       log->size > w->header_len;
}
