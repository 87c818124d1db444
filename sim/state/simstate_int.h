/* simstate_int: helpers shared by the files of sim/state, not part of its interface. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "simstate.h"

/* Largest state file we read (knobs, gpus, contexts): a corrupt or huge file is an error,
 * never an unbounded allocation. */
#define SIM_FILE_MAX ((size_t)1 << 20)

/* "<dir>/<name>" into out. Returns 0 or -ENAMETOOLONG. */
int sim_path(char *out, size_t outlen, const char *dir, const char *name);

/* open("<dir>/<name>", flags | O_CLOEXEC | O_NOCTTY). Returns the descriptor or a negative
 * errno. */
int sim_open(const char *dir, const char *name, int flags);

/* Read DIR/name (NUL-terminated, malloc'd). -ENOENT when missing. */
int sim_read(const char *dir, const char *name, char **ret, size_t *ret_len);

/* Replace DIR/name atomically. */
int sim_write(const char *dir, const char *name, const char *data, size_t len);

/* Take the writers' lock (flock on DIR/lock); returns the fd to pass to sim_unlock. */
int sim_lock(const char *dir);
void sim_unlock(int fd);

/* Next line of a NUL-terminated text: returns the line (NUL-terminated in place, '\r'
 * stripped) and advances *cursor, or NULL at the end. Comments and blanks are returned too. */
char *sim_next_line(char **cursor);

/* Value of " key=" in a line of space-separated key=value words, copied into out (up to the
 * next space, or to the end of the line when rest is true). Returns 0 or -ENOENT/-E2BIG. */
int sim_kv(const char *line, const char *key, bool rest, char *out, size_t outlen);
int sim_kv_u64(const char *line, const char *key, uint64_t *ret);
