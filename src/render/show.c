#include "render/show.h"

void show_banner(const struct show *s)
{
        if (!s->json && s->banner)
                s->banner(s->banner_ctx);
}
