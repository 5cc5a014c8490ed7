/* Files built into the binary with .incbin (the Makefile makes the embedding object depend on
 * them), so codemode needs no data files at run time. Defines `sym` and `sym_end`; paths are
 * relative to the directory the compiler runs in: the repository root. */
#ifndef CM_UTIL_EMBED_H
#define CM_UTIL_EMBED_H

#define CM_EMBED_FILE_(sym, file, trailer)                                                                   \
  __asm__(".section .rodata\n"                                                                               \
          ".global " #sym "\n"                                                                               \
          ".type " #sym ", @object\n"                                                                        \
          ".balign 16\n" #sym ":\n"                                                                          \
          ".incbin \"" file "\"\n" trailer ".global " #sym "_end\n" #sym "_end:\n"                           \
          ".previous\n")

/* The file's bytes, exactly. */
#define CM_EMBED_BYTES(sym, file) CM_EMBED_FILE_(sym, file, "")
/* The file's bytes and a NUL, so it can be handed to a string parser (sym_end is after the NUL). */
#define CM_EMBED_STRING(sym, file) CM_EMBED_FILE_(sym, file, ".byte 0\n")

#endif
