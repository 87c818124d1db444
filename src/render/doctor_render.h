/* doctor_render: `ghostvram doctor`'s output (docs/doctor.md). */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "model/doctor.h"
#include "render/show.h"
#include "run/doctor_run.h"

/* One line a finding (level, GPU or host, code, summary); below it, for a finding that is not
 * ok (or every one when verbose), its evidence, next step and source. */
void doctor_text(FILE *out, const struct doctor_finding *v, size_t n, bool color, bool verbose);
/* --explain: how to prevent ghosts, and the table of driver releases with their sources. */
void doctor_explain_text(FILE *out);
/* { schema_version, command, simulated, driver_version, exit_status, findings } and with
 * explain the prevention and known issues; NULL when out of memory. */
json_t *doctor_json(const struct doctor_check *d, bool simulated, bool explain);

/* doctor's answer as s says: JSON (simulated: the host is; explain: with the prevention and the
 * table of driver releases), or the findings as text and, with explain, the same after them. */
void doctor_show(const struct show *s, const struct doctor_check *d, bool simulated, bool explain);
