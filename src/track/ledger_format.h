/* ledger_format.h: the on-disk format of an allocation ledger, written by the preload library
 * (preload/gvtrack.c) and read back by ghostvram (src/track/ledger_read.c). docs/track.md.
 *
 * One file per process, DIR/<pid>-<start>.gvl (<start>: the process's start time in clock
 * ticks since boot, field 22 of /proc/PID/stat, so a reused PID never shares a file). A
 * 128-byte header, then 128-byte records, each appended with one write() (O_APPEND) before the
 * intercepted call returns. Records are 128-byte aligned after a 128-byte header, so no record
 * crosses a page: a process killed at any instant leaves whole records and at most one torn
 * tail, which the reader ignores. Every header and record carries a checksum; a reader that
 * meets a bad record (a tail zero-filled by a crash of the machine, a short write) skips it
 * and re-synchronises. Integers are in the writer's byte order (the reader runs on the same
 * host); the header's byte-order mark rejects a file from another one.
 *
 * Header-only on purpose: the preload library includes it without linking ghostvram. */
#pragma once
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define GVL_MAGIC "GVLEDGR"             /* 8 bytes with its NUL */
#define GVL_VERSION 1u
#define GVL_BOM 0x01020304u
#define GVL_REC_SIZE 128u
#define GVL_FRAMES 8
#define GVL_SUFFIX ".gvl"
#define GVL_ENV_DIR "GHOSTVRAM_LEDGER_DIR"      /* where the preload writes (set by `track`) */
#define GVL_ENV_SESSION "GHOSTVRAM_TRACK_SESSION" /* `track`'s id, copied into each header */

struct gvl_header {
        char magic[8];                  /* GVL_MAGIC */
        uint32_t version;               /* GVL_VERSION */
        uint32_t rec_size;              /* GVL_REC_SIZE */
        uint32_t pid;
        uint32_t ppid;
        uint64_t start_ticks;           /* /proc/PID/stat field 22 */
        uint64_t created_ns;            /* CLOCK_REALTIME when the file was made */
        uint64_t session;               /* GHOSTVRAM_TRACK_SESSION, 0 when none */
        char comm[16];                  /* NUL-padded, hostile text */
        char exe[52];                   /* the tail of /proc/self/exe, NUL-padded, hostile text */
        uint32_t bom;                   /* GVL_BOM */
        uint32_t reserved;
        uint32_t check;                 /* gvl_check over the bytes before it */
};

enum gvl_kind {
        GVL_ALLOC = 1,                  /* addr = device pointer, size */
        GVL_FREE = 2,                   /* addr = device pointer */
        GVL_CREATE = 3,                 /* cuMemCreate: addr = the handle, size (physical memory) */
        GVL_RELEASE = 4,                /* cuMemRelease: addr = the handle */
        GVL_MAP = 5,                    /* cuMemMap: addr = va, size, aux = the handle */
        GVL_UNMAP = 6,                  /* cuMemUnmap: addr = va, size */
        GVL_MODULE = 7,                 /* a loaded object: addr = base, size = span, path */
        GVL_EXEC = 8,                   /* the process exec'd: everything before is gone */
        GVL_KIND_MAX = 8,
};

/* The entry point a record comes from. */
enum gvl_api {
        GVL_API_NONE = 0,
        GVL_API_MEM_ALLOC,              /* cuMemAlloc_v2 */
        GVL_API_MEM_ALLOC_PITCH,        /* cuMemAllocPitch_v2 */
        GVL_API_MEM_ALLOC_MANAGED,      /* cuMemAllocManaged */
        GVL_API_MEM_ALLOC_ASYNC,        /* cuMemAllocAsync(_ptsz) */
        GVL_API_MEM_ALLOC_POOL_ASYNC,   /* cuMemAllocFromPoolAsync(_ptsz) */
        GVL_API_MEM_FREE,               /* cuMemFree_v2 */
        GVL_API_MEM_FREE_ASYNC,         /* cuMemFreeAsync(_ptsz) */
        GVL_API_MEM_CREATE,
        GVL_API_MEM_RELEASE,
        GVL_API_MEM_MAP,
        GVL_API_MEM_UNMAP,
        GVL_API_MAX = GVL_API_MEM_UNMAP,
};

/* Flags of a record. */
#define GVL_F_PROCADDR 0x01u            /* the call came through a pointer from cuGetProcAddress
                                         * (or dlsym on a libcuda handle), not by symbol */

struct gvl_record {
        uint8_t kind;                   /* enum gvl_kind */
        uint8_t api;                    /* enum gvl_api */
        uint8_t flags;                  /* GVL_F_* */
        uint8_t nframes;                /* 0..GVL_FRAMES */
        int32_t device;                 /* CUDA ordinal of the current context, -1 unknown */
        uint64_t time_ns;               /* CLOCK_REALTIME */
        uint64_t addr;
        uint64_t size;
        uint64_t aux;
        union {
                struct {
                        uint8_t uuid[16];               /* the device's UUID (cuDeviceGetUuid) */
                        uint64_t frames[GVL_FRAMES];    /* return addresses, the caller first */
                } site;
                char path[80];                          /* GVL_MODULE: the object's path (tail) */
        } u;
        uint32_t tid;
        uint32_t check;                 /* gvl_check over the bytes before it */
};

static_assert(sizeof(struct gvl_header) == GVL_REC_SIZE, "header is one record long");
static_assert(sizeof(struct gvl_record) == GVL_REC_SIZE, "records are 128 bytes");
static_assert(offsetof(struct gvl_record, check) == GVL_REC_SIZE - 4, "check is last");
static_assert(offsetof(struct gvl_header, check) == GVL_REC_SIZE - 4, "check is last");

/* FNV-1a over 32-bit words of the first 124 bytes, then a final avalanche, never 0 (a record
 * of zeros — a hole left by a crash — never checks). Async-signal-safe, no allocation. */
static inline uint32_t gvl_check(const void *rec)
{
        const unsigned char *p = (const unsigned char *)rec;
        uint32_t h = 2166136261u;
        for (size_t i = 0; i + 4 <= GVL_REC_SIZE - 4; i += 4) {
                uint32_t w;
                memcpy(&w, p + i, 4);
                h = (h ^ w) * 16777619u;
        }
        h ^= h >> 16;
        h *= 0x7feb352du;
        h ^= h >> 15;
        return h ? h : 1;
}
