/* top_tty: `ghostvram top` on the terminal. The screen loop owns the terminal (ncurses),
 * answers keys every 100 ms (render/top_keys.h) and draws the collector's latest view with its
 * age (render/top_screen.h); the batch loop prints a plain frame for each new sample instead.
 * A hung driver call only ages the view; the keys keep answering. The terminal is restored on
 * every exit: q, SIGINT, SIGTERM, SIGHUP, SIGQUIT, and a crash. */
#pragma once
#include <stdbool.h>

#include "render/top_keys.h"

/* Handlers for the stop signals (SIGINT, SIGTERM, SIGHUP, SIGQUIT: the loops end) and
 * SIGPIPE ignored. */
void top_tty_signals(void);
/* Can this terminal be driven full-screen (cursor addressing)? */
bool top_tty_addressable(void);
/* Set the locale's character type; returns whether the terminal takes UTF-8 (top_tty.c). */
bool top_tty_charset(void);

/* The full screen until q, a stop signal or l->iterations samples. Returns 0, or -1 when the
 * terminal could not be started (or its grid sized). */
int top_tty_screen(struct top_live *l, struct top_state *s);
/* Plain frames on standard output, one a sample, until a stop signal or l->iterations frames. */
int top_tty_batch(struct top_live *l, struct top_state *s);
