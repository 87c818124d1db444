/* The exit statuses every command shares (scan documents its own 1 and 3); the use cases in run/
 * return them too, so a command hands them on as they are. */
#pragma once

enum {
        EXIT_OK = 0,
        EXIT_FINDING = 1,
        EXIT_USAGE = 2,
        EXIT_INCOMPLETE = 3,
};
