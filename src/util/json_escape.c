/* JSON string escaping for text writers (util/json_escape.h). */
#include "util/json_escape.h"

void json_put_escaped(FILE *f, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else if (*p == '\n')
      fputs("\\n", f);
    else if (*p == '\t')
      fputs("\\t", f);
    else if (*p < 0x20 || *p == 0x7f)
      fprintf(f, "\\u%04x", *p);
    else
      fputc(*p, f);
  }
}

void json_put_string(FILE *f, const char *s) {
  fputc('"', f);
  json_put_escaped(f, s);
  fputc('"', f);
}
