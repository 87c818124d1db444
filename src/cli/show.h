/* cli_show: how a command shows its result (render/show.h), from its common options. */
#pragma once
#include "cli/cli.h"
#include "render/show.h"

/* JSON with --json (cli_print_json), else text with colour on a terminal, detail with -v, after
 * cli_sim_banner. c must outlive the result. */
struct show cli_show(const struct cli_common *c);
