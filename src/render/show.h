/* show: how a command's result is shown, chosen by its options: one JSON document, or text
 * (colour, detail) after the line that says the facts are not this host's (a simulated host, a
 * recorded bundle). The command fills it; the renderers follow it. */
#pragma once
#include <jansson.h>
#include <stdbool.h>

struct show {
        bool json, color, verbose;
        void (*banner)(void *ctx);              /* text only: before the first line */
        void *banner_ctx;
        int (*print_json)(json_t *doc);         /* writes and takes doc: 0, or -1 */
};

/* s's banner, when text is shown. */
void show_banner(const struct show *s);
