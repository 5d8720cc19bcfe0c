/* term.c - the terminal a verb redraws in place (see term.h).
 *
 * Raw mode here is non-canonical input without echo, one byte at a time;
 * ISIG stays on, so Ctrl-C and Ctrl-Z still send their signals and come
 * back through the handlers. Output goes straight to the descriptor with
 * write(2), each frame in one call, bypassing stdio's buffer.
 */
#include "term.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "tailbus/grow.h"

/* Terminal size when the terminal cannot tell. */
#define DEFAULT_ROWS 24
#define DEFAULT_COLS 80

/* ANSI (ECMA-48) sequences; the only ones written. */
#define ANSI_HOME "\033[H"
#define ANSI_CLEAR_SCREEN "\033[2J"
#define ANSI_CLEAR_EOL "\033[K"
#define ANSI_CLEAR_BELOW "\033[J"
#define ANSI_HIDE_CURSOR "\033[?25l"
#define ANSI_SHOW_CURSOR "\033[?25h"

static volatile sig_atomic_t stop_requested, resized, suspend_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void on_resize(int sig)
{
	(void)sig;
	resized = 1;
}

static void on_suspend(int sig)
{
	(void)sig;
	suspend_requested = 1;
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static void term_size(struct term *t)
{
	struct winsize ws;
	bool ok = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col;
	t->rows = ok ? ws.ws_row : DEFAULT_ROWS;
	t->cols = ok ? ws.ws_col : DEFAULT_COLS;
}

/* Hide the cursor, clear once, read keys without echo (signals stay on). */
static void term_enter(struct term *t)
{
	if (!t->in_place)
		return;
	if (t->keys) {
		struct termios raw = t->saved;
		raw.c_lflag &= (tcflag_t) ~(ICANON | ECHO);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	}
	term_size(t);
	const char *enter = ANSI_HIDE_CURSOR ANSI_HOME ANSI_CLEAR_SCREEN;
	write_all(STDOUT_FILENO, enter, strlen(enter));
	t->active = true;
}

void term_close(struct term *t)
{
	if (!t->active)
		return;
	if (t->keys)
		tcsetattr(STDIN_FILENO, TCSANOW, &t->saved);
	write_all(STDOUT_FILENO, ANSI_SHOW_CURSOR, strlen(ANSI_SHOW_CURSOR));
	t->active = false;
}

void term_open(struct term *t, bool redraw)
{
	memset(t, 0, sizeof(*t));
	struct sigaction sa = {.sa_handler = on_stop}; /* no SA_RESTART: poll wakes up */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	t->in_place = redraw && isatty(STDOUT_FILENO);
	if (!t->in_place)
		return;
	sa.sa_handler = on_resize;
	sigaction(SIGWINCH, &sa, NULL);
	sa.sa_handler = on_suspend;
	sigaction(SIGTSTP, &sa, NULL);
	t->keys = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &t->saved) == 0;
	term_enter(t);
}

bool term_stop_requested(void)
{
	return stop_requested;
}

/* Ctrl-Z: give the terminal back as it was, stop, and take it again on fg. */
static void term_suspend(struct term *t)
{
	term_close(t);
	kill(getpid(), SIGSTOP);
	term_enter(t);
}

enum term_event term_wait(struct term *t, int timeout_ms)
{
	struct pollfd in = {.fd = STDIN_FILENO, .events = POLLIN};
	int n = poll(&in, t->keys ? 1 : 0, timeout_ms);
	if (n > 0 && (in.revents & POLLIN)) {
		char c;
		ssize_t r = read(STDIN_FILENO, &c, 1);
		if (r == 1 && (c == 'q' || c == 'Q'))
			return TERM_QUIT;
		if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN))
			t->keys = false; /* end of input or a dead terminal: poll would spin */
	} else if (n > 0) {
		t->keys = false; /* the terminal went away: stop watching it */
	}
	if (stop_requested)
		return TERM_QUIT;
	if (suspend_requested) {
		suspend_requested = 0;
		term_suspend(t);
		return TERM_REDRAW;
	}
	if (resized) {
		resized = 0;
		term_size(t);
		return TERM_REDRAW;
	}
	return TERM_NOTHING;
}

static void append(char **buf, size_t *len, size_t *cap, const char *p, size_t n)
{
	if (tb_grow((void **)buf, cap, *len + n, 4096) < 0)
		return;
	memcpy(*buf + *len, p, n);
	*len += n;
}

void term_draw(struct term *t, const char *text, size_t len)
{
	char *out = NULL, more[80];
	size_t n = 0, cap = 0, lines = 0;
	size_t room = t->rows > 1 ? (size_t)t->rows - 1 : 1;
	/* the last column is left empty: clear-to-end-of-line there would erase
	 * the character written into it (the cursor stays on it, wrap pending) */
	size_t width = t->cols > 1 ? (size_t)t->cols - 1 : 1;
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	size_t keep = lines > room ? room - 1 : lines;
	append(&out, &n, &cap, ANSI_HOME, strlen(ANSI_HOME));
	const char *p = text;
	for (size_t i = 0; i < keep; i++) {
		const char *nl = memchr(p, '\n', (size_t)(text + len - p));
		size_t line = (size_t)(nl - p);
		append(&out, &n, &cap, p, line < width ? line : width);
		append(&out, &n, &cap, ANSI_CLEAR_EOL "\n", strlen(ANSI_CLEAR_EOL "\n"));
		p = nl + 1;
	}
	if (keep < lines) {
		int m = snprintf(more, sizeof(more), "(%zu more lines: enlarge the terminal)",
				 lines - keep);
		append(&out, &n, &cap, more, (size_t)m < width ? (size_t)m : width);
		append(&out, &n, &cap, ANSI_CLEAR_EOL "\n", strlen(ANSI_CLEAR_EOL "\n"));
	}
	append(&out, &n, &cap, ANSI_CLEAR_BELOW, strlen(ANSI_CLEAR_BELOW));
	if (out)
		write_all(STDOUT_FILENO, out, n);
	free(out);
}
