/* term.h - the terminal of a verb that redraws a screen in place (`top`).
 *
 * term_open takes the terminal: the stop signals (SIGINT, SIGTERM, SIGHUP,
 * SIGQUIT) are caught so that the verb can put the terminal back before it
 * exits, and when stdout is a terminal and the verb asks for it, the screen
 * is redrawn in place: the cursor hidden, the screen cleared once, stdin
 * (when a terminal) read key by key without echo, Ctrl-Z and window size
 * changes caught. term_close undoes all of it; so does Ctrl-Z until `fg`.
 *
 * Invariants:
 *  - Only ANSI (ECMA-48) sequences are written: cursor home, clear screen,
 *    clear to end of line, clear below, hide and show the cursor.
 *  - A frame is one write: home, each line cut to the width and ended by
 *    clear-to-end-of-line, then clear below, so nothing flickers; lines past
 *    the screen's height are left out, said on the last line.
 *  - Signal handlers only set flags; they are read by term_wait and
 *    term_stop_requested. The handlers are installed without SA_RESTART, so
 *    a signal ends term_wait's sleep at once.
 */
#ifndef TAILBUS_TOOLS_TERM_H
#define TAILBUS_TOOLS_TERM_H

#include <stdbool.h>
#include <stddef.h>
#include <termios.h>

struct term {
	bool in_place; /* stdout is a terminal: redraw the screen where it is */
	bool keys;     /* stdin is a terminal put in non-canonical mode: 'q' quits */
	bool active;   /* cursor hidden / modes set, to undo on the way out */
	struct termios saved;
	int rows, cols;
};

/* What term_wait saw. */
enum term_event {
	TERM_NOTHING, /* the time passed */
	TERM_QUIT,    /* 'q', or a stop signal */
	TERM_REDRAW,  /* the size changed, or the verb came back from Ctrl-Z */
};

/* Catch the stop signals and, when `redraw` and stdout is a terminal, take
 * the screen (t->in_place). A zeroed term that was never opened is a valid
 * term that draws nothing and waits by sleeping. */
void term_open(struct term *t, bool redraw);
/* Give the terminal back as it was found (a no-op when not taken). */
void term_close(struct term *t);
/* A stop signal came. */
bool term_stop_requested(void);
/* Sleep up to `timeout_ms`, or until a key or a signal; handles Ctrl-Z
 * (gives the terminal back, stops, takes it again) and a size change. */
enum term_event term_wait(struct term *t, int timeout_ms);
/* Overwrite the previous frame with `text` (lines ended by '\n'). */
void term_draw(struct term *t, const char *text, size_t len);

#endif
