/* stopwait: how the long-running commands (watch, serve, xid --follow) stop. SIGINT and SIGTERM
 * are blocked in the thread that calls stopwait_block and the threads it starts; stopwait_ms
 * then sleeps until a deadline or one of them, so the current sample finishes and the command
 * exits 0. (util/stopsig is the other way: a handler that notes the signal, for commands that
 * act between steps.) */
#pragma once
#include <stdbool.h>
#include <stdint.h>

void stopwait_block(void);
/* Sleep ms (or forever with ms == UINT64_MAX); false when SIGINT/SIGTERM arrived (it stays
 * remembered: later calls return false at once). */
bool stopwait_ms(void *unused, uint64_t ms);
/* Has a stop signal arrived? */
bool stopwait_requested(void);
