#include <stdio.h>
#include "cli/cli.h"

int cmd_demo(int argc, char **argv)
{
        (void)argc; (void)argv;
        fprintf(stderr, "ghostvram demo: not built yet\n");
        return EXIT_USAGE;
}
