#include <stdio.h>

#include "cli/show.h"

static void banner(void *ctx)
{
        cli_sim_banner(stdout, ctx);
}

struct show cli_show(const struct cli_common *c)
{
        return (struct show){ .json = c->json, .color = !c->json && cli_use_color(stdout), .verbose = c->verbose,
                              .banner = banner, .banner_ctx = (void *)c, .print_json = cli_print_json };
}
