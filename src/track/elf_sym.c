/* elf_sym: see elf_sym.h. The layouts are <elf.h>'s (the System V gABI). */
#include "track/elf_sym.h"

#include <elf.h>
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int read_at(int fd, void *buf, size_t len, uint64_t off)
{
        size_t done = 0;
        while (done < len) {
                ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return n < 0 ? -errno : -EBADMSG;
                done += (size_t)n;
        }
        return 0;
}

static int symbolise_fd(int fd, uint64_t file_size, uint64_t addr, char *name, size_t namelen, uint64_t *ret_off)
{
        Elf64_Ehdr eh;
        Elf64_Shdr *sh = NULL;
        Elf64_Sym *chunk = NULL;
        int r = read_at(fd, &eh, sizeof(eh), 0);
        if (r < 0)
                return r;
        bool native = (BYTE_ORDER == LITTLE_ENDIAN) == (eh.e_ident[EI_DATA] == ELFDATA2LSB);
        if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 || !native ||
            eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 || eh.e_shoff >= file_size ||
            (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr) > file_size - eh.e_shoff)
                return -EBADMSG;
        sh = calloc(eh.e_shnum, sizeof(*sh));
        if (!sh)
                return -ENOMEM;
        r = read_at(fd, sh, (size_t)eh.e_shnum * sizeof(*sh), eh.e_shoff);
        if (r < 0)
                goto out;
        const Elf64_Shdr *symtab = NULL;
        for (unsigned want = SHT_SYMTAB;; want = SHT_DYNSYM) {
                for (unsigned i = 0; i < eh.e_shnum && !symtab; i++)
                        if (sh[i].sh_type == want && sh[i].sh_entsize == sizeof(Elf64_Sym) && sh[i].sh_link < eh.e_shnum &&
                            sh[sh[i].sh_link].sh_type == SHT_STRTAB && sh[i].sh_offset < file_size &&
                            sh[i].sh_size <= file_size - sh[i].sh_offset)
                                symtab = &sh[i];
                if (symtab || want == SHT_DYNSYM)
                        break;
        }
        r = -ENOENT;
        if (!symtab)
                goto out;
        const Elf64_Shdr *strtab = &sh[symtab->sh_link];
        if (strtab->sh_offset >= file_size || strtab->sh_size > file_size - strtab->sh_offset) {
                r = -EBADMSG;
                goto out;
        }
        uint64_t n = symtab->sh_size / sizeof(Elf64_Sym);
        if (n > ELF_SYM_MAX_SYMBOLS)
                n = ELF_SYM_MAX_SYMBOLS;
        enum { CHUNK = 2048 };
        chunk = malloc(CHUNK * sizeof(*chunk));
        if (!chunk) {
                r = -ENOMEM;
                goto out;
        }
        bool found = false;
        Elf64_Sym best = { 0 };
        for (uint64_t i = 0; i < n; i += CHUNK) {
                size_t k = n - i < CHUNK ? (size_t)(n - i) : CHUNK;
                int e = read_at(fd, chunk, k * sizeof(*chunk), symtab->sh_offset + i * sizeof(*chunk));
                if (e < 0) {
                        r = e;
                        goto out;
                }
                for (size_t j = 0; j < k; j++) {
                        const Elf64_Sym *s = &chunk[j];
                        unsigned type = ELF64_ST_TYPE(s->st_info);
                        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s->st_shndx == SHN_UNDEF || s->st_size == 0)
                                continue;
                        if (addr < s->st_value || addr - s->st_value >= s->st_size)
                                continue;
                        /* a global name wins over a local alias of the same function */
                        if (!found || (ELF64_ST_BIND(best.st_info) == STB_LOCAL && ELF64_ST_BIND(s->st_info) != STB_LOCAL)) {
                                best = *s;
                                found = true;
                        }
                }
        }
        if (!found || best.st_name >= strtab->sh_size || namelen == 0)
                goto out;
        size_t len = namelen - 1;
        if (len > strtab->sh_size - best.st_name)
                len = (size_t)(strtab->sh_size - best.st_name);
        r = read_at(fd, name, len, strtab->sh_offset + best.st_name);
        if (r < 0)
                goto out;
        name[len] = '\0';
        name[strnlen(name, len)] = '\0';
        if (!name[0]) {
                r = -ENOENT;
                goto out;
        }
        *ret_off = addr - best.st_value;
        r = 0;
out:
        free(chunk);
        free(sh);
        return r;
}

int elf_symbolise(const char *path, uint64_t addr, char *name, size_t namelen, uint64_t *ret_off)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        if (fd < 0)
                return -errno;
        struct stat st;
        int r;
        if (fstat(fd, &st) < 0)
                r = -errno;
        else if (!S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr))
                r = -EBADMSG;
        else
                r = symbolise_fd(fd, (uint64_t)st.st_size, addr, name, namelen, ret_off);
        close(fd);
        return r;
}
