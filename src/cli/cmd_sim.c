#include <stdio.h>
#include "cli/cli.h"

int cmd_sim(int argc, char **argv)
{
        (void)argc; (void)argv;
        fprintf(stderr, "ghostvram sim: not built yet\n");
        return EXIT_USAGE;
}
