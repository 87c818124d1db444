/* elf_sym: the function that contains an address of an ELF object, read from the object's own
 * symbol table when a report is made (ledgers keep only object+offset: symbolised only when
 * reported). */
#pragma once
#include <stddef.h>
#include <stdint.h>

#define ELF_SYM_MAX_SYMBOLS (1u << 20)  /* symbols looked at per lookup */

/* The function of the ELF64 object at path that covers file address addr (an st_value-space
 * address: a return address minus the object's load bias): its name into name (truncated to
 * namelen) and addr's offset into it. Only sized function symbols count (.symtab, else
 * .dynsym). The file is hostile input: regular files only, every offset and size checked,
 * reads bounded. Returns 0, -ENOENT (no function covers addr), -EBADMSG (not an ELF64 object
 * of this byte order) or a negative errno. */
int elf_symbolise(const char *path, uint64_t addr, char *name, size_t namelen, uint64_t *ret_off);
